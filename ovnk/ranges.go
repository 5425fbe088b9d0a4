package ovnk

import "net/netip"

// InternalRange is one of the cluster's internal ranges, described for
// messages: "overlaps the <What> <Prefix> (--<Flag>)".
type InternalRange struct {
	Prefix netip.Prefix
	What   string
	Flag   string
}

// InternalRanges are the ranges no user defined network may overlap: the
// cluster default network subnets, service CIDRs, default join and
// masquerade subnets and node subnets (the transit subnets are
// TransitRanges: only Layer3 networks must avoid them).
func (c ClusterConfig) InternalRanges() []InternalRange {
	var out []InternalRange
	add := func(ps []netip.Prefix, what, flag string) {
		for _, p := range ps {
			out = append(out, InternalRange{Prefix: p.Masked(), What: what, Flag: flag})
		}
	}
	add(c.ClusterSubnets, "cluster default network subnet", FlagClusterSubnets)
	add(c.ServiceCIDRs, "service CIDR", FlagServiceCIDRs)
	add(c.JoinSubnets, "default join subnet", FlagJoinSubnets)
	add(c.MasqueradeSubnets, "masquerade subnet", FlagMasqueradeSubnets)
	add(c.NodeSubnets, "node subnet", FlagNodeSubnets)
	return out
}

// TransitRanges are the interconnect transit subnets, described as
// InternalRanges.
func (c ClusterConfig) TransitRanges() []InternalRange {
	out := make([]InternalRange, 0, len(c.TransitSubnets))
	for _, p := range c.TransitSubnets {
		out = append(out, InternalRange{Prefix: p.Masked(), What: "transit subnet", Flag: FlagTransitSubnets})
	}
	return out
}
