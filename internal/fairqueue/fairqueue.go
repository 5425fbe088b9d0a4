// Package fairqueue is a controller work queue that serves the owners of its
// requests (their namespaces) in turn rather than first come, first served,
// so a flood from one owner does not hold up another's requests.
package fairqueue

import (
	"container/list"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ByNamespace is a controller's work queue (controller.Options.NewQueue)
// that hands out ready requests round-robin over their namespaces: a
// namespace with a thousand objects queued delays another namespace's
// object by one reconcile per busy namespace, not by the thousand.
// controller-runtime's priority queue orders by priority and then FIFO,
// with no notion of who an item belongs to, so a flood of equal-priority
// events still runs first.
func ByNamespace(name string, rateLimiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return New(func(r reconcile.Request) string { return r.Namespace })(name, rateLimiter)
}

// New returns a controller.Options.NewQueue whose queue hands out ready
// items round-robin over key(item). It is client-go's rate-limiting and
// delaying queue (deduplication, an item never processed twice at once,
// per-item backoff, metrics under the controller's name) over roundRobin's
// order instead of one FIFO.
func New[T comparable](key func(T) string) func(name string, rateLimiter workqueue.TypedRateLimiter[T]) workqueue.TypedRateLimitingInterface[T] {
	return func(name string, rateLimiter workqueue.TypedRateLimiter[T]) workqueue.TypedRateLimitingInterface[T] {
		fifo := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[T]{
			Name:  name,
			Queue: newRoundRobin(key),
		})
		return workqueue.NewTypedRateLimitingQueueWithConfig(rateLimiter, workqueue.TypedRateLimitingQueueConfig[T]{
			Name: name,
			DelayingQueue: workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[T]{
				Name: name, Queue: fifo,
			}),
		})
	}
}

// roundRobin is a workqueue.Queue: one FIFO per key, popped in turn. The
// workqueue calls it under its own lock, so it has none; Push is never given an item already queued (the workqueue
// deduplicates), so Touch has nothing to do.
type roundRobin[T comparable] struct {
	key   func(T) string
	byKey map[string]*keyQueue[T]
	// turns holds the *keyQueue of every key with items, in turn order;
	// next is the one Pop serves (nil: the front).
	turns *list.List
	next  *list.Element
	n     int
}

type keyQueue[T comparable] struct {
	key   string
	items []T
	head  int
	turn  *list.Element
}

func newRoundRobin[T comparable](key func(T) string) *roundRobin[T] {
	return &roundRobin[T]{key: key, byKey: map[string]*keyQueue[T]{}, turns: list.New()}
}

// Push implements workqueue.Queue. A key that had nothing queued takes its
// turn just before the one served next: after every key already waiting.
func (q *roundRobin[T]) Push(item T) {
	k := q.key(item)
	kq := q.byKey[k]
	if kq == nil {
		kq = &keyQueue[T]{key: k}
		q.byKey[k] = kq
	}
	kq.items = append(kq.items, item)
	if kq.turn == nil {
		if q.next != nil {
			kq.turn = q.turns.InsertBefore(kq, q.next)
		} else {
			kq.turn = q.turns.PushBack(kq)
		}
	}
	q.n++
}

// Pop implements workqueue.Queue: the oldest item of the key whose turn it
// is. The workqueue pops only when Len() > 0.
func (q *roundRobin[T]) Pop() T {
	e := q.next
	if e == nil {
		e = q.turns.Front()
	}
	kq := e.Value.(*keyQueue[T])
	item := kq.items[kq.head]
	var zero T
	kq.items[kq.head] = zero
	kq.head++
	q.next = e.Next()
	if kq.head == len(kq.items) {
		q.turns.Remove(e)
		delete(q.byKey, kq.key)
	} else if kq.head > len(kq.items)/2 && kq.head > 64 {
		// Reclaim the popped half, so a long queue's memory follows its length.
		kq.items = append(kq.items[:0], kq.items[kq.head:]...)
		kq.head = 0
	}
	if q.next == nil {
		q.next = q.turns.Front()
	}
	q.n--
	return item
}

// Len implements workqueue.Queue.
func (q *roundRobin[T]) Len() int { return q.n }

// Touch implements workqueue.Queue: a re-added item keeps its place.
func (q *roundRobin[T]) Touch(T) {}
