package zone

import (
	"context"
	"sync"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/udnkit/udnkit/dataplane"
)

// TopologyWake tells the controllers whose rows wait for a Primary
// network's topology in the zone (WaitForTopology) that the topology
// controllers have applied it, so the waiting NAD reconciles run at once
// instead of TopologyWait later. TopologyWait's requeue stays as the
// backstop: for a network OVN-Kubernetes programs here (no Apply comes),
// and for news a full queue dropped. One TopologyWake serves a zone's
// manager; a nil one wakes nobody.
type TopologyWake struct {
	mu      sync.Mutex
	waiters []*TopologyWaiter
}

// Waiter registers one waiting controller: give its Source to the
// controller's builder and look with its WaitForTopology.
func (t *TopologyWake) Waiter() *TopologyWaiter {
	if t == nil {
		return nil
	}
	w := &TopologyWaiter{ch: make(chan event.GenericEvent, wakeBuffer), waiting: map[string]map[reconcile.Request]struct{}{},
		looks: map[reconcile.Request]int{}}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.waiters = append(t.waiters, w)
	return w
}

// Applied says the network's topology is applied in the zone: every
// reconcile waiting for it is queued again.
func (t *TopologyWake) Applied(network string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, w := range t.waiters {
		w.wake(network)
	}
}

// Watch registers one waiting controller on its builder b: the builder
// gains the waiter's Source, and the waiter (nil when t is) records the
// waits its WaitForTopology sees.
func (t *TopologyWake) Watch(b *builder.Builder) (*builder.Builder, *TopologyWaiter) {
	w := t.Waiter()
	if w == nil {
		return b, nil
	}
	return b.WatchesRawSource(w.Source()), w
}

// wakeBuffer bounds the news a waiter holds before its controller reads
// them; more are dropped (the backstop requeue still comes).
const wakeBuffer = 1024

// TopologyWaiter is one controller's NAD reconciles waiting for their
// network's topology.
type TopologyWaiter struct {
	ch      chan event.GenericEvent
	mu      sync.Mutex
	waiting map[string]map[reconcile.Request]struct{}
	// looks: each waiting request's looks in a row that found no topology
	// (forgotten when one finds it, or when it is woken).
	looks map[reconcile.Request]int
}

// backstopDoublings bounds how often a waiting request's backstop doubles
// (TopologyWait's 5 s up to 40 s).
const backstopDoublings = 3

// Source queues the NADs whose network's topology was applied.
func (w *TopologyWaiter) Source() source.Source {
	return source.Channel(w.ch, &handler.EnqueueRequestForObject{})
}

// WaitForTopology is the package's WaitForTopology for req's reconcile,
// which the network's Applied then queues again. The wait is recorded
// before the second look, so an Apply between the first look and the
// record is not missed (the record is then stale: one needless reconcile).
// The backstop requeue doubles with each look in a row that finds no
// topology (see backstop).
func (w *TopologyWaiter) WaitForTopology(ctx context.Context, ovn *dataplane.Client, network, topology string, req reconcile.Request) (reconcile.Result, bool) {
	res, wait := WaitForTopology(ctx, ovn, network, topology)
	if w == nil {
		return res, wait
	}
	if wait {
		w.wait(network, req)
		res, wait = WaitForTopology(ctx, ovn, network, topology)
	}
	if wait {
		res.RequeueAfter = w.backstop(req)
	} else {
		w.found(req)
	}
	return res, wait
}

// backstop is the requeue of req's look that found no topology:
// TopologyWait at its first look, doubled at each next one in a row, up
// to backstopDoublings times. The network's Applied queues it first: the
// backstop is for news lost, and while the zone's topology controllers
// work through many networks a fixed one queued each waiting reconcile
// again every TopologyWait, more often the longer they took (the
// reconciles per network grew with the number of networks).
func (w *TopologyWaiter) backstop(req reconcile.Request) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.looks[req]
	w.looks[req] = n + 1
	return TopologyWait << min(n, backstopDoublings)
}

// found forgets req's looks once one finds the topology.
func (w *TopologyWaiter) found(req reconcile.Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.looks, req)
}

// Await records that req's reconcile waits for network's topology, for a
// controller that finds the topology missing by its own means (a
// rows.MissingRowError): the caller looks again after the record, so an
// Apply between its first look and the record is not missed. A nil
// waiter records nothing.
func (w *TopologyWaiter) Await(network string, req reconcile.Request) {
	if w != nil {
		w.wait(network, req)
	}
}

// wait records that req's reconcile waits for network's topology.
func (w *TopologyWaiter) wait(network string, req reconcile.Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.waiting[network] == nil {
		w.waiting[network] = map[reconcile.Request]struct{}{}
	}
	w.waiting[network][req] = struct{}{}
}

// wake queues the reconciles waiting for network, never blocking.
func (w *TopologyWaiter) wake(network string) {
	w.mu.Lock()
	reqs := w.waiting[network]
	delete(w.waiting, network)
	for req := range reqs {
		delete(w.looks, req)
	}
	w.mu.Unlock()
	for req := range reqs {
		nad := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name}}
		select {
		case w.ch <- event.GenericEvent{Object: nad}:
		default:
		}
	}
}
