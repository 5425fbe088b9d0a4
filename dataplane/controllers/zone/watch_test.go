package zone

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/udnkit/udnkit/dataplane/controllers/internal/ctrltest"
	"github.com/udnkit/udnkit/ovnk"
)

// TestNodeFactsCoverWhatReadersRead: an edit that changes what a
// controller reads of a node passes its Node watch's predicate, and an edit
// of anything else does not (so the watch drops it).
func TestNodeFactsCoverWhatReadersRead(t *testing.T) {
	inZoneA := InZone("zone-a")
	readers := map[string]struct {
		facts NodeFacts
		read  func(*corev1.Node) any
	}{
		"layer2 and live migration": {Layer2NodeFacts, func(n *corev1.Node) any {
			l2, ok, err := Layer2NodeFromNode(n)
			gw, gwOK, gwErr := ovnk.DecodeL3GatewayConfig(n)
			return fmt.Sprint(l2, ok, err, inZoneA(n), gw, gwOK, gwErr)
		}},
		"multi-VTEP": {VTEPNodeFacts, func(n *corev1.Node) any {
			v, err := VTEPNodeFromNode(n)
			s, serr := NodeSubnetsFromNode(n, "tenant.green_green")
			return fmt.Sprint(v, err, s, serr, inZoneA(n))
		}},
	}
	for name, r := range readers {
		for edit, f := range nodeEdits {
			old, cur := ctrltest.FactsNode(), ctrltest.FactsNode()
			f(cur)
			reads := !reflect.DeepEqual(r.read(old), r.read(cur))
			passes := r.facts.Changed(old, cur)
			if reads != passes {
				t.Errorf("%s, edit of %s: the reader's result changes: %v, the predicate passes: %v", name, edit, reads, passes)
			}
		}
	}
	// Every fact listed is one the edits exercise.
	for _, k := range slices.Concat(Layer2NodeFacts.annotations, VTEPNodeFacts.annotations) {
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

// nodeEdits change one fact of factsNode to another valid value each.
var nodeEdits = map[string]func(*corev1.Node){
	ovnk.AnnotationL3GatewayConfig: func(n *corev1.Node) {
		n.Annotations[ovnk.AnnotationL3GatewayConfig] = `{"default":{"mode":"shared","bridge-id":"breth0","mac-address":"0a:58:c0:00:02:02","ip-addresses":["192.0.2.2/24"]}}`
	},
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

// The node and pod watches drop the creates of their initial list (the
// NADs' own initial list queues every NAD) and pass every later create,
// delete and fact-changing update.
func TestSecondaryWatchesSkipOnlyTheInitialList(t *testing.T) {
	node, pod := ctrltest.FactsNode(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	for name, tc := range map[string]struct {
		f   predicate.Funcs
		obj client.Object
	}{
		"layer2 node": {Layer2NodeFacts.Funcs(), node}, "multi-VTEP node": {VTEPNodeFacts.Funcs(), node},
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
