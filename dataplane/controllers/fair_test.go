package controllers

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udnkit/udnkit/ovnk"
)

// floodNetworks is how many networks the flood queues at once in one
// namespace.
const floodNetworks = 200

// A flood of networks queued at once in one namespace does not hold up a
// network of another namespace: its rows appear within 10 s, while most of
// the flood still waits its turn. With controller-runtime's queue
// (Options.FIFOQueue) the other network waits behind the whole flood.
func TestFloodInOneNamespaceDoesNotHoldUpAnother(t *testing.T) {
	f := floodThenOther(t, false)
	t.Logf("the other namespace's network programmed after %s; of the flood's %d networks %d were programmed when it was "+
		"created, %d when its rows appeared", f.wait, floodNetworks, f.before, f.after)
	if f.wait > 10*time.Second {
		t.Errorf("the other namespace's network waited %s for its rows, want at most 10 s", f.wait)
	}
	if waiting := floodNetworks - f.before; f.after-f.before >= waiting/2 {
		t.Errorf("%d of the flood's %d waiting networks were programmed before the other namespace's network, want fewer than half",
			f.after-f.before, waiting)
	}
}

// flood is what floodThenOther saw: the quiet network's wait for its rows,
// and how many of the flood's networks had theirs when the quiet network
// was created and when its rows appeared.
type flood struct {
	wait          time.Duration
	before, after int
}

// floodThenOther queues floodNetworks primary Layer2 networks in namespace
// "flood" at once (their NADs exist before the controllers start, so the
// controllers' first listing queues them all), then creates one in
// namespace "quiet". It returns how long the quiet network waited for its
// transit router and how many of the flood's transit routers existed.
func floodThenOther(t *testing.T, fifo bool) flood {
	s := newStack(t)
	o := s.opts()
	o.FIFOQueue = fifo
	if _, err := Setup(s.ctx, s.mgr, o); err != nil {
		t.Fatal(err)
	}
	s.create(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1", Annotations: map[string]string{ovnk.AnnotationNodeID: "2"}}},
		namespace("flood"), namespace("quiet"))
	nad := func(ns, name string, i int) *nadv1.NetworkAttachmentDefinition {
		keys := fmt.Sprintf("[%d,%d]", ovnk.FirstAllocatedTunnelKey+2*i, ovnk.FirstAllocatedTunnelKey+2*i+1)
		return &nadv1.NetworkAttachmentDefinition{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
				Labels:      map[string]string{ovnk.LabelUserDefinedNetwork: ""},
				Annotations: map[string]string{ovnk.AnnotationNetworkID: strconv.Itoa(i + 1), ovnk.AnnotationTunnelKeys: keys}},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: fmt.Sprintf(`{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay",`+
				`"name":"%s_%s","netAttachDefName":"%s/%s","topology":"layer2","role":"primary","subnets":"10.20.0.0/24"}`,
				ns, name, ns, name)},
		}
	}
	for i := range floodNetworks {
		s.createNAD(nad("flood", fmt.Sprintf("net-%d", i), i))
	}
	routers := func() []string {
		return strings.Fields(s.nbctl("--bare", "--columns=name", "list", "Logical_Router"))
	}
	count := func(rs []string, prefix string) int {
		n := 0
		for _, r := range rs {
			if strings.HasPrefix(r, prefix) && strings.HasSuffix(r, "_transit_router") {
				n++
			}
		}
		return n
	}
	s.start()
	var before int
	for deadline := time.Now().Add(time.Minute); before == 0; before = count(routers(), "flood_") {
		if time.Now().After(deadline) {
			t.Fatalf("the flood's first network is not programmed; NB:\n%s", s.nbctl("show"))
		}
	}

	start := time.Now()
	s.createNAD(nad("quiet", "tenant-red", floodNetworks))
	for deadline := start.Add(5 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		rs := routers()
		if count(rs, "quiet_tenant.red_") == 1 {
			return flood{wait: time.Since(start), before: before, after: count(rs, "flood_")}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the quiet namespace's network has no transit router after %s; %d of the flood's programmed",
				time.Since(start), count(rs, "flood_"))
		}
	}
}
