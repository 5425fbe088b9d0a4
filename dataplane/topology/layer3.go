package topology

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// Layer3PolicyForm chooses the rows of the OKEP-5377 "every subnet pair is
// allowed" rule.
type Layer3PolicyForm string

const (
	// PolicyFormAddressSet (the default) writes O(subnets) rows: a family
	// with one subnet gets upstream's single policy
	// "ip4.src == S && ip4.dst == S"; a family with more gets one
	// Address_Set of its subnets and one policy "ip4.src == $set && ip4.dst == $set".
	// The verdict is the same as the pair form's for every packet.
	PolicyFormAddressSet Layer3PolicyForm = "address-set"
	// PolicyFormPairs writes what upstream OVN-Kubernetes writes
	// (createDefaultNoReroutePodPolicies): one policy per ordered pair of
	// subnets of a family, O(subnets²) rows (200 subnets: 40,000 policies).
	PolicyFormPairs Layer3PolicyForm = "pairs"
)

// ParseLayer3PolicyForm reads the manager's --layer3-subnet-policies ("" is the default).
func ParseLayer3PolicyForm(s string) (Layer3PolicyForm, error) {
	switch f := Layer3PolicyForm(s); f {
	case "":
		return PolicyFormAddressSet, nil
	case PolicyFormAddressSet, PolicyFormPairs:
		return f, nil
	}
	return "", fmt.Errorf("layer3 subnet policy form %q: want %q or %q", s, PolicyFormAddressSet, PolicyFormPairs)
}

// Layer3SubnetPolicies is the OKEP-5377 piece of a Layer3 network in the
// default form (PolicyFormAddressSet).
func Layer3SubnetPolicies(network string, subnets []netip.Prefix) (*rows.Desired, error) {
	return Layer3SubnetPoliciesForm(network, subnets, PolicyFormAddressSet)
}

// Layer3SubnetPoliciesForm is the OKEP-5377 piece of a Layer3 network: on the
// network's cluster router, priority-102 allow policies that let traffic
// between any two of the network's subnets of one family through, in the
// chosen form, and the reply-traffic policy "pkt.mark == 42", each with the
// external IDs upstream's EgressIP controller gives them. The router is shared: an existing one (owned by the Layer3
// topology) is referenced by name and only these policies on it are managed;
// a missing one is created and owned by this piece. Appending a subnet
// changes the rows (pair form: adds the new pairs; address-set form: adds the
// subnet to the set, or replaces a family's single policy by the set's);
// other policies on a foreign router are never touched.
func Layer3SubnetPoliciesForm(network string, subnets []netip.Prefix, form Layer3PolicyForm) (*rows.Desired, error) {
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
	d := &rows.Desired{
		Owner:   rows.Owner{Network: network, Topology: base.TopologyLayer3, Piece: base.PieceSubnetPolicies},
		Routers: []rows.Router{{Row: base.Layer3ClusterRouter(network), Shared: true, Copp: base.DefaultCOPP()}},
	}
	switch form {
	case PolicyFormPairs:
		d.Routers[0].Policies = SubnetPairPolicies(subnets)
	case PolicyFormAddressSet, "":
		for _, v6 := range []bool{false, true} {
			var family []netip.Prefix
			for _, s := range subnets {
				if s.Addr().Is6() == v6 {
					family = append(family, s.Masked())
				}
			}
			if len(family) < 2 {
				d.Routers[0].Policies = append(d.Routers[0].Policies, SubnetPairPolicies(family)...)
				continue
			}
			f := base.IPFamily(family[0].Addr())
			set := nbdb.AddressSet{Name: ovnk.NamesFor(network).SubnetsAddressSet(f)}
			for _, s := range family {
				set.Addresses = append(set.Addresses, s.String())
			}
			d.AddressSets = append(d.AddressSets, set)
			d.Routers[0].Policies = append(d.Routers[0].Policies, nbdb.LogicalRouterPolicy{
				Priority: PolicyPriorityAllow, Action: nbdb.LogicalRouterPolicyActionAllow,
				Match: fmt.Sprintf("%s.src == $%s && %s.dst == $%s", f, set.Name, f, set.Name),
			})
		}
	default:
		return nil, fmt.Errorf("layer3 subnet policy form %q: want %q or %q", form, PolicyFormAddressSet, PolicyFormPairs)
	}
	r := &d.Routers[0]
	r.Policies = append(r.Policies, nbdb.LogicalRouterPolicy{
		Priority: PolicyPriorityAllow, Action: nbdb.LogicalRouterPolicyActionAllow,
		Match: "pkt.mark == " + strconv.Itoa(PktMarkAllow),
	})
	for i := range r.Policies {
		r.Policies[i].ExternalIDs = noRerouteIDs(network, r.Policies[i].Match)
	}
	return d, nil
}

// noRerouteIDs are the external IDs upstream's EgressIP controller gives the
// priority-102 policy of this match (egressip.go:
// getEgressIPLRPNoReRoutePodToPodDbIDs of the match's family,
// getEgressIPLRPNoReRouteDbIDs of the reply-traffic mark for both), so that
// each side finds the other's rows.
func noRerouteIDs(network, match string) map[string]string {
	switch {
	case strings.HasPrefix(match, "pkt.mark"):
		return ovnk.EgressIPNoRerouteIDs(network, ovnk.EgressIPNoRerouteReplyTraffic, PolicyPriorityAllow, ovnk.EgressIPFamilyBoth)
	case strings.HasPrefix(match, "ip6"):
		return ovnk.EgressIPNoRerouteIDs(network, ovnk.EgressIPNoReroutePodToPod, PolicyPriorityAllow, "ip6")
	}
	return ovnk.EgressIPNoRerouteIDs(network, ovnk.EgressIPNoReroutePodToPod, PolicyPriorityAllow, "ip4")
}
