package nodes

import (
	"testing"
	"time"
)

// TestLoneChangeIsPassedAtOnceABurstShares: the first network change after
// a quiet spell starts its pass over the nodes at once; the changes that
// follow within a pass delay share one pass a pass delay after it, and a
// change after the burst is again served at once.
func TestLoneChangeIsPassedAtOnceABurstShares(t *testing.T) {
	var p pacer // no reconcile timed yet: every pass delay is minPassDelay
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		at   time.Duration // since t0
		want time.Duration // the delay handed out
	}{
		{"lone change", 0, 0},
		{"second change of a burst", 10 * time.Millisecond, minPassDelay - 10*time.Millisecond},
		{"third change, same pass", 40 * time.Millisecond, minPassDelay - 40*time.Millisecond},
		{"after that pass started", minPassDelay + 5*time.Millisecond, minPassDelay - 5*time.Millisecond},
		{"after a quiet spell", 10 * minPassDelay, 0},
	} {
		if got := p.nextPass(t0.Add(c.at), 3); got != c.want {
			t.Errorf("%s (t0+%v): delay %v, want %v", c.name, c.at, got, c.want)
		}
	}
}

// TestPassDelayScalesWithNodes: once reconciles are timed, the delay
// between a burst's passes is a pass's length over the workers, within
// its bounds.
func TestPassDelayScalesWithNodes(t *testing.T) {
	p := pacer{workers: 2}
	p.avg.Store(int64(time.Millisecond))
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	if got := p.nextPass(t0, 1000); got != 0 {
		t.Fatalf("lone change: delay %v, want 0", got)
	}
	if got := p.nextPass(t0, 1000); got != 500*time.Millisecond {
		t.Errorf("second change over 1000 nodes and 2 workers at 1ms each: delay %v, want 500ms", got)
	}
	if got := p.listAge(); got != 500*time.Millisecond {
		t.Errorf("listAge %v, want the last pass delay 500ms", got)
	}
	p.passAt.Store(0)
	p.avg.Store(int64(time.Second))
	p.nextPass(t0, 1000)
	if got := p.nextPass(t0, 1000); got != maxPassDelay {
		t.Errorf("delay %v, want the bound %v", got, maxPassDelay)
	}
}
