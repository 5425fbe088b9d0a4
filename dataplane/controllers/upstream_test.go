package controllers

import (
	"strings"
	"testing"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/ovnk"
)

// With OVN-Kubernetes' network segmentation on, ovnkube-controller writes a
// Primary Layer2 network's transit router itself (topology/topologyfactory.go
// NewTransitRouter: the network and topology external IDs and
// k8s-cluster-router, no udnkit mark). A zone's dataplane that finds it
// writes nothing for that network, says why on the owner's
// DataplaneProgrammed condition instead of failing the reconcile, and
// programs the network, removing the condition, once the router is gone.
func TestLayer2LeavesANetworkOVNKubernetesPrograms(t *testing.T) {
	s := newStack(t)
	o := s.opts()
	o.Zone = "node1"
	o.Local = zone.InZone("node1")
	r, err := Setup(s.ctx, s.mgr, o)
	if err != nil {
		t.Fatal(err)
	}
	r.Layer2.UpstreamRecheck = 200 * time.Millisecond
	s.start()

	const tr = "ns1_tenant.blue_transit_router"
	s.nbctl("lr-add", tr, "--", "set", "Logical_Router", tr,
		"external_ids:k8s.ovn.org/network=ns1_tenant-blue", "external_ids:k8s.ovn.org/topology=layer2",
		"external_ids:k8s-cluster-router=yes")
	dump := func() string {
		var out []string
		for _, table := range []string{"Logical_Router", "Logical_Router_Port", "Logical_Switch", "Logical_Switch_Port",
			"Logical_Router_Static_Route", "Logical_Router_Policy", "NAT"} {
			out = append(out, s.nbctl("--format=csv", "--data=bare", "list", table))
		}
		return strings.Join(out, "\n")
	}
	before := dump()

	s.create(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1", Annotations: map[string]string{
		ovnk.AnnotationNodeID: "2", ovnk.AnnotationLayer2TopologyVersion: ovnk.Layer2TopologyVersionTransitRouter}}})
	s.create(namespace("ns1"))
	s.createNAD(&nadv1.NetworkAttachmentDefinition{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "tenant-blue",
			Labels:      map[string]string{ovnk.LabelUserDefinedNetwork: ""},
			Annotations: map[string]string{ovnk.AnnotationNetworkID: "1", ovnk.AnnotationTunnelKeys: "[16711685,16715780]"}},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: l2Config},
	})

	condition := func() *metav1.Condition {
		var udn udnv1.UserDefinedNetwork
		if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: "ns1", Name: "tenant-blue"}, &udn); err != nil {
			t.Fatal(err)
		}
		return meta.FindStatusCondition(udn.Status.Conditions, udnv1.ConditionDataplaneProgrammed)
	}
	s.eventually("the owner says OVN-Kubernetes programs the network", func() bool { return condition() != nil })
	c := condition()
	if c.Status != metav1.ConditionFalse || c.Reason != udnv1.ReasonOwnedByOVNKubernetes ||
		!strings.HasPrefix(c.Message, "zone node1: logical router \""+tr+"\" exists but is not owned by network") ||
		!strings.Contains(c.Message, "admission-only profile") {
		t.Errorf("DataplaneProgrammed = %s %s %q, want False OwnedByOVNKubernetes naming the zone, the router and the profile",
			c.Status, c.Reason, c.Message)
	}
	time.Sleep(time.Second) // several rechecks
	if after := dump(); after != before {
		t.Errorf("the dataplane wrote rows of a network OVN-Kubernetes programs:\nbefore:\n%s\nafter:\n%s", before, after)
	}

	// OVN-Kubernetes no longer programs it (segmentation off, its rows
	// cleaned up): udnkit takes the network and drops the condition.
	s.nbctl("lr-del", tr)
	s.eventually("udnkit programs the network", func() bool {
		return strings.Contains(s.nbctl("show"), "trtor-GR_ns1_tenant.blue_node1")
	})
	s.eventually("the condition is gone", func() bool { return condition() == nil })
}

// A node's k8s.ovn.org/gateway-mtu-support reaches the topology as
// upstream's ParseNodeGatewayMTUSupport reads it: only "false" turns
// gateway_mtu off (pkg/util/node_annotations.go).
func TestLayer2NodeReadsGatewayMTUSupport(t *testing.T) {
	for value, off := range map[string]bool{"": false, "true": false, "false": true, "no": false} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{ovnk.AnnotationNodeID: "2"}}}
		if value != "" {
			node.Annotations[ovnk.AnnotationGatewayMTUSupport] = value
		}
		n, ok, err := zone.Layer2NodeFromNode(node)
		if err != nil || !ok || n.NoGatewayMTU != off {
			t.Errorf("gateway-mtu-support %q: NoGatewayMTU = %v (ok %v, err %v), want %v", value, n.NoGatewayMTU, ok, err, off)
		}
	}
}
