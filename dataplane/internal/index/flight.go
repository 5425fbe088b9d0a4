package index

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// linkLookUps counts the look-ups of children's parents on the server
// (LookUp), by how: "children" (a select per child) or "all" (every
// router's and switch's children, which replaces the index's links).
var linkLookUps = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "udnkit_ovn_link_lookups_total",
	Help: "Look-ups of OVN Northbound children whose parent the dataplane did not know, by how: children (a select per child) or all (every router's and switch's children).",
}, []string{"how"})

func init() { metrics.Registry.MustRegister(linkLookUps) }

// flights are this process's transactions between their send and the
// Learn of the links they made. The server shows a transaction's new rows
// to the cache before it replies, so until its links are learnt its new
// children are in no known parent, as another client's would be. Looking
// them up on the server would take, with more than lookUpAtMost of them (a
// network's ports on hundreds of nodes), a read of every link of the
// database, once per network written meanwhile: work growing with the
// square of the networks. A plan waits for the transactions in flight, then
// looks up what is still unlinked.
type flights struct {
	mu     sync.Mutex
	next   uint64
	flying map[uint64]chan struct{}
}

// Sending marks a transaction of this process as sent; the caller calls
// the returned done once the links it made are learnt (Learn), or once it
// failed.
func (ix *Index) Sending() (done func()) {
	f := &ix.flights
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.flying == nil {
		f.flying = map[uint64]chan struct{}{}
	}
	id, ch := f.next, make(chan struct{})
	f.next++
	f.flying[id] = ch
	return sync.OnceFunc(func() {
		f.mu.Lock()
		delete(f.flying, id)
		f.mu.Unlock()
		close(ch)
	})
}

// FlightWait bounds how long a plan waits for this process's transactions
// in flight, in all (after it, what is still unlinked is looked up).
const FlightWait = 5 * time.Second

// AwaitFlights waits until every transaction in flight now is done (not
// those sent later), at most timeout; it says whether there were any.
func (ix *Index) AwaitFlights(timeout time.Duration) bool {
	f := &ix.flights
	f.mu.Lock()
	var chs []chan struct{}
	for _, ch := range f.flying {
		chs = append(chs, ch)
	}
	f.mu.Unlock()
	if len(chs) == 0 {
		return false
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	for _, ch := range chs {
		select {
		case <-ch:
		case <-t.C:
			return true
		}
	}
	return true
}
