package datapath_test

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udnkit/udnkit/internal/testobj"
)

// TestNetworkPolicyNamespaceSelector sends packets through the ACLs
// udnkit's NetworkPolicy controller writes for a namespaceSelector peer,
// on a dual-stack Primary Layer2 ClusterUserDefinedNetwork over three
// namespaces (a NAD in each, one OVN network): the server in tenant-cu-a
// on node-b, a client in tenant-cu-b (labelled team=blue) on node-a and a
// pod in tenant-cu-c on node-c with the client's own pod labels, so only
// the namespace tells them apart. An ingress default-deny policy in
// tenant-cu-a drops both; an allow rule from namespaceSelector team=blue
// admits the client and not the other; the namespace's label taken off
// (the API state) drops the client again and given to tenant-cu-c admits
// the other instead; the peer's address sets emptied in the server's zone
// drop the client until the reconciler's next pass.
func TestNetworkPolicyNamespaceSelector(t *testing.T) {
	c := needCluster(t)
	nets := newCUDNLayer2(t, "shared-pol", 18, []string{"tenant-cu-a", "tenant-cu-b", "tenant-cu-c"}, "10.173.0.0/16", "fd00:173::/64")
	peerLabels := map[string]string{"role": "client"}
	r := startPolicyRun(t, c, layer2Pods,
		&pod{net: nets[0], name: "server", node: c.Node("node-b"), index: 5, tunnelID: 10, labels: map[string]string{"app": "server"}},
		&pod{net: nets[1], name: "client", node: c.Node("node-a"), index: 6, tunnelID: 11, labels: peerLabels},
		&pod{net: nets[2], name: "other", node: c.Node("node-c"), index: 7, tunnelID: 12, labels: peerLabels})
	server, client, other := r.server, r.client, r.other
	in := networkingv1.PolicyTypeIngress
	blue := map[string]string{"team": "blue"}
	label := func(ns string, labels map[string]string) {
		setObjects(testobj.MakeNamespace(ns).Primary().Labels(labels).Obj())
	}
	label(client.net.namespace, blue)
	t.Cleanup(func() { label(client.net.namespace, nil); label(other.net.namespace, nil) })
	teamBlue := []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: blue}}}

	t.Run("without a policy pods of the three namespaces reach each other (ICMP and TCP)", func(t *testing.T) {
		r.check(t, [][2]*pod{{client, server}, {other, server}, {server, other}}, nil)
	})
	t.Run("an ingress default-deny policy drops new connections from the other namespaces", func(t *testing.T) {
		r.apply(t, r.netpol("deny-in", in))
		r.check(t, [][2]*pod{{server, client}}, [][2]*pod{{client, server}, {other, server}})
		r.withoutDrop(t, true)
	})
	t.Run("an allow rule by namespace selector admits the selected namespace's pod and not the other's", func(t *testing.T) {
		r.apply(t, r.netpol("allow-blue", in, teamBlue))
		r.check(t, [][2]*pod{{client, server}}, [][2]*pod{{other, server}})
		r.withoutSelectorSets(t)
	})
	t.Run("the rule follows the namespaces' labels", func(t *testing.T) {
		label(client.net.namespace, nil)
		r.program(t)
		r.check(t, nil, [][2]*pod{{client, server}, {other, server}})
		label(other.net.namespace, blue)
		r.program(t)
		r.check(t, [][2]*pod{{other, server}}, [][2]*pod{{client, server}})
	})
	t.Run("removing the policies restores traffic", func(t *testing.T) {
		r.apply(t)
		r.check(t, [][2]*pod{{client, server}, {other, server}}, nil)
	})
	t.Run("removing the pods from the API state deletes their ports in every zone", func(t *testing.T) {
		removePods(t, c, server, client, other)
	})
}
