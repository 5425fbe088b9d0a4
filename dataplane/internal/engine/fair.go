package engine

import (
	"context"
	"sync"
	"time"
)

// Fairness between networks: Applies of different networks run
// concurrently on one connection, whose server and update stream handle
// one transaction at a time, in order. A large network's split Apply sends
// its transactions one after another, and before each one (the first one
// included) lets the Applies of one transaction under way finish first, for
// at most yieldAtMost: a small network's Apply waits behind at most one
// bounded transaction of a large one, never behind the whole network.

// yieldAtMost bounds how long a split Apply waits for other Applies before
// each of its transactions, so a stream of small Applies delays a
// large one by at most this much per transaction.
const yieldAtMost = 100 * time.Millisecond

// priority counts the Applies that go ahead of split ones: those holding
// their network's lock that are not (yet) known to be split.
type priority struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0
}

// enter counts an Apply in and returns its (idempotent) exit.
func (p *priority) enter() func() {
	p.mu.Lock()
	if p.n == 0 {
		p.idle = make(chan struct{})
	}
	p.n++
	p.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			if p.n--; p.n == 0 {
				close(p.idle)
			}
			p.mu.Unlock()
		})
	}
}

// yield waits until no counted Apply is under way, for at most max; waits,
// when set, runs when it starts waiting.
func (p *priority) yield(ctx context.Context, max time.Duration, waits func()) {
	p.mu.Lock()
	if p.n == 0 {
		p.mu.Unlock()
		return
	}
	idle := p.idle
	p.mu.Unlock()
	if waits != nil {
		waits()
	}
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	case <-ctx.Done():
	}
}
