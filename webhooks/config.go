// Package webhooks holds udnkit's admission webhooks: the validating webhooks
// of UserDefinedNetwork and ClusterUserDefinedNetwork (overlap with the
// cluster's internal ranges, one primary network per namespace, the
// namespace label, Layer3 append-only), and the pod webhooks for predefined
// addresses (OKEP-5233). Everything a single object can check is CEL in the
// CRDs; this package does what needs configuration, other objects or a
// warning. The pure checks are exported so `udnctl validate` can run them
// offline.
package webhooks

import (
	"flag"
	"net/netip"
	"strings"

	"github.com/udnkit/udnkit/ovnk"
)

// Config is the cluster configuration the webhooks check against: the
// cluster-internal ranges of OVN-Kubernetes (its flags and Helm values) and
// the feature flags. DefaultConfig holds OVN-Kubernetes' own defaults.
type Config struct {
	// ClusterSubnets are the cluster default network's pod subnets.
	ClusterSubnets []netip.Prefix
	// ServiceCIDRs are the cluster's service ranges.
	ServiceCIDRs []netip.Prefix
	// JoinSubnets are the default network's join subnets.
	JoinSubnets []netip.Prefix
	// MasqueradeSubnets are the host masquerade subnets.
	MasqueradeSubnets []netip.Prefix
	// TransitSubnets are the interconnect transit switch subnets; a Primary
	// Layer2 network that overlaps them only gets a warning, because the
	// reconciler picks another transit subnet for it (OKEP-5094 option 4).
	TransitSubnets []netip.Prefix
	// NodeSubnets are the networks the nodes' own addresses live in.
	NodeSubnets []netip.Prefix
	// PreconfiguredUDNAddressesEnable turns the pod webhooks on (OKEP-5233
	// feature knob preconfigured-udn-addresses-enable); off, they admit
	// every pod unchanged.
	PreconfiguredUDNAddressesEnable bool
}

// Flag names, also used in messages so a user knows which setting a range
// comes from.
const (
	FlagClusterSubnets                  = "cluster-subnets"
	FlagServiceCIDRs                    = "service-cidrs"
	FlagJoinSubnets                     = "join-subnets"
	FlagMasqueradeSubnets               = "masquerade-subnets"
	FlagTransitSubnets                  = "transit-subnets"
	FlagNodeSubnets                     = "node-subnets"
	FlagPreconfiguredUDNAddressesEnable = "preconfigured-udn-addresses-enable"
)

// DefaultConfig returns the defaults of OVN-Kubernetes' Helm chart: cluster
// subnet 10.244.0.0/16 (podNetwork), service CIDR 10.96.0.0/16
// (serviceNetwork), and OVN-Kubernetes' built-in join 100.64.0.0/16 and
// fd98::/64, masquerade 169.254.0.0/17 and fd69::/112, transit 100.88.0.0/16
// and fd97::/64, no node subnets, and the predefined-address feature off.
func DefaultConfig() Config {
	return Config{
		ClusterSubnets:    mustPrefixes("10.244.0.0/16"),
		ServiceCIDRs:      mustPrefixes("10.96.0.0/16"),
		JoinSubnets:       mustPrefixes("100.64.0.0/16", "fd98::/64"),
		MasqueradeSubnets: mustPrefixes("169.254.0.0/17", "fd69::/112"),
		TransitSubnets:    mustPrefixes("100.88.0.0/16", "fd97::/64"),
	}
}

// BindFlags registers one flag per field, each defaulting to the value
// already in c. List flags take comma-separated CIDRs; an empty value clears
// the list.
func (c *Config) BindFlags(fs *flag.FlagSet) {
	fs.Var((*prefixList)(&c.ClusterSubnets), FlagClusterSubnets, "cluster default network subnets (comma-separated CIDRs)")
	fs.Var((*prefixList)(&c.ServiceCIDRs), FlagServiceCIDRs, "service CIDRs (comma-separated)")
	fs.Var((*prefixList)(&c.JoinSubnets), FlagJoinSubnets, "default network join subnets (comma-separated CIDRs)")
	fs.Var((*prefixList)(&c.MasqueradeSubnets), FlagMasqueradeSubnets, "masquerade subnets (comma-separated CIDRs)")
	fs.Var((*prefixList)(&c.TransitSubnets), FlagTransitSubnets, "interconnect transit subnets (comma-separated CIDRs)")
	fs.Var((*prefixList)(&c.NodeSubnets), FlagNodeSubnets, "networks of the nodes' own addresses (comma-separated CIDRs)")
	fs.BoolVar(&c.PreconfiguredUDNAddressesEnable, FlagPreconfiguredUDNAddressesEnable, c.PreconfiguredUDNAddressesEnable,
		"validate predefined pod addresses (v1.multus-cni.io/default-network) in namespaces with a Primary Layer2 network")
}

// internalRange is one cluster-internal range with a description for messages.
type internalRange struct {
	prefix netip.Prefix
	what   string
	flag   string
}

// internalRanges are the ranges no user network may overlap (transit apart).
func (c Config) internalRanges() []internalRange {
	var out []internalRange
	add := func(ps []netip.Prefix, what, flag string) {
		for _, p := range ps {
			out = append(out, internalRange{prefix: p.Masked(), what: what, flag: flag})
		}
	}
	add(c.ClusterSubnets, "cluster default network subnet", FlagClusterSubnets)
	add(c.ServiceCIDRs, "service CIDR", FlagServiceCIDRs)
	add(c.JoinSubnets, "default join subnet", FlagJoinSubnets)
	add(c.MasqueradeSubnets, "masquerade subnet", FlagMasqueradeSubnets)
	add(c.NodeSubnets, "node subnet", FlagNodeSubnets)
	return out
}

func (c Config) transitRanges() []internalRange {
	out := make([]internalRange, 0, len(c.TransitSubnets))
	for _, p := range c.TransitSubnets {
		out = append(out, internalRange{prefix: p.Masked(), what: "transit subnet", flag: FlagTransitSubnets})
	}
	return out
}

// prefixList is a flag.Value of comma-separated CIDRs.
type prefixList []netip.Prefix

func (l *prefixList) String() string {
	if l == nil {
		return ""
	}
	s := make([]string, len(*l))
	for i, p := range *l {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

func (l *prefixList) Set(v string) error {
	out, err := ovnk.ParsePrefixes(v)
	if err != nil {
		return err
	}
	for i := range out {
		out[i] = out[i].Masked()
	}
	*l = out
	return nil
}

func mustPrefixes(cidrs ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(cidrs))
	for i, c := range cidrs {
		out[i] = netip.MustParsePrefix(c)
	}
	return out
}
