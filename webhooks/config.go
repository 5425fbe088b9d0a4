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
	"net/netip"

	"github.com/udnkit/udnkit/ovnk"
)

// internalRange is one cluster-internal range with a description for messages.
type internalRange struct {
	prefix netip.Prefix
	what   string
	flag   string
}

// internalRanges are the ranges no user network may overlap (transit apart).
func internalRanges(c ovnk.ClusterConfig) []internalRange {
	var out []internalRange
	add := func(ps []netip.Prefix, what, flag string) {
		for _, p := range ps {
			out = append(out, internalRange{prefix: p.Masked(), what: what, flag: flag})
		}
	}
	add(c.ClusterSubnets, "cluster default network subnet", ovnk.FlagClusterSubnets)
	add(c.ServiceCIDRs, "service CIDR", ovnk.FlagServiceCIDRs)
	add(c.JoinSubnets, "default join subnet", ovnk.FlagJoinSubnets)
	add(c.MasqueradeSubnets, "masquerade subnet", ovnk.FlagMasqueradeSubnets)
	add(c.NodeSubnets, "node subnet", ovnk.FlagNodeSubnets)
	return out
}

func transitRanges(c ovnk.ClusterConfig) []internalRange {
	out := make([]internalRange, 0, len(c.TransitSubnets))
	for _, p := range c.TransitSubnets {
		out = append(out, internalRange{prefix: p.Masked(), what: "transit subnet", flag: ovnk.FlagTransitSubnets})
	}
	return out
}
