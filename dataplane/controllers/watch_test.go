package controllers

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	"github.com/udnkit/udnkit/dataplane/controllers/internal/ctrltest"
	"github.com/udnkit/udnkit/dataplane/controllers/multivtep"
	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/ovnk"
)

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
	scheme := ctrltest.NADScheme(t)
	l3 := func(ns, name, network string) *nadv1.NetworkAttachmentDefinition {
		return &nadv1.NetworkAttachmentDefinition{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{ovnk.LabelUserDefinedNetwork: ""}},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"` + network +
				`","topology":"layer3","role":"primary","subnets":"10.1.0.0/16/24"}`},
		}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithIndex(&nadv1.NetworkAttachmentDefinition{}, zone.NADNetworkField, zone.NADNetwork).
		WithObjects(l3("a", "green", "cluster.udn.green"), l3("b", "green", "cluster.udn.green"),
			l3("a", "blue", "a_blue"), l2NAD("c", "red")).Build()
	h := (&multivtep.Reconciler{Client: c}).NodeHandler()
	const (
		multi  = `["10.0.0.2","10.0.0.3"]`
		single = `["10.0.0.2"]`
	)
	withFacts := func(encaps, subnets string) *corev1.Node {
		n := ctrltest.FactsNode()
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
