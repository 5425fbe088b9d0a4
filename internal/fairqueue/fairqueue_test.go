package fairqueue

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func req(ns, name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
}

// The fair queue serves namespaces in turn, each in its own FIFO order: a
// namespace that queues after a thousand requests of another is served
// second, not a thousand and first.
func TestFairQueueServesNamespacesInTurn(t *testing.T) {
	q := ByNamespace("test-fair", workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Millisecond, time.Second))
	defer q.ShutDown()
	for i := range 1000 {
		q.Add(req("flood", fmt.Sprint(i)))
	}
	q.Add(req("quiet", "a"))
	q.Add(req("other", "a"))
	q.Add(req("quiet", "b"))
	q.Add(req("flood", "0")) // queued already: deduplicated
	var got []reconcile.Request
	for range 7 {
		r, _ := q.Get()
		got = append(got, r)
		q.Done(r)
	}
	want := []reconcile.Request{req("flood", "0"), req("quiet", "a"), req("other", "a"), req("flood", "1"), req("quiet", "b"), req("flood", "2"), req("flood", "3")}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("order %v, want %v", got, want)
	}
	if q.Len() != 1000-4 {
		t.Errorf("Len() = %d, want %d (each request once)", q.Len(), 1000-4)
	}
}

// A request added again while it is processed is served once more after
// Done, never twice at once; a rate-limited one comes back after its delay.
func TestFairQueueKeepsWorkqueueSemantics(t *testing.T) {
	q := ByNamespace("test-fair-semantics", workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](10*time.Millisecond, time.Second))
	defer q.ShutDown()
	a := req("ns", "a")
	q.Add(a)
	r, _ := q.Get()
	q.Add(a)
	if q.Len() != 0 {
		t.Fatalf("an item in process was queued again: Len() = %d", q.Len())
	}
	q.Done(r)
	if q.Len() != 1 {
		t.Fatalf("after Done: Len() = %d, want 1", q.Len())
	}
	r, _ = q.Get()
	q.AddRateLimited(r)
	q.Done(r)
	start := time.Now()
	r, _ = q.Get()
	if r != a || time.Since(start) < 5*time.Millisecond {
		t.Errorf("rate-limited item back as %v after %s", r, time.Since(start))
	}
	q.Done(r)
}

// New serves any key in turn: here a request's name prefix.
func TestNewServesAnyKeyInTurn(t *testing.T) {
	q := New(func(s string) string { return s[:1] })("test-fair-key", workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, time.Second))
	defer q.ShutDown()
	for _, s := range []string{"a1", "a2", "a3", "b1", "b2", "c1"} {
		q.Add(s)
	}
	var got []string
	for range 6 {
		s, _ := q.Get()
		got = append(got, s)
		q.Done(s)
	}
	if want := "[a1 b1 c1 a2 b2 a3]"; fmt.Sprint(got) != want {
		t.Errorf("order %v, want %s", got, want)
	}
}
