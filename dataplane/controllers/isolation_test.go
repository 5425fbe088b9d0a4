package controllers

import (
	"strings"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/ovnk"
)

// One bad node must not stall the cluster: a duplicate node ID or a malformed
// NAD is left out on its own, with a Warning Event and
// udnkit_dataplane_skipped_objects_total, and every network keeps being
// programmed with the good nodes.
func TestOneBadObjectAffectsOnlyItself(t *testing.T) {
	s := newStack(t)
	ctx := s.ctx
	if _, err := Setup(ctx, s.mgr, s.opts()); err != nil {
		t.Fatal(err)
	}
	s.start()
	dupBefore := testutil.ToFloat64(zone.SkippedObjects.WithLabelValues("Node", "DuplicateNodeID"))
	badBefore := testutil.ToFloat64(zone.SkippedObjects.WithLabelValues("Node", zone.ReasonInvalidNodeID))
	nadBefore := testutil.ToFloat64(zone.SkippedObjects.WithLabelValues("NetworkAttachmentDefinition", zone.ReasonMalformedNetwork))
	noChassisBefore := testutil.ToFloat64(zone.SkippedObjects.WithLabelValues("Node", topology.SkipNoChassis))

	node := func(name, id string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{ovnk.AnnotationNodeID: id}}}
	}
	// "node-b2" is younger than node-b (same second: the name decides).
	s.create(node("node-a", "2"), node("node-b", "3"), node("node-b2", "3"), node("node-huge", "99999999"))
	// node-d's ovnkube-node has not published its chassis yet: it waits,
	// reported, and is never given one guessed from its name.
	nodeD := node("node-d", "5")
	if err := s.c.Create(ctx, nodeD); err != nil {
		t.Fatal(err)
	}
	l2 := func(ns, name, subnet, keys string) *nadv1.NetworkAttachmentDefinition {
		return &nadv1.NetworkAttachmentDefinition{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
				Labels:      map[string]string{ovnk.LabelUserDefinedNetwork: ""},
				Annotations: map[string]string{ovnk.AnnotationNetworkID: "1", ovnk.AnnotationTunnelKeys: keys}},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"` + ns + `_` + name + `",
 "netAttachDefName":"` + ns + `/` + name + `","topology":"layer2","role":"primary","subnets":"` + subnet + `","mtu":1400}`},
		}
	}
	s.create(namespace("iso1"), namespace("iso2"), namespace("iso3"))
	// iso3's tunnel keys are outside the interconnect range: never sent to OVN.
	bad := l2("iso3", "net", "10.3.0.0/16", "[1,2]")
	s.createNAD(l2("iso1", "net", "10.1.0.0/16", "[16711685,16715780]"), l2("iso2", "net", "10.2.0.0/16", "[16711686,16715781]"), bad)

	for _, tr := range []string{"iso1_net_transit_router", "iso2_net_transit_router"} {
		s.eventually(tr+" programmed with the good nodes", func() bool {
			show := s.nbctl("show", tr)
			return strings.Contains(show, "trtor-GR_"+strings.TrimSuffix(tr, "_transit_router")+"_node-a") &&
				strings.Contains(show, "trtor-GR_"+strings.TrimSuffix(tr, "_transit_router")+"_node-b")
		})
		show := s.nbctl("show", tr)
		if strings.Contains(show, "node-b2") || strings.Contains(show, "node-huge") || strings.Contains(show, "node-d") {
			t.Errorf("%s programs a node that must be left out:\n%s", tr, show)
		}
	}
	if out := s.nbctl("--bare", "--columns=name", "find", "Logical_Router", "name=iso3_net_transit_router"); strings.TrimSpace(out) != "" {
		t.Errorf("the network with out-of-range tunnel keys reached OVN: %q", out)
	}
	if got := s.nbctl("--bare", "--columns=options", "find", "Logical_Router_Port", "name=trtor-GR_iso1_net_node-b"); !strings.Contains(got, "requested-tnl-key=13") {
		t.Errorf("the older node-b keeps ID 3 (its port's tunnel key 10+3): %q", got)
	}

	s.eventually("metrics and events for each bad object", func() bool {
		if testutil.ToFloat64(zone.SkippedObjects.WithLabelValues("Node", "DuplicateNodeID")) <= dupBefore ||
			testutil.ToFloat64(zone.SkippedObjects.WithLabelValues("Node", zone.ReasonInvalidNodeID)) <= badBefore ||
			testutil.ToFloat64(zone.SkippedObjects.WithLabelValues("NetworkAttachmentDefinition", zone.ReasonMalformedNetwork)) <= nadBefore ||
			testutil.ToFloat64(zone.SkippedObjects.WithLabelValues("Node", topology.SkipNoChassis)) <= noChassisBefore {
			return false
		}
		var evs eventsv1.EventList
		if err := s.c.List(ctx, &evs); err != nil {
			return false
		}
		want := map[string]string{"node-b2": "node ID 3 is also older node node-b's", "node-huge": `"99999999" is not a node ID`,
			"net": "tunnel key 1 is outside the interconnect range", "node-d": "node node-d has no k8s.ovn.org/node-chassis-id yet"}
		for _, e := range evs.Items {
			if e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, want[e.Regarding.Name]) && want[e.Regarding.Name] != "" {
				delete(want, e.Regarding.Name)
			}
		}
		return len(want) == 0
	})

	// Once published, node-d joins with that chassis.
	patch := client.MergeFrom(nodeD.DeepCopy())
	metav1.SetMetaDataAnnotation(&nodeD.ObjectMeta, ovnk.AnnotationNodeChassisID, chassisOf("node-d"))
	if err := s.c.Patch(ctx, nodeD, patch); err != nil {
		t.Fatal(err)
	}
	s.eventually("node-d programmed with its published chassis", func() bool {
		gr := s.nbctl("--bare", "--columns=options", "find", "Logical_Router", "name=GR_iso1_net_node-d")
		port := s.nbctl("--bare", "--columns=options", "find", "Logical_Router_Port", "name=trtor-GR_iso1_net_node-d")
		return strings.Contains(gr, "chassis="+chassisOf("node-d")) && strings.Contains(port, "requested-tnl-key=15")
	})
}
