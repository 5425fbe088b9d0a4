package topology

import (
	"fmt"
	"net/netip"
	"strconv"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/topology/base"
)

// Policy priorities and the allow mark of the transit router.
const (
	PolicyPriorityAllow  = 102  // DefaultNoReroutePriority
	PolicyPriorityNodeIP = 1004 // reroute of traffic to a node IP to the management port
	// PktMarkAllow is the pkt.mark of traffic that is always allowed (priority 102).
	PktMarkAllow = 42
)

// policies are the transit router's subnet-pair policies and the
// allow-mark policy, with the external IDs upstream's EgressIP controller
// gives them (they are its Pod-To-Pod and reply-traffic no-reroute
// policies, createDefaultNoReroutePodPolicies): none without EgressIP.
func (b *layer2Build) policies([]Layer2Node) error {
	if !b.net.EgressIP {
		return nil
	}
	allow := append(SubnetPairPolicies(b.net.Subnets), nbdb.LogicalRouterPolicy{
		Priority: PolicyPriorityAllow, Action: nbdb.LogicalRouterPolicyActionAllow,
		Match: "pkt.mark == " + strconv.Itoa(PktMarkAllow),
	})
	for i := range allow {
		allow[i].ExternalIDs = noRerouteIDs(b.net.Name, allow[i].Match)
	}
	b.tr.Policies = append(b.tr.Policies, allow...)
	return nil
}

// SubnetPairPolicies are the priority-102 allow policies for every ordered
// pair of subnets of the same family (OKEP-5377), including each subnet with
// itself: "ip4.src == A && ip4.dst == B".
func SubnetPairPolicies(subnets []netip.Prefix) []nbdb.LogicalRouterPolicy {
	var out []nbdb.LogicalRouterPolicy
	for _, src := range subnets {
		for _, dst := range subnets {
			if src.Addr().Is6() != dst.Addr().Is6() {
				continue
			}
			f := base.IPFamily(src.Addr())
			out = append(out, nbdb.LogicalRouterPolicy{
				Priority: PolicyPriorityAllow, Action: nbdb.LogicalRouterPolicyActionAllow,
				Match: fmt.Sprintf("%s.src == %s && %s.dst == %s", f, src.Masked(), f, dst.Masked()),
			})
		}
	}
	return out
}
