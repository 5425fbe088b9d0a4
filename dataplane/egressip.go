package dataplane

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/ovnk"
)

// PolicyPriorityEgressIP is OVN-Kubernetes' EgressIP reroute priority.
const PolicyPriorityEgressIP = 100

// PieceEgressIP marks the EgressIP reroute policies of a network.
const PieceEgressIP = "egressip"

// EgressIPPod is a pod selected by an EgressIP, with the nodes its EgressIP
// addresses are assigned to.
type EgressIPPod struct {
	Namespace, Name string
	IPs             []netip.Addr
	EgressNodes     []string
}

// Layer2EgressIPPolicies moves a Layer2 network's EgressIP reroutes to the
// transit router (OKEP-5094): for each selected pod and family, a
// priority-100 reroute of its traffic to the transit peer IP of every egress
// node's gateway router, so traffic is balanced over all egress nodes
// (the document's Story 2) instead of the single GR the old topology used.
func Layer2EgressIPPolicies(net Layer2Network, nodes []Layer2Node, pods []EgressIPPod) (*Desired, error) {
	if err := net.validate(); err != nil {
		return nil, err
	}
	names := NamesFor(net.Name)
	peers := map[string]l2node{}
	for i, n := range nodes {
		ln, err := net.resolve(names, net.transits(), n)
		if err != nil {
			return nil, fmt.Errorf("nodes[%d] (%s): %w", i, n.Name, err)
		}
		peers[n.Name] = ln
	}
	tr := Router{Row: nbdb.LogicalRouter{Name: names.TransitRouter()}, Ref: true}
	for i, p := range pods {
		field := fmt.Sprintf("pods[%d] (%s/%s)", i, p.Namespace, p.Name)
		if len(p.IPs) == 0 || len(p.EgressNodes) == 0 {
			return nil, fmt.Errorf("%s: ips and egressNodes are required", field)
		}
		for _, ip := range p.IPs {
			s, ok := ovnk.FamilyOf(net.Subnets, ip.Is6())
			if !ok || !s.Contains(ip) {
				return nil, fmt.Errorf("%s.ips: %s is not inside the network's subnets", field, ip)
			}
			var hops []string
			for _, name := range p.EgressNodes {
				n, ok := peers[name]
				if !ok {
					return nil, fmt.Errorf("%s.egressNodes: node %q is not known", field, name)
				}
				gr, _ := ovnk.FamilyOf(n.grSide, ip.Is6())
				hops = append(hops, gr.Addr().String())
			}
			slices.Sort(hops)
			tr.Policies = append(tr.Policies, nbdb.LogicalRouterPolicy{
				Priority: PolicyPriorityEgressIP, Action: nbdb.LogicalRouterPolicyActionReroute,
				Match:    fmt.Sprintf("%s.src == %s", ipFamily(ip), ip),
				Nexthops: slices.Compact(hops),
			})
		}
	}
	return &Desired{
		Owner:   Owner{Network: net.Name, Topology: TopologyLayer2, Piece: PieceEgressIP},
		Routers: []Router{tr},
	}, nil
}
