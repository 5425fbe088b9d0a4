package nodes

import (
	"sync/atomic"
	"time"
)

// Bounds of a pass delay: the shortest keeps a lone network change prompt,
// the longest bounds what the last network of a burst waits.
const (
	minPassDelay = 100 * time.Millisecond
	maxPassDelay = 3 * time.Second
)

// pacer spaces the passes over every node that network changes start. Its
// fields are atomics; it holds no lock.
type pacer struct {
	workers int
	// avg is the running average duration in nanoseconds of a reconcile
	// that checks the node's host subnets (see passDelay).
	avg atomic.Int64
	// last is the last pass delay handed out.
	last atomic.Int64
}

// nextPass is the delay of a pass over nodes nodes, recorded as the last.
func (p *pacer) nextPass(nodes int) time.Duration {
	d := p.passDelay(nodes)
	p.last.Store(int64(d))
	return d
}

// passDelay is how long a pass over nodes nodes takes, from the running
// average of a node reconcile that checks host subnets: waiting as long
// before the next pass keeps the passes of a burst of network changes to
// about half of the node workers' time, however many networks each pass
// re-encodes.
func (p *pacer) passDelay(nodes int) time.Duration {
	workers := max(1, p.workers)
	d := time.Duration(p.avg.Load()) * time.Duration(nodes) / time.Duration(workers)
	return min(max(d, minPassDelay), maxPassDelay)
}

// listAge is how old the networks a reconcile uses may be during a burst of
// network changes: the last pass delay.
func (p *pacer) listAge() time.Duration {
	return max(time.Duration(p.last.Load()), minPassDelay)
}

// timeReconcile folds one reconcile's duration into avg (an exponentially
// weighted average, weight 1/8).
func (p *pacer) timeReconcile(start time.Time) {
	took := int64(time.Since(start))
	for {
		old := p.avg.Load()
		next := old + (took-old)/8
		if old == 0 {
			next = took
		}
		if p.avg.CompareAndSwap(old, next) {
			return
		}
	}
}
