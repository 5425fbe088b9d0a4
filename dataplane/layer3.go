package dataplane

import (
	"fmt"
	"net/netip"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/ovnk"
)

// itself: "ip4.src == A && ip4.dst == B".
func SubnetPairPolicies(subnets []netip.Prefix) []nbdb.LogicalRouterPolicy {
	var out []nbdb.LogicalRouterPolicy
	for _, src := range subnets {
		for _, dst := range subnets {
			if src.Addr().Is6() != dst.Addr().Is6() {
				continue
			}
			f := ipFamily(src.Addr())
			out = append(out, nbdb.LogicalRouterPolicy{
				Priority: PolicyPriorityAllow, Action: nbdb.LogicalRouterPolicyActionAllow,
				Match: fmt.Sprintf("%s.src == %s && %s.dst == %s", f, src.Masked(), f, dst.Masked()),
			})
		}
	}
	return out
}

// Layer3SubnetPolicies is the OKEP-5377 piece of a Layer3 network: on the
// network's cluster router the priority-102 allow policies for every ordered
// pair of the network's subnets of the same family. The router is shared: an
// existing one (owned by the Layer3 topology) is referenced by name and only
// these policies on it are managed; a missing one is created and owned by this
// piece. Appending a subnet adds the new pairs; removing one removes its pairs;
// other policies on a foreign router are never touched.
func Layer3SubnetPolicies(network string, subnets []netip.Prefix) (*Desired, error) {
	if network == "" {
		return nil, fmt.Errorf("network.name: must not be empty")
	}
	if len(subnets) == 0 {
		return nil, fmt.Errorf("network.subnets: a Layer3 network needs at least one subnet")
	}
	seen := map[netip.Prefix]int{}
	for i, s := range subnets {
		if !s.IsValid() {
			return nil, fmt.Errorf("network.subnets[%d]: not a valid CIDR", i)
		}
		if j, dup := seen[s.Masked()]; dup {
			return nil, fmt.Errorf("network.subnets[%d]: %s repeats subnets[%d]", i, s, j)
		}
		seen[s.Masked()] = i
	}
	return &Desired{
		Owner: Owner{Network: network, Topology: TopologyLayer3, Piece: PieceSubnetPolicies},
		Routers: []Router{{
			Row:      nbdb.LogicalRouter{Name: ovnk.NamesFor(network).ClusterRouter()},
			Shared:   true,
			Policies: SubnetPairPolicies(subnets),
		}},
	}, nil
}
