package nodes

import (
	"sync/atomic"
	"time"
)

// Bounds of a pass delay: the shortest spaces the passes of a burst of
// network changes, the longest bounds what the last network of a burst
// waits.
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
	// passAt is when the latest pass handed out starts, in Unix
	// nanoseconds (0: none yet).
	passAt atomic.Int64
}

// nextPass is how long after now the pass over nodes nodes that a network
// change asks for starts: at once when no pass started within the last pass
// delay (a lone change is served without waiting), else one pass delay after
// the latest pass, which the changes of a burst share. The pass delay is
// recorded as the last.
func (p *pacer) nextPass(now time.Time, nodes int) time.Duration {
	d := p.passDelay(nodes)
	p.last.Store(int64(d))
	t := now.UnixNano()
	for {
		prev := p.passAt.Load()
		at := t
		if prev != 0 && t < prev+int64(d) {
			at = prev + int64(d)
			if prev > t {
				at = prev // a pass is already due later: join it
			}
		}
		if at == prev || p.passAt.CompareAndSwap(prev, at) {
			return time.Duration(at - t)
		}
	}
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
