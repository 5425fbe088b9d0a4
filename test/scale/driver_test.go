package main

import (
	"context"
	"net/netip"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/udnkit/udnkit/apis/scheme"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/test/scale/internal/metrics"
	"github.com/udnkit/udnkit/test/scale/internal/report"
)

// A poll decodes an object again only when its resourceVersion changed:
// decoding every node's host subnets on each poll made the driver's CPU
// grow quadratically with the run.
func TestDecodedOnlyWhenChanged(t *testing.T) {
	m := map[string]versioned[int]{}
	calls := 0
	decode := func() int { calls++; return calls }
	for _, step := range []struct {
		rv        string
		want      int
		wantCalls int
	}{{"1", 1, 1}, {"1", 1, 1}, {"2", 2, 2}, {"2", 2, 2}} {
		if got := decoded(m, "node-a", step.rv, decode); got != step.want || calls != step.wantCalls {
			t.Errorf("rv %s: got %d after %d decodes, want %d after %d", step.rv, got, calls, step.want, step.wantCalls)
		}
	}
}

func TestConvergenceCounts(t *testing.T) {
	s := report.NewSize("t", 2, 2, 2) // network 0: Primary Layer2 UDN, network 1: Primary Layer3 UDN
	nad := func(i int, name string, withID bool) *nadv1.NetworkAttachmentDefinition {
		n := testobj.MakeNAD(namespaceName(i), "net").Managed().Annotations(map[string]string{ovnk.AnnotationNetworkName: name}).Obj()
		if withID {
			ovnk.NetworkIDs{ID: i + 1, HasID: true}.Encode(n.Annotations)
		}
		return n
	}
	node := func(i int, subnets map[string][]netip.Prefix) *corev1.Node {
		n := testobj.MakeNode(nodeName(i))
		if subnets != nil {
			n.Annotation(ovnk.AnnotationNodeSubnets, ovnk.EncodeNodeSubnets(subnets))
		}
		return n.Obj()
	}
	l3 := map[string][]netip.Prefix{"l3": {netip.MustParsePrefix("172.16.1.0/24")}}
	pod := scalePod(0, s)
	pod.Annotations = map[string]string{ovnk.AnnotationPodNetworks: `{"scale-00000/net":{"ip_addresses":["10.100.0.4/16"],"mac_address":"0a:58:0a:64:00:04","role":"primary"}}`}
	objs := []client.Object{nad(0, "l2", true), nad(1, "l3", false), node(0, l3), node(1, nil), pod, scalePod(1, s)}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).Build()
	conv := newConvergence(s)
	want := convergenceCounts{nads: 2, withIDs: 1, l3Names: 1, subnets: 1, addressed: 1}
	for poll := range 2 {
		got, err := conv.count(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("poll %d: %+v, want %+v", poll, got, want)
		}
	}
	// What changes is decoded again.
	var cur corev1.Node
	if err := c.Get(context.Background(), client.ObjectKey{Name: nodeName(1)}, &cur); err != nil {
		t.Fatal(err)
	}
	cur.Annotations = node(1, l3).Annotations
	if err := c.Update(context.Background(), &cur); err != nil {
		t.Fatal(err)
	}
	want.subnets = 2
	if got, err := conv.count(context.Background(), c); err != nil || got != want {
		t.Errorf("after node-0001 got its host subnet: %+v, %v, want %+v", got, err, want)
	}
}

// A restarted dataplane has converged only with both databases connected,
// every NAD queued by its Layer2 controller and no work left.
func TestDataplaneConverged(t *testing.T) {
	metric := func(name string, labels map[string]string, v float64) metrics.Sample {
		return metrics.Sample{Name: name, Labels: labels, Value: v}
	}
	base := func(nb, sb, adds, active float64) metrics.Samples {
		return metrics.Samples{
			metric("udnkit_ovn_connected", map[string]string{"db": "nb"}, nb),
			metric("udnkit_ovn_connected", map[string]string{"db": "sb"}, sb),
			metric("workqueue_adds_total", map[string]string{"name": "dataplane-layer2"}, adds),
			metric("workqueue_adds_total", map[string]string{"name": "dataplane-layer3"}, 100),
			metric("controller_runtime_active_workers", map[string]string{"controller": "dataplane-layer2"}, active),
		}
	}
	for name, tc := range map[string]struct {
		m    metrics.Samples
		want bool
	}{
		"converged":                {base(1, 1, 10, 0), true},
		"Southbound not connected": {base(1, 0, 10, 0), false},
		"not every NAD queued":     {base(1, 1, 9, 0), false},
		"a reconcile running":      {base(1, 1, 10, 1), false},
		"no work queues yet":       {base(1, 1, 10, 0)[:2], false},
	} {
		if got := dataplaneConverged(tc.m, 10); got != tc.want {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
}
