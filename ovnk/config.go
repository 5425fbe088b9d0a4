package ovnk

import (
	"flag"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// DefaultMTU is OVN-Kubernetes' default overlay MTU (--mtu).
const DefaultMTU = 1400

// Flag names of ClusterConfig; messages name them so a user knows which
// setting a range comes from. They are OVN-Kubernetes' own settings.
const (
	FlagClusterSubnets                  = "cluster-subnets"
	FlagServiceCIDRs                    = "service-cidrs"
	FlagJoinSubnets                     = "join-subnets"
	FlagMasqueradeSubnets               = "masquerade-subnets"
	FlagTransitSubnets                  = "transit-subnets"
	FlagNodeSubnets                     = "node-subnets"
	FlagUDNJoinSubnets                  = "udn-join-subnets"
	FlagMTU                             = "mtu"
	FlagPreconfiguredUDNAddressesEnable = "preconfigured-udn-addresses-enable"
	FlagUDNAllowedDefaultServices       = "udn-allowed-default-services"
)

// ClusterConfig holds the facts of the OVN-Kubernetes cluster udnkit serves:
// its internal ranges and feature knobs. It is parsed once, from flags, in
// the composition root (cmd/udnkit/app) and handed to every component.
type ClusterConfig struct {
	// ClusterSubnets are the cluster default network's pod subnets.
	ClusterSubnets []netip.Prefix
	// ServiceCIDRs are the service ranges: no network may overlap them, and
	// Primary pods route them via their gateway.
	ServiceCIDRs []netip.Prefix
	// JoinSubnets are the default network's join subnets.
	JoinSubnets []netip.Prefix
	// MasqueradeSubnets are the host masquerade subnets.
	MasqueradeSubnets []netip.Prefix
	// TransitSubnets are the interconnect transit subnets; Primary Layer2
	// networks start their transit subnet search there (OKEP-5094 option 4).
	TransitSubnets []netip.Prefix
	// NodeSubnets are the networks the nodes' own addresses live in.
	NodeSubnets []netip.Prefix
	// UDNJoinSubnets are the join subnets of Primary networks that set none
	// (upstream: UserDefinedPrimaryNetworkJoinSubnetV4/V6).
	UDNJoinSubnets []netip.Prefix
	// MTU is the cluster's overlay MTU (OVN-Kubernetes' --mtu); a Localnet
	// network without mtu gets MTU+100.
	MTU int32
	// PreconfiguredUDNAddresses is preconfigured-udn-addresses-enable
	// (OKEP-5233): requested pod addresses, the NetConf's reservedSubnets,
	// infrastructureSubnets and defaultGatewayIPs, the default NAD stub.
	PreconfiguredUDNAddresses bool
	// UDNAllowedDefaultServices are the default network's services that
	// Primary user-defined networks reach (upstream's
	// --udn-allowed-default-services): each ClusterIP of each one that
	// exists is routed to the network's management port.
	UDNAllowedDefaultServices []types.NamespacedName
}

// DefaultClusterConfig returns OVN-Kubernetes' defaults: its Helm chart's
// cluster subnet 10.244.0.0/16 and service CIDR 10.96.0.0/16, and its
// built-in join (100.64.0.0/16, fd98::/64), masquerade (169.254.0.0/17,
// fd69::/112), transit (100.88.0.0/16, fd97::/64) and UDN join
// (100.65.0.0/16, fd99::/64) subnets; no node subnets; OKEP-5233 off; the
// API and DNS services (default/kubernetes, kube-system/kube-dns) reachable
// from Primary user-defined networks.
func DefaultClusterConfig() ClusterConfig {
	return ClusterConfig{
		ClusterSubnets:    mustPrefixes("10.244.0.0/16"),
		ServiceCIDRs:      mustPrefixes("10.96.0.0/16"),
		JoinSubnets:       mustPrefixes("100.64.0.0/16", "fd98::/64"),
		MasqueradeSubnets: mustPrefixes("169.254.0.0/17", "fd69::/112"),
		TransitSubnets:    []netip.Prefix{DefaultTransitSubnetV4, DefaultTransitSubnetV6},
		UDNJoinSubnets:    []netip.Prefix{DefaultUDNJoinSubnetV4, DefaultUDNJoinSubnetV6},
		MTU:               DefaultMTU,
		UDNAllowedDefaultServices: []types.NamespacedName{
			{Namespace: "default", Name: "kubernetes"}, DNSService},
	}
}

// DNSService is the cluster's DNS service, whose ClusterIPs a VM's DHCP
// options name as its DNS servers (upstream's --dns-service-namespace and
// --dns-service-name defaults).
var DNSService = types.NamespacedName{Namespace: "kube-system", Name: "kube-dns"}

// Default join subnets of Primary user-defined networks.
var (
	DefaultUDNJoinSubnetV4 = netip.MustParsePrefix("100.65.0.0/16")
	DefaultUDNJoinSubnetV6 = netip.MustParsePrefix("fd99::/64")
)

// BindFlags registers one flag per field, each defaulting to the value in c.
// List flags take comma-separated CIDRs; an empty value clears the list.
func (c *ClusterConfig) BindFlags(fs *flag.FlagSet) {
	fs.Var((*prefixList)(&c.ClusterSubnets), FlagClusterSubnets, "cluster default network subnets (comma-separated CIDRs)")
	fs.Var((*prefixList)(&c.ServiceCIDRs), FlagServiceCIDRs, "service CIDRs (comma-separated); Primary pods route them via their gateway")
	fs.Var((*prefixList)(&c.JoinSubnets), FlagJoinSubnets, "default network join subnets (comma-separated CIDRs)")
	fs.Var((*prefixList)(&c.MasqueradeSubnets), FlagMasqueradeSubnets, "masquerade subnets (comma-separated CIDRs)")
	fs.Var((*prefixList)(&c.TransitSubnets), FlagTransitSubnets, "interconnect transit subnets, one per IP family; Primary Layer2 networks start their transit subnet search there")
	fs.Var((*prefixList)(&c.NodeSubnets), FlagNodeSubnets, "networks of the nodes' own addresses (comma-separated CIDRs)")
	fs.Var((*prefixList)(&c.UDNJoinSubnets), FlagUDNJoinSubnets, "join subnets of Primary networks that set none, one per IP family")
	fs.Func(FlagMTU, fmt.Sprintf("the cluster's overlay MTU; Localnet networks without mtu get it plus 100 (default %d)", c.MTU), func(v string) error {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 576 || n > 65535 {
			return fmt.Errorf("%q is not an MTU between 576 and 65535", v)
		}
		c.MTU = int32(n)
		return nil
	})
	fs.BoolVar(&c.PreconfiguredUDNAddresses, FlagPreconfiguredUDNAddressesEnable, c.PreconfiguredUDNAddresses,
		"OKEP-5233 predefined addresses: requested IPs/MACs in v1.multus-cni.io/default-network, the NetConf's reservedSubnets, infrastructureSubnets and defaultGatewayIPs, the ovn-kubernetes/default NAD")
	fs.Var((*serviceList)(&c.UDNAllowedDefaultServices), FlagUDNAllowedDefaultServices,
		"default network services Primary user-defined networks reach, as comma-separated namespace/name: their ClusterIPs are routed to each network's management port")
}

// Validate checks what the flags cannot: one transit and one UDN join subnet
// per IP family.
func (c ClusterConfig) Validate() error {
	for flagName, ps := range map[string][]netip.Prefix{FlagTransitSubnets: c.TransitSubnets, FlagUDNJoinSubnets: c.UDNJoinSubnets} {
		seen := map[bool]bool{}
		for _, p := range ps {
			if seen[p.Addr().Is4()] {
				return fmt.Errorf("--%s: at most one CIDR per IP family, got %s", flagName, (*prefixList)(&ps).String())
			}
			seen[p.Addr().Is4()] = true
		}
	}
	return nil
}

// IPModes are the cluster's IP families, as upstream's config.IPv4Mode and
// IPv6Mode: those of the cluster subnets (upstream refuses service CIDRs of
// other families), or of the service CIDRs when no cluster subnet is set.
func (c ClusterConfig) IPModes() (v4, v6 bool) {
	subnets := c.ClusterSubnets
	if len(subnets) == 0 {
		subnets = c.ServiceCIDRs
	}
	for _, p := range subnets {
		v4, v6 = v4 || p.Addr().Is4(), v6 || p.Addr().Is6()
	}
	return v4, v6
}

// prefixList is a flag.Value of comma-separated CIDRs, stored masked.
type prefixList []netip.Prefix

func (l *prefixList) String() string {
	if l == nil {
		return ""
	}
	return JoinPrefixes(*l)
}

func (l *prefixList) Set(v string) error {
	out, err := parsePrefixes(v)
	if err != nil {
		return err
	}
	for _, p := range out {
		if p.Masked() != p {
			return fmt.Errorf("%s has host bits set; use %s", p, p.Masked())
		}
	}
	*l = out
	return nil
}

// serviceList is a flag.Value of comma-separated namespace/name service
// keys, in upstream's format (parseServicesNamespacedNames): blanks around
// an entry are ignored, the namespace is required, and repeats are kept once.
type serviceList []types.NamespacedName

func (l *serviceList) String() string {
	if l == nil {
		return ""
	}
	keys := make([]string, len(*l))
	for i, s := range *l {
		keys[i] = s.String()
	}
	return strings.Join(keys, ",")
}

func (l *serviceList) Set(v string) error {
	out, err := ParseServiceKeys(v)
	if err != nil {
		return err
	}
	*l = out
	return nil
}

// ParseServiceKeys reads comma-separated namespace/name service keys. Each
// entry needs a namespace that is a DNS-1123 label and a name that is a
// DNS-1123 subdomain, as upstream's --udn-allowed-default-services requires;
// an empty value or entry is refused, as upstream refuses it.
func ParseServiceKeys(v string) ([]types.NamespacedName, error) {
	var out []types.NamespacedName
	for _, entry := range strings.Split(v, ",") {
		entry = strings.TrimSpace(entry)
		ns, name, ok := strings.Cut(entry, "/")
		switch {
		case !ok || ns == "":
			return nil, fmt.Errorf("service %q: want namespace/name", entry)
		case strings.Contains(name, "/"):
			return nil, fmt.Errorf("service %q: want namespace/name, got more than one /", entry)
		}
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return nil, fmt.Errorf("service %q: namespace %q: %s", entry, ns, strings.Join(errs, "; "))
		}
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return nil, fmt.Errorf("service %q: name %q: %s", entry, name, strings.Join(errs, "; "))
		}
		key := types.NamespacedName{Namespace: ns, Name: name}
		if !slices.Contains(out, key) {
			out = append(out, key)
		}
	}
	return out, nil
}

func mustPrefixes(cidrs ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(cidrs))
	for i, c := range cidrs {
		out[i] = netip.MustParsePrefix(c)
	}
	return out
}
