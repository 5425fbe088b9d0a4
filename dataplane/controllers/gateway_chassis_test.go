package controllers

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/ovnk"
)

// The transit router's trtos- port holds one Gateway_Chassis, on the
// chassis the zone's node publishes in k8s.ovn.org/node-chassis-id: when
// ovnkube-node re-registers the node under a new chassis the row follows
// (the old one goes), a remote node's chassis never gets one, and deleting
// the network leaves no Gateway_Chassis row.
func TestTransitRouterSwitchPortFollowsTheLocalChassis(t *testing.T) {
	s := newStack(t)
	ctx := s.ctx
	o := s.opts()
	o.Local = func(n *corev1.Node) bool { return n.Name == "node1" }
	if _, err := Setup(ctx, s.mgr, o); err != nil {
		t.Fatal(err)
	}
	s.start()
	node := func(name, id string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			ovnk.AnnotationNodeID: id, ovnk.AnnotationLayer2TopologyVersion: ovnk.Layer2TopologyVersionTransitRouter}}}
	}
	s.create(node("node1", "2"), node("node2", "3"), namespace("ns1"))
	nad := blueNAD()
	s.createNAD(nad)

	const port = "trtos-ns1_tenant.blue_ovn_layer2_switch"
	rows := func() string {
		return normalized(s.nbctl("--data=bare", "--no-headings", "--columns=name,chassis_name,priority", "list", "Gateway_Chassis"))
	}
	s.eventually("node1's gateway chassis", func() bool {
		return rows() == normalized(port+"-"+chassisOf("node1")+"\n"+chassisOf("node1")+"\n1")
	})
	if got := normalized(s.nbctl("lrp-get-gateway-chassis", port)); got != port+"-"+chassisOf("node1")+" 1" {
		t.Errorf("%s's gateway chassis = %q, want node1's", port, got)
	}

	var n1 corev1.Node
	if err := s.c.Get(ctx, client.ObjectKey{Name: "node1"}, &n1); err != nil {
		t.Fatal(err)
	}
	n1.Annotations[ovnk.AnnotationNodeChassisID] = "7c0ffee0-node1"
	if err := s.c.Update(ctx, &n1); err != nil {
		t.Fatal(err)
	}
	s.eventually("the gateway chassis follows node1's new chassis", func() bool {
		return normalized(s.nbctl("lrp-get-gateway-chassis", port)) == port+"-7c0ffee0-node1 1"
	})
	if got, want := rows(), normalized(port+"-7c0ffee0-node1\n7c0ffee0-node1\n1"); got != want {
		t.Errorf("Gateway_Chassis rows after the chassis changed = %q, want only the new one %q", got, want)
	}

	if err := s.c.Delete(ctx, nad); err != nil {
		t.Fatal(err)
	}
	s.eventually("network removed", func() bool { return strings.TrimSpace(s.nbctl("show")) == "" })
	if got := rows(); got != "" {
		t.Errorf("Gateway_Chassis rows left after the network was deleted: %q", got)
	}
}
