package main

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/ovnk"
)

// flagService names plan's flag for a UDN-enabled service as it exists in
// the cluster; messages name it.
const flagService = "service"

// serviceFlag is plan's repeatable --service NS/NAME=CLUSTERIP[,CLUSTERIP]:
// the ClusterIPs of one default-network service, as the dataplane reads them
// from the cluster (spec.clusterIPs: one or two, at most one per family).
type serviceFlag struct {
	keys []types.NamespacedName
	ips  map[types.NamespacedName][]netip.Addr
	// owner holds which service each ClusterIP belongs to, so that two
	// services with one address are refused here rather than in the plan.
	owner map[netip.Addr]types.NamespacedName
}

func (f *serviceFlag) String() string {
	if f == nil {
		return ""
	}
	var out []string
	for _, k := range f.keys {
		ips := make([]string, len(f.ips[k]))
		for i, ip := range f.ips[k] {
			ips[i] = ip.String()
		}
		out = append(out, k.String()+"="+strings.Join(ips, ","))
	}
	return strings.Join(out, " ")
}

// Set reads one NS/NAME=CLUSTERIP[,CLUSTERIP]; the flag package prefixes an
// error with the flag's name and value.
func (f *serviceFlag) Set(v string) error {
	key, list, ok := strings.Cut(v, "=")
	if !ok || list == "" {
		return fmt.Errorf("want namespace/name=CLUSTERIP[,CLUSTERIP]")
	}
	keys, err := ovnk.ParseServiceKeys(key)
	if err != nil {
		return err
	}
	if len(keys) != 1 {
		return fmt.Errorf("one service per --%s, got %d before the =", flagService, len(keys))
	}
	k := keys[0]
	if _, dup := f.ips[k]; dup {
		return fmt.Errorf("service %s is given twice", k)
	}
	var ips []netip.Addr
	families := map[bool]bool{}
	for _, s := range strings.Split(list, ",") {
		ip, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("service %s: ClusterIP %q is not an IP address", k, s)
		}
		ip = ip.Unmap()
		if families[ip.Is6()] {
			return fmt.Errorf("service %s: at most one ClusterIP per IP family, as a Service's spec.clusterIPs", k)
		}
		families[ip.Is6()] = true
		if other, dup := f.owner[ip]; dup {
			return fmt.Errorf("service %s: ClusterIP %s is also service %s's", k, ip, other)
		}
		ips = append(ips, ip)
	}
	if f.ips == nil {
		f.ips, f.owner = map[types.NamespacedName][]netip.Addr{}, map[netip.Addr]types.NamespacedName{}
	}
	for _, ip := range ips {
		f.owner[ip] = k
	}
	f.keys = append(f.keys, k)
	f.ips[k] = ips
	return nil
}

// enabled returns the UDN-enabled services as the dataplane would find them
// in a cluster where exactly the given ones exist: in the order of allowed
// (--udn-allowed-default-services), a given service that is not allowed
// refused, an allowed one not given left out as a missing service is. It
// also returns the allowed services that were not given. allowedFlag is
// the --udn-allowed-default-services value the refusal shows.
func (f *serviceFlag) enabled(allowed []types.NamespacedName, allowedFlag string) ([]topology.UDNEnabledService, []string, error) {
	for _, k := range f.keys {
		if !slices.Contains(allowed, k) {
			return nil, nil, fmt.Errorf("--%s %s: not a UDN-enabled service (--%s=%s), so the dataplane routes none of its ClusterIPs",
				flagService, k, ovnk.FlagUDNAllowedDefaultServices, allowedFlag)
		}
	}
	var out []topology.UDNEnabledService
	var missing []string
	for _, k := range allowed {
		ips, ok := f.ips[k]
		if !ok {
			missing = append(missing, k.String())
			continue
		}
		out = append(out, topology.UDNEnabledService{Key: k.String(), ClusterIPs: ips})
	}
	return out, missing, nil
}
