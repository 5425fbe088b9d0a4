package zone

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestTopologyWakeQueuesOnlyTheWaitingNADs: a network's Applied queues, in
// each controller, the NADs that waited for that network, once; another
// network's Applied and a second Applied queue nothing, and news beyond
// the buffer is dropped rather than blocking the topology controller.
func TestTopologyWakeQueuesOnlyTheWaitingNADs(t *testing.T) {
	wake := &TopologyWake{}
	ports, policies := wake.Waiter(), wake.Waiter()
	blue := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "tenant-blue", Name: "blue"}}
	green := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "tenant-green", Name: "green"}}
	ports.wait("tenant-blue_blue", blue)
	policies.wait("tenant-green_green", green)

	wake.Applied("tenant-red_red")
	expectQueued(t, "ports after another network's Applied", ports)
	wake.Applied("tenant-blue_blue")
	expectQueued(t, "ports after blue's Applied", ports, blue)
	expectQueued(t, "policies after blue's Applied", policies)
	wake.Applied("tenant-blue_blue")
	expectQueued(t, "ports after blue's second Applied", ports)
	wake.Applied("tenant-green_green")
	expectQueued(t, "policies after green's Applied", policies, green)

	for i := range wakeBuffer + 1 {
		ports.wait("tenant-blue_blue", reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: string(rune('a' + i%26))}})
		wake.Applied("tenant-blue_blue")
	}
	if n := len(ports.ch); n != wakeBuffer {
		t.Errorf("%d queued after overfilling, want the buffer's %d", n, wakeBuffer)
	}

	// A controller that finds the topology missing by its own means
	// (multi-VTEP's rows.MissingRowError) records its wait with Await.
	vtep := wake.Waiter()
	vtep.Await("tenant-green_green", green)
	wake.Applied("tenant-green_green")
	expectQueued(t, "multi-VTEP after green's Applied", vtep, green)
	(*TopologyWaiter)(nil).Await("tenant-green_green", green)

	var none *TopologyWake
	none.Applied("tenant-blue_blue")
	if w := none.Waiter(); w != nil {
		t.Errorf("a nil TopologyWake gave a waiter %v", w)
	}
}

func expectQueued(t *testing.T, what string, w *TopologyWaiter, want ...reconcile.Request) {
	t.Helper()
	var got []reconcile.Request
	for len(w.ch) > 0 {
		e := <-w.ch
		got = append(got, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: e.Object.GetNamespace(), Name: e.Object.GetName()}})
	}
	if len(got) != len(want) || (len(want) == 1 && got[0] != want[0]) {
		t.Errorf("%s: queued %v, want %v", what, got, want)
	}
}
