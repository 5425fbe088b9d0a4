package controller

import (
	"strings"
	"testing"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/ovnk"
)

var skipNameValidation = true

const l2Config = `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns1_tenant-blue",
 "netAttachDefName":"ns1/tenant-blue","topology":"layer2","role":"primary",
 "subnets":"203.203.0.0/24,2010:100:200::/60","mtu":1400}`

// The reconciler programs a primary Layer2 network from its NAD and the Nodes
// created through the apiserver (as kubectl would), announces the topology
// version on drained nodes, follows a node added later, and removes the
// network's rows when its NAD goes.
func TestLayer2ReconcilerFromAPIState(t *testing.T) {
	s := newStack(t)
	ctx, mgr, db := s.ctx, s.mgr, s.db
	r, err := Setup(ctx, mgr, Options{NBAddress: db.NB.Address(), SBAddress: db.SB.Address()})
	if err != nil {
		t.Fatal(err)
	}
	r.Layer2.DrainPoll = 200 * time.Millisecond
	if _, err := Setup(ctx, mgr, Options{NBAddress: "/no/scheme.sock", SBAddress: db.SB.Address()}); err == nil ||
		!strings.Contains(err.Error(), `--ovn-nb-address "/no/scheme.sock": must start with unix:, tcp: or ssl:`) {
		t.Errorf("bad NB address: err = %v", err)
	}
	s.start()

	c := s.c
	node := func(name, id string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{ovnk.AnnotationNodeID: id}}}
	}
	for _, n := range []*corev1.Node{node("node1", "2"), node("node2", "3")} {
		if err := c.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns1"}}); err != nil {
		t.Fatal(err)
	}
	nad := &nadv1.NetworkAttachmentDefinition{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "tenant-blue",
			Labels:      map[string]string{ovnk.LabelUserDefinedNetwork: ""},
			Annotations: map[string]string{ovnk.AnnotationNetworkID: "1", ovnk.AnnotationTunnelKeys: "[16711685,16715780]"}},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: l2Config},
	}
	if err := c.Create(ctx, nad); err != nil {
		t.Fatal(err)
	}

	nbctl, eventually := s.nbctl, s.eventually
	const tr = "ns1_tenant.blue_transit_router"
	eventually("both nodes programmed", func() bool {
		show := nbctl("show", tr)
		return strings.Contains(show, "trtor-GR_ns1_tenant.blue_node1") && strings.Contains(show, "trtor-GR_ns1_tenant.blue_node2")
	})
	if got := nbctl("get", "Logical_Router_Port", "trtos-ns1_tenant.blue_ovn_layer2_switch", "networks"); !strings.Contains(got, `"203.203.0.1/24"`) || !strings.Contains(got, `"2010:100:200::1/60"`) {
		t.Errorf("gateway port networks = %s", got)
	}
	if got := nbctl("get", "Logical_Router_Port", "rtotr-GR_ns1_tenant.blue_node2", "networks"); !strings.Contains(got, `"100.65.0.3/16"`) || !strings.Contains(got, `"fd97::7/127"`) {
		t.Errorf("node2's GR port networks = %s (join IP .3 from node ID 3, transit peers at 2·3)", got)
	}
	var n1 corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: "node1"}, &n1); err != nil {
		t.Fatal(err)
	}
	if v := n1.Annotations[ovnk.AnnotationLayer2TopologyVersion]; v != "2.0" {
		t.Errorf("drained node1 was not announced on topology 2.0: %q", v)
	}

	// A node created later joins the topology.
	if err := c.Create(ctx, node("node3", "4")); err != nil {
		t.Fatal(err)
	}
	eventually("node3 programmed", func() bool { return strings.Contains(nbctl("show", tr), "trtor-GR_ns1_tenant.blue_node3") })

	// node4 still runs a pod of the network: it keeps the old topology (not
	// programmed, not announced) until the pod is gone.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "vm-pod"},
		Spec: corev1.PodSpec{NodeName: "node4", Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodRunning
	if err := c.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	// The reconciler reads pods from the manager's cache: let it see the pod first.
	eventually("the manager's cache sees the running pod", func() bool {
		var p corev1.Pod
		return mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(pod), &p) == nil && p.Status.Phase == corev1.PodRunning
	})
	n4 := node("node4", "5")
	if err := c.Create(ctx, n4); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // a negative check: give the reconciler a chance to act wrongly
	if strings.Contains(nbctl("show", tr), "trtor-GR_ns1_tenant.blue_node4") {
		t.Error("node4 switched topology while it runs a pod of the network")
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "node4"}, n4); err != nil {
		t.Fatal(err)
	}
	if v := n4.Annotations[ovnk.AnnotationLayer2TopologyVersion]; v == "2.0" {
		t.Error("node4 was announced on 2.0 while it runs a pod")
	}
	if err := c.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	eventually("node4 programmed after draining", func() bool { return strings.Contains(nbctl("show", tr), "trtor-GR_ns1_tenant.blue_node4") })

	// The NAD goes: so does the network's topology.
	if err := c.Delete(ctx, nad); err != nil {
		t.Fatal(err)
	}
	eventually("network removed", func() bool { return strings.TrimSpace(nbctl("show")) == "" })

	// A NAD whose tunnel keys are not a list is not programmed.
	if _, _, err := Layer2NetworkFromNAD(&nadv1.NetworkAttachmentDefinition{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "bad", Annotations: map[string]string{ovnk.AnnotationTunnelKeys: "7"}},
		Spec:       nadv1.NetworkAttachmentDefinitionSpec{Config: l2Config},
	}); err == nil || !strings.Contains(err.Error(), "annotation k8s.ovn.org/tunnel-keys=\"7\" is not a JSON list of integers") {
		t.Errorf("bad tunnel keys: err = %v", err)
	}
	if _, _, err := Layer2NodeFromNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "nodeX",
		Annotations: map[string]string{ovnk.AnnotationNodeID: "zero"}}}); err == nil ||
		!strings.Contains(err.Error(), `node nodeX annotation k8s.ovn.org/node-id="zero" is not a node ID (an integer in [2, 32767])`) {
		t.Errorf("bad node ID: err = %v", err)
	}
}
