package zone

import (
	"slices"
	"testing"
	"time"

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

// TestTopologyWaitBacksOff: a request whose looks keep finding no topology
// is requeued after TopologyWait, then twice as long at each next look, up
// to 8 × TopologyWait; a look that finds the topology, and the network's
// Applied, start it again at TopologyWait. Another request's backstop is
// its own.
func TestTopologyWaitBacksOff(t *testing.T) {
	w := (&TopologyWake{}).Waiter()
	blue := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "tenant-blue", Name: "blue"}}
	green := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "tenant-green", Name: "green"}}
	backstops := func(req reconcile.Request, n int) []time.Duration {
		var out []time.Duration
		for range n {
			out = append(out, w.backstop(req))
		}
		return out
	}
	s := TopologyWait
	if got, want := backstops(blue, 6), []time.Duration{s, 2 * s, 4 * s, 8 * s, 8 * s, 8 * s}; !slices.Equal(got, want) {
		t.Errorf("blue's backstops %v, want %v", got, want)
	}
	if got := w.backstop(green); got != s {
		t.Errorf("green's first backstop %v after blue's, want %v", got, s)
	}
	w.found(blue)
	if got := backstops(blue, 2); !slices.Equal(got, []time.Duration{s, 2 * s}) {
		t.Errorf("blue's backstops after a look found the topology: %v", got)
	}
	w.wait("tenant-blue_blue", blue)
	(&TopologyWake{waiters: []*TopologyWaiter{w}}).Applied("tenant-blue_blue")
	expectQueued(t, "blue after its Applied", w, blue)
	if got := w.backstop(blue); got != s {
		t.Errorf("blue's backstop after its network's Applied: %v, want %v", got, s)
	}
}
