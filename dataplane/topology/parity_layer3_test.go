package topology

import (
	"net/netip"
	"testing"

	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/ovnk"
)

// The OKEP-5377 rows of a Layer3 network with several subnets: on its
// cluster router, the priority-102 no-reroute policies that let traffic
// between any two of its subnets of a family through.

const pCR3 = "tenant_red_ovn_cluster_router"

// layer3Subnets are two IPv4 subnets and one IPv6 subnet.
var layer3Subnets = []netip.Prefix{pfx("10.128.0.0/16"), pfx("10.129.0.0/16"), pfx("fd00:128::/64")}

func layer3Plan(form Layer3PolicyForm) func(t *testing.T) *rows.Desired {
	return func(t *testing.T) *rows.Desired {
		t.Helper()
		d, err := Layer3SubnetPoliciesForm("tenant_red", layer3Subnets, form)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
}

var (
	pPair4  = policyKey(pCR3, PolicyPriorityAllow, "ip4.src == 10.128.0.0/16 && ip4.dst == 10.129.0.0/16")
	pSelf6  = policyKey(pCR3, PolicyPriorityAllow, "ip6.src == fd00:128::/64 && ip6.dst == fd00:128::/64")
	pSet4   = ovnk.NamesFor("tenant_red").SubnetsAddressSet("ip4")
	pSetPol = policyKey(pCR3, PolicyPriorityAllow, "ip4.src == $"+pSet4+" && ip4.dst == $"+pSet4)
)

// layer3RouterParity is the cluster router udnkit creates when the Layer3
// topology's is missing (an existing one is only referenced).
var layer3RouterParity = []parity{
	{"Logical_Router", pCR3, "name", pCR3, "util/multi_network.go: GetNetworkScopedClusterRouterName"},
	{"Logical_Router", pCR3, "external_ids:k8s-cluster-router", "yes", "topology/topologyfactory.go: newClusterRouter"},
	{"Logical_Router", pCR3, "external_ids:k8s.ovn.org/topology", "layer3", "topology/topologyfactory.go: newClusterRouter (types.TopologyExternalID)"},
	{"Logical_Router", pCR3, "copp", "ovnkube-default", "topology/topologyfactory.go: newClusterRouter (Copp: the default COPP)"},
	{"Logical_Router", pCR3, "options:always_learn_from_arp_request", "false", "topology/topologyfactory.go: NewClusterRouter (layer3_user_defined_network_controller.go: newClusterRouter without multicast)"},
}

// layer3PairParity: the pair form is upstream's rows.
var layer3PairParity = append([]parity{
	{"Logical_Router_Policy", pPair4, "action", "allow", "egressip.go: createEgressIPLogicalRouterPolicy"},
	{"Logical_Router_Policy", pPair4, "priority", "102", "egressip.go: createDefaultNoReroutePodPolicies (types.DefaultNoRereoutePriority)"},
	{"Logical_Router_Policy", pPair4, "match", "ip4.src == 10.128.0.0/16 && ip4.dst == 10.129.0.0/16",
		"egressip.go: createDefaultNoReroutePodPolicies (every ordered pair of the network's cluster subnets of a family)"},
	{"Logical_Router_Policy", pSelf6, "match", "ip6.src == fd00:128::/64 && ip6.dst == fd00:128::/64", "egressip.go: createDefaultNoReroutePodPolicies"},
}, layer3RouterParity...)

// layer3SetParity: in the default form a family with one subnet keeps
// upstream's single policy.
var layer3SetParity = append([]parity{
	{"Logical_Router_Policy", pSelf6, "action", "allow", "egressip.go: createDefaultNoReroutePodPolicies"},
	{"Logical_Router_Policy", pSelf6, "priority", "102", "egressip.go: createDefaultNoReroutePodPolicies"},
}, layer3RouterParity...)

var layer3SetOnly = []udnkitOnly{
	{"Address_Set", pSet4, "addresses",
		"the default form (--layer3-subnet-policies=address-set) holds a family's subnets in one set: O(subnets) rows where upstream writes O(subnets²) policies (200 subnets: 40,000); --layer3-subnet-policies=pairs writes upstream's rows"},
	{"Logical_Router_Policy", pSetPol, "match", "the one policy over that set, with the same verdict as the pairs for every packet"},
}

var layer3Differs = []differs{
	{"Logical_Router_Policy", pPair4, "external_ids",
		"k8s.ovn.org/network=tenant_red,k8s.ovn.org/topology=layer3,k8s.ovn.org/udnkit-piece=subnet-policies",
		"EgressIP DbObjectIDs: owner-type=EgressIP, owner-controller, name=EIP-No-Reroute-Pod-To-Pod, priority=102, ip-family=ip4, network=tenant_red",
		"egressip.go: getEgressIPLRPNoReRoutePodToPodDbIDs keys the rows for upstream's EgressIP controller, which udnkit does not run"},
	{"Logical_Router", pCR3, "options", "always_learn_from_arp_request=false",
		"always_learn_from_arp_request=false; local gateway mode adds ct-commit-all=true, --enable-multicast mcast_relay=true",
		"topology/topologyfactory.go: newClusterRouter, NewClusterRouterWithMulticastSupport; udnkit creates the router only where OVN-Kubernetes' Layer3 topology is missing, and then has no gateway mode nor multicast; COPP: the copp piece"},
}

var _ = addParityCase(parityCase{
	name: "layer3 pairs", plan: layer3Plan(PolicyFormPairs), same: append(zoneCoppParity(), layer3PairParity...), differs: layer3Differs,
})

var _ = addParityCase(parityCase{
	name: "layer3 address-set", plan: layer3Plan(PolicyFormAddressSet), same: append(zoneCoppParity(), layer3SetParity...), only: layer3SetOnly,
	differs: layer3Differs[1:],
})
