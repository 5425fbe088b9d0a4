package controller

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"github.com/udnkit/udnkit/ovnk"
)

// factsNode is OKEP-5535's node-a with every node annotation udnkit or
// OVN-Kubernetes writes, and an InternalIP.
func factsNode() *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a", Annotations: map[string]string{
			ovnk.AnnotationNodeID: "6", ovnk.AnnotationNodeEncapIPs: `["10.0.0.2","10.0.0.3","10.0.0.4"]`,
			ovnk.AnnotationNodeChassisID:                  "5e1f0c1a-node-a",
			ovnk.AnnotationNodeTransitSwitchPortTunnelIDs: "[6,7,8]",
			ovnk.AnnotationNodeSubnets:                    `{"default":["10.244.1.0/24"],"tenant.green_green":["10.200.3.0/24"]}`,
			ovnk.AnnotationLayer2TopologyVersion:          ovnk.Layer2TopologyVersionTransitRouter,
			ovnk.AnnotationZoneName:                       "zone-a",
			"example.com/unrelated":                       "x",
		}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "172.18.0.2"}}},
	}
}

// nodeEdits change one fact of factsNode to another valid value each.
var nodeEdits = map[string]func(*corev1.Node){
	ovnk.AnnotationNodeID:        func(n *corev1.Node) { n.Annotations[ovnk.AnnotationNodeID] = "7" },
	ovnk.AnnotationNodeChassisID: func(n *corev1.Node) { n.Annotations[ovnk.AnnotationNodeChassisID] = "5e1f0c1a-node-a2" },
	ovnk.AnnotationNodeEncapIPs: func(n *corev1.Node) {
		n.Annotations[ovnk.AnnotationNodeEncapIPs] = `["10.0.0.2","10.0.0.3","10.0.0.5"]`
	},
	ovnk.AnnotationNodeTransitSwitchPortTunnelIDs: func(n *corev1.Node) { n.Annotations[ovnk.AnnotationNodeTransitSwitchPortTunnelIDs] = "[6,7,9]" },
	ovnk.AnnotationNodeSubnets: func(n *corev1.Node) {
		n.Annotations[ovnk.AnnotationNodeSubnets] = `{"default":["10.244.1.0/24"],"tenant.green_green":["10.200.4.0/24"]}`
	},
	ovnk.AnnotationLayer2TopologyVersion: func(n *corev1.Node) { delete(n.Annotations, ovnk.AnnotationLayer2TopologyVersion) },
	ovnk.AnnotationZoneName:              func(n *corev1.Node) { n.Annotations[ovnk.AnnotationZoneName] = "zone-b" },
	"example.com/unrelated":              func(n *corev1.Node) { n.Annotations["example.com/unrelated"] = "y" },
	"status.addresses": func(n *corev1.Node) {
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "172.18.0.3"}}
	},
}

// TestNodeFactsCoverWhatReadersRead: an edit that changes what a
// controller reads of a node passes its Node watch's predicate, and an edit
// of anything else does not (so the watch drops it).
func TestNodeFactsCoverWhatReadersRead(t *testing.T) {
	zone := InZone("zone-a")
	readers := map[string]struct {
		facts nodeFacts
		read  func(*corev1.Node) any
	}{
		"layer2 and live migration": {layer2NodeFacts, func(n *corev1.Node) any {
			l2, ok, err := Layer2NodeFromNode(n)
			return fmt.Sprint(l2, ok, err, zone(n))
		}},
		"multi-VTEP": {vtepNodeFacts, func(n *corev1.Node) any {
			v, err := VTEPNodeFromNode(n)
			s, serr := NodeSubnetsFromNode(n, "tenant.green_green")
			return fmt.Sprint(v, err, s, serr, zone(n))
		}},
	}
	for name, r := range readers {
		for edit, f := range nodeEdits {
			old, cur := factsNode(), factsNode()
			f(cur)
			reads := !reflect.DeepEqual(r.read(old), r.read(cur))
			passes := r.facts.changed(old, cur)
			if reads != passes {
				t.Errorf("%s, edit of %s: the reader's result changes: %v, the predicate passes: %v", name, edit, reads, passes)
			}
		}
	}
	// Every fact listed is one the edits exercise.
	for _, k := range slices.Concat(layer2NodeFacts.annotations, vtepNodeFacts.annotations) {
		if nodeEdits[k] == nil {
			t.Errorf("no edit of %s", k)
		}
	}
}

func TestPodPortChanged(t *testing.T) {
	base := func() *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p",
			Annotations: map[string]string{ovnk.AnnotationPodNetworks: "{}", "x": "1"}, Labels: map[string]string{"a": "b"}},
			Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	for edit, tc := range map[string]struct {
		f    func(*corev1.Pod)
		want bool
	}{
		"pod-networks":      {func(p *corev1.Pod) { p.Annotations[ovnk.AnnotationPodNetworks] = `{"a/b":{}}` }, true},
		"pod-networks gone": {func(p *corev1.Pod) { delete(p.Annotations, ovnk.AnnotationPodNetworks) }, true},
		"nodeName":          {func(p *corev1.Pod) { p.Spec.NodeName = "node-b" }, true},
		"phase":             {func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }, true},
		"other annotation":  {func(p *corev1.Pod) { p.Annotations["x"] = "2" }, false},
		"labels":            {func(p *corev1.Pod) { p.Labels["a"] = "c" }, false},
		"conditions":        {func(p *corev1.Pod) { p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady}} }, false},
	} {
		old, cur := base(), base()
		tc.f(cur)
		if got := podPortUpdate(old, cur); got != tc.want {
			t.Errorf("%s: passes %v, want %v", edit, got, tc.want)
		}
	}
}

// The node and pod watches drop the creates of their initial list (the
// NADs' own initial list queues every NAD) and pass every later create,
// delete and fact-changing update.
func TestSecondaryWatchesSkipOnlyTheInitialList(t *testing.T) {
	node, pod := factsNode(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	for name, tc := range map[string]struct {
		f   predicate.Funcs
		obj client.Object
	}{
		"layer2 node": {layer2NodeFacts.funcs(), node}, "multi-VTEP node": {vtepNodeFacts.funcs(), node},
		"pod port": {podPortFuncs, pod},
	} {
		if tc.f.Create(event.CreateEvent{Object: tc.obj, IsInInitialList: true}) {
			t.Errorf("%s: a create of the initial list passes", name)
		}
		if !tc.f.Create(event.CreateEvent{Object: tc.obj}) {
			t.Errorf("%s: a later create is dropped", name)
		}
		if !tc.f.Delete(event.DeleteEvent{Object: tc.obj}) {
			t.Errorf("%s: a delete is dropped", name)
		}
	}
}

// Objects that exist before the dataplane starts are programmed (the NADs'
// initial list covers the nodes the node watch no longer maps at start),
// and a node created after the start still reaches every network.
func TestStartProgramsWhatExistedBefore(t *testing.T) {
	s := newStack(t)
	node := func(name, id string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{ovnk.AnnotationNodeID: id}}}
	}
	s.create(node("node1", "2"), node("node2", "3"), namespace("ns1"))
	s.createNAD(&nadv1.NetworkAttachmentDefinition{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "tenant-blue",
			Labels:      map[string]string{ovnk.LabelUserDefinedNetwork: ""},
			Annotations: map[string]string{ovnk.AnnotationNetworkID: "1", ovnk.AnnotationTunnelKeys: "[16711685,16715780]"}},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: l2Config},
	})
	if _, err := Setup(s.ctx, s.mgr, s.opts()); err != nil {
		t.Fatal(err)
	}
	s.start()
	const tr = "ns1_tenant.blue_transit_router"
	s.eventually("the nodes that existed before the start", func() bool {
		show := s.nbctl("show", tr)
		return strings.Contains(show, "trtor-GR_ns1_tenant.blue_node1") && strings.Contains(show, "trtor-GR_ns1_tenant.blue_node2")
	})
	s.create(node("node3", "4"))
	s.eventually("a node created after the start", func() bool {
		return strings.Contains(s.nbctl("show", tr), "trtor-GR_ns1_tenant.blue_node3")
	})
}

// A node update that changes only k8s.ovn.org/node-subnets queues the NADs
// of the networks whose entry changed, and only for a multi-VTEP node; any
// other fact, or an annotation that cannot be read, queues every NAD.
func TestMultiVTEPNodeUpdateQueuesOnlyChangedNetworks(t *testing.T) {
	scheme := nadScheme(t)
	l3 := func(ns, name, network string) *nadv1.NetworkAttachmentDefinition {
		return &nadv1.NetworkAttachmentDefinition{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{ovnk.LabelUserDefinedNetwork: ""}},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"` + network +
				`","topology":"layer3","role":"primary","subnets":"10.1.0.0/16/24"}`},
		}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithIndex(&nadv1.NetworkAttachmentDefinition{}, NADNetworkField, NADNetwork).
		WithObjects(l3("a", "green", "cluster.udn.green"), l3("b", "green", "cluster.udn.green"),
			l3("a", "blue", "a_blue"), l2NAD("c", "red")).Build()
	h := (&MultiVTEPReconciler{Client: c}).nodeHandler()
	const (
		multi  = `["10.0.0.2","10.0.0.3"]`
		single = `["10.0.0.2"]`
	)
	withFacts := func(encaps, subnets string) *corev1.Node {
		n := factsNode()
		n.Annotations[ovnk.AnnotationNodeEncapIPs] = encaps
		n.Annotations[ovnk.AnnotationNodeTransitSwitchPortTunnelIDs] = "[6,7]"
		n.Annotations[ovnk.AnnotationNodeSubnets] = subnets
		return n
	}
	before := `{"a_blue":["10.2.1.0/24"],"cluster.udn.green":["10.1.1.0/24"]}`
	greenMoved := `{"a_blue":["10.2.1.0/24"],"cluster.udn.green":["10.1.2.0/24"]}`
	everyNAD := []string{"a/blue", "a/green", "b/green", "c/red"}
	for name, tc := range map[string]struct {
		old, cur *corev1.Node
		want     []string
	}{
		"green's subnet on a multi-VTEP node":  {withFacts(multi, before), withFacts(multi, greenMoved), []string{"a/green", "b/green"}},
		"blue removed on a multi-VTEP node":    {withFacts(multi, before), withFacts(multi, `{"cluster.udn.green":["10.1.1.0/24"]}`), []string{"a/blue"}},
		"green's subnet on a single-VTEP node": {withFacts(single, before), withFacts(single, greenMoved), nil},
		"encap IPs and subnets":                {withFacts(single, before), withFacts(multi, greenMoved), everyNAD},
		"zone": {withFacts(multi, before), func() *corev1.Node {
			n := withFacts(multi, before)
			n.Annotations[ovnk.AnnotationZoneName] = "zone-b"
			return n
		}(), everyNAD},
		"unreadable subnets": {withFacts(multi, before), withFacts(multi, `{"cluster.udn.green":`), everyNAD},
	} {
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		h.Update(context.Background(), event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.cur}, q)
		var got []string
		for q.Len() > 0 {
			r, _ := q.Get()
			got = append(got, r.String())
			q.Done(r)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: queued %v, want %v", name, got, tc.want)
		}
		q.ShutDown()
	}
}

func l2NAD(ns, name string) *nadv1.NetworkAttachmentDefinition {
	return &nadv1.NetworkAttachmentDefinition{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{ovnk.LabelUserDefinedNetwork: ""}},
		Spec:       nadv1.NetworkAttachmentDefinitionSpec{Config: l2Config},
	}
}
