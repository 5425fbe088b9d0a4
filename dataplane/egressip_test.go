package dataplane

import (
	"net/netip"
	"strings"
	"testing"
)

// EgressIP reroutes live on the transit router and point at the egress nodes'
// transit peer IPs (both of them: the Layer2 EgressIP limitation is gone);
// they follow the EgressIP's nodes and leave with the pod, and the topology
// piece's own policies are untouched.
func TestLayer2EgressIPPoliciesOnTransitRouter(t *testing.T) {
	e := newEnv(t)
	net, nodes := exampleV4()
	d := mustLayer2(t, net, nodes)
	e.apply(d)
	pod := EgressIPPod{Namespace: "ns", Name: "pod1", IPs: []netip.Addr{addr("203.203.0.7")}, EgressNodes: []string{"node2", "node3"}}
	eip := func(pods ...EgressIPPod) int {
		t.Helper()
		d, err := Layer2EgressIPPolicies(net, nodes, pods)
		if err != nil {
			t.Fatal(err)
		}
		return e.apply(d)
	}
	eip(pod)
	topology := []string{"Routing Policies",
		"102 ip4.src == 203.203.0.0/24 && ip4.dst == 203.203.0.0/24 allow", "102 pkt.mark == 42 allow"}
	wantLines(t, "policies with two egress nodes", e.nbctl("lr-policy-list", tr),
		append(topology, "100 ip4.src == 203.203.0.7 reroute 100.88.0.7, 100.88.0.9")...)
	if ops := eip(pod); ops != 0 {
		t.Errorf("second apply sent %d operations, want 0", ops)
	}
	pod.EgressNodes = []string{"node1"}
	eip(pod)
	wantLines(t, "policies after the EgressIP moved to node1", e.nbctl("lr-policy-list", tr),
		append(topology, "100 ip4.src == 203.203.0.7 reroute 100.88.0.5")...)
	eip()
	wantLines(t, "policies after the pod left", e.nbctl("lr-policy-list", tr), topology...)
	// The topology piece still converges: EgressIP rows are not its rows.
	if ops := e.apply(d); ops != 0 {
		t.Errorf("topology apply after EgressIP changes sent %d operations, want 0", ops)
	}

	bad := pod
	bad.IPs = []netip.Addr{addr("10.0.0.7")}
	if _, err := Layer2EgressIPPolicies(net, nodes, []EgressIPPod{bad}); err == nil ||
		!strings.Contains(err.Error(), "pods[0] (ns/pod1).ips: 10.0.0.7 is not inside the network's subnets") {
		t.Errorf("pod IP outside the network: err = %v", err)
	}
	bad = pod
	bad.EgressNodes = []string{"node9"}
	if _, err := Layer2EgressIPPolicies(net, nodes, []EgressIPPod{bad}); err == nil ||
		!strings.Contains(err.Error(), `pods[0] (ns/pod1).egressNodes: node "node9" is not known`) {
		t.Errorf("unknown egress node: err = %v", err)
	}
}
