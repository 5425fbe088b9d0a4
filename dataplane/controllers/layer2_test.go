package controllers

import (
	"strings"
	"testing"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/ovnk"
)

const l2Config = `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns1_tenant-blue",
 "netAttachDefName":"ns1/tenant-blue","topology":"layer2","role":"primary",
 "subnets":"203.203.0.0/24,2010:100:200::/60","mtu":1400}`

const redConfig = `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns2_tenant-red",
 "netAttachDefName":"ns2/tenant-red","topology":"layer2","role":"primary","subnets":"10.20.0.0/24"}`

// The reconciler programs a primary Layer2 network from its NAD and the Nodes
// created through the apiserver (as kubectl would) for its zone (node1 and
// node4 are local, node2 and node3 are in zones of their own), announces the
// topology version on drained local nodes, keeps the OKEP-5094 upgrade rows
// while another zone's node is on the old topology and drops them once it
// moved, leaves the zone alone while a local node runs a pod of ANY primary
// Layer2 network, and removes the network's rows when its NAD goes.
func TestLayer2ReconcilerFromAPIState(t *testing.T) {
	s := newStack(t)
	ctx, mgr, db := s.ctx, s.mgr, s.db
	o := s.opts()
	o.Local = func(n *corev1.Node) bool { return n.Name == "node1" || n.Name == "node4" }
	r, err := Setup(ctx, mgr, o)
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
	// Each node's tunnel ID for a network is upstream cluster manager's
	// k8s.ovn.org/udn-layer2-node-gateway-router-lrp-tunnel-ids: here 10 ×
	// the node ID, so a key taken from the node ID instead shows.
	node := func(name, id, version string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{ovnk.AnnotationNodeID: id,
			ovnk.AnnotationLayer2GRLRPTunnelIDs: `{"ns1_tenant-blue":"` + id + `0","ns2_tenant-red":"` + id + `1"}`}}}
		if version != "" {
			n.Annotations[ovnk.AnnotationLayer2TopologyVersion] = version
		}
		return n
	}
	s.create(node("node1", "2", ""), node("node2", "3", "2.0"))
	s.create(namespace("ns1"), namespace("ns2"))
	nad := &nadv1.NetworkAttachmentDefinition{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "tenant-blue",
			Labels:      map[string]string{ovnk.LabelUserDefinedNetwork: ""},
			Annotations: map[string]string{ovnk.AnnotationNetworkID: "1", ovnk.AnnotationTunnelKeys: "[16711685,16715780]"}},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: l2Config},
	}
	s.createNAD(nad)

	nbctl, eventually := s.nbctl, s.eventually
	const tr = "ns1_tenant.blue_transit_router"
	eventually("both nodes programmed", func() bool {
		show := nbctl("show", tr)
		return strings.Contains(show, "trtor-GR_ns1_tenant.blue_node1") && strings.Contains(show, "trtor-GR_ns1_tenant.blue_node2")
	})
	if got := nbctl("get", "Logical_Router_Port", "trtos-ns1_tenant.blue_ovn_layer2_switch", "networks"); !strings.Contains(got, `"203.203.0.1/24"`) || !strings.Contains(got, `"2010:100:200::1/60"`) {
		t.Errorf("gateway port networks = %s", got)
	}
	if got := nbctl("get", "Logical_Router_Port", "rtotr-GR_ns1_tenant.blue_node1", "networks"); !strings.Contains(got, `"100.65.0.2/16"`) || !strings.Contains(got, `"fd97::5/127"`) {
		t.Errorf("node1's GR port networks = %s (join IP .2 from node ID 2, transit peers at 2·2)", got)
	}
	if got := nbctl("get", "Logical_Router_Port", "trtor-GR_ns1_tenant.blue_node2", "options"); got != `{requested-chassis="5e1f0c1a-node2", requested-tnl-key="13"}` {
		t.Errorf("remote node2's transit router port options = %s", got)
	}
	if got := nbctl("--bare", "--columns=name", "find", "Logical_Router", "name=GR_ns1_tenant.blue_node2"); got != "" {
		t.Errorf("remote node2's gateway router was programmed in this zone: %s", got)
	}
	announced := func(name string) bool {
		var n corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
			t.Fatal(err)
		}
		return n.Annotations[ovnk.AnnotationLayer2TopologyVersion] == "2.0"
	}
	if !announced("node1") {
		t.Error("drained node1 was not announced on topology 2.0")
	}

	// node3 (its own zone) joins still on the old topology: this zone keeps
	// its remote switch port, routes its join IP to itself and adds node1's
	// upgrade pair (OKEP-5094); once node3 reports 2.0 exactly those go.
	s.create(node("node3", "4", ""))
	const upgradePort = "trtos-ns1_tenant.blue_ovn_layer2_switch-upgrade"
	eventually("the upgrade rows for node1 while node3 is old", func() bool {
		return strings.Contains(normalized(nbctl("lr-route-list", tr)), "100.65.0.4 100.65.0.4 dst-ip") &&
			strings.Contains(nbctl("show", tr), upgradePort)
	})
	if got := nbctl("get", "Logical_Switch_Port", "stotr-ns1_tenant.blue_ovn_layer2_switch-upgrade", "options"); got != `{requested-tnl-key="20", router-port=`+upgradePort+`}` {
		t.Errorf("upgrade switch port options = %s (node1's tunnel ID for the network)", got)
	}
	if got := nbctl("get", "Logical_Router_Port", upgradePort, "mac"); got != `"0a:58:64:41:00:02"` {
		t.Errorf("upgrade router port MAC = %s, want node1's GR MAC", got)
	}
	if got := nbctl("get", "Logical_Switch_Port", "stor-ns1_tenant.blue_ovn_layer2_switch_node3", "type"); got != "remote" {
		t.Errorf("old node3's switch port type = %s", got)
	}
	if announced("node3") {
		t.Error("this zone announced node3, another zone's node")
	}
	n3 := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: "node3"}, n3); err != nil {
		t.Fatal(err)
	}
	n3.Annotations[ovnk.AnnotationLayer2TopologyVersion] = "2.0"
	if err := c.Update(ctx, n3); err != nil {
		t.Fatal(err)
	}
	eventually("node3 on 2.0: its transit router port, no upgrade rows", func() bool {
		show := nbctl("show", tr)
		return strings.Contains(show, "trtor-GR_ns1_tenant.blue_node3") && !strings.Contains(show, upgradePort) &&
			!strings.Contains(normalized(nbctl("lr-route-list", tr)), "100.65.0.4 100.65.0.4 dst-ip") &&
			!strings.Contains(nbctl("show"), "stor-ns1_tenant.blue_ovn_layer2_switch_node3")
	})

	// node4 joins this zone running a pod of another primary Layer2 network
	// (ns2/tenant-red): the zone stays as it is for every network (node4 not
	// programmed, not announced, node1 untouched) until the pod is gone.
	s.createNAD(&nadv1.NetworkAttachmentDefinition{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns2", Name: "tenant-red",
			Labels:      map[string]string{ovnk.LabelUserDefinedNetwork: ""},
			Annotations: map[string]string{ovnk.AnnotationNetworkID: "2", ovnk.AnnotationTunnelKeys: "[16711686,16715781]"}},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: redConfig},
	})
	eventually("tenant-red programmed", func() bool { return strings.Contains(nbctl("show"), "trtor-GR_ns2_tenant.red_node1") })
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns2", Name: "vm-pod"},
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
	before := nbctl("show")
	s.create(node("node4", "5", ""))
	time.Sleep(time.Second) // a negative check: give the reconciler a chance to act wrongly
	if after := nbctl("show"); after != before {
		t.Errorf("the zone changed while node4 runs a pod of a primary Layer2 network:\n%s", after)
	}
	if announced("node4") {
		t.Error("node4 was announced on 2.0 while it runs a pod of a primary Layer2 network")
	}
	if err := c.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	eventually("node4 programmed in both networks after draining", func() bool {
		show := nbctl("show")
		return strings.Contains(show, "trtor-GR_ns1_tenant.blue_node4") && strings.Contains(show, "trtor-GR_ns2_tenant.red_node4")
	})
	if !announced("node4") {
		t.Error("drained node4 was not announced on topology 2.0")
	}
	if err := c.Delete(ctx, &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: "ns2", Name: "tenant-red"}}); err != nil {
		t.Fatal(err)
	}

	// The NAD goes: so does the network's topology.
	if err := c.Delete(ctx, nad); err != nil {
		t.Fatal(err)
	}
	eventually("network removed", func() bool { return strings.TrimSpace(nbctl("show")) == "" })

	// A NAD whose tunnel keys are not a list is not programmed.
	if _, _, err := zone.Layer2NetworkFromNAD(&nadv1.NetworkAttachmentDefinition{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "bad", Annotations: map[string]string{ovnk.AnnotationTunnelKeys: "7"}},
		Spec:       nadv1.NetworkAttachmentDefinitionSpec{Config: l2Config},
	}); err == nil || !strings.Contains(err.Error(), "annotation k8s.ovn.org/tunnel-keys=\"7\" is not a JSON list of integers") {
		t.Errorf("bad tunnel keys: err = %v", err)
	}
	if _, _, err := zone.Layer2NodeFromNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "nodeX",
		Annotations: map[string]string{ovnk.AnnotationNodeID: "zero"}}}); err == nil ||
		!strings.Contains(err.Error(), `node nodeX annotation k8s.ovn.org/node-id="zero" is not a node ID (an integer in [2, 32767])`) {
		t.Errorf("bad node ID: err = %v", err)
	}
}
