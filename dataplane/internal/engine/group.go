package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/index"
	"github.com/udnkit/udnkit/dataplane/internal/ovsconn"
	"github.com/udnkit/udnkit/dataplane/internal/plan"
	"github.com/udnkit/udnkit/dataplane/internal/txn"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/ovnk"
)

// Group commit. The pieces of one network are applied one at a time (the
// network's lock), and each transaction is one more round of ovn-northd's
// and every ovn-controller's work. When a network's topology is applied,
// the controllers of its other pieces (pod ports, policy defaults, live
// migration, multi-VTEP) wake together and would queue for the lock and
// then send a transaction each, the pod ports, on the path of every new
// pod's first packet, often last. Instead, the Applies of a network that
// wait while another holds its lock are served together by the next one to
// get it (the leader): each is planned against the cache as it is, and
// those that can share a transaction (group.go's mergeable) are sent as one.
// The others, and all of them when that transaction fails (nothing of it
// is committed), are applied one after another as before.

// request is one Apply waiting in its network's group.
type request struct {
	ctx    context.Context
	d      *rows.Desired
	unless func(context.Context) (bool, error)
	step   func(string)
	res    Result
	err    error
	// served is closed when res and err are set; lead is closed to make
	// the request the one that serves its group's queue.
	served, lead chan struct{}
}

// groups holds each network's queue of waiting Applies.
type groups struct {
	mu   sync.Mutex
	nets map[string]*group
}

type group struct {
	// leading: a request is serving the group (the others wait in queue).
	leading bool
	queue   []*request
}

// join queues rs in key's group, one after another and at once (the
// round that takes one takes them all), and says whether rs[0] leads it
// (no round under way).
func (g *groups) join(key string, rs ...*request) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.nets == nil {
		g.nets = map[string]*group{}
	}
	gr := g.nets[key]
	if gr == nil {
		gr = &group{}
		g.nets[key] = gr
	}
	gr.queue = append(gr.queue, rs...)
	if gr.leading {
		return false
	}
	gr.leading = true
	return true
}

// take returns the requests queued in key's group (the leader's round).
func (g *groups) take(key string) []*request {
	g.mu.Lock()
	defer g.mu.Unlock()
	gr := g.nets[key]
	q := gr.queue
	gr.queue = nil
	return q
}

// handOver ends a leader's round: the first request queued since leads
// the next, or the group is idle.
func (g *groups) handOver(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	gr := g.nets[key]
	if len(gr.queue) == 0 {
		delete(g.nets, key)
		return
	}
	close(gr.queue[0].lead)
}

// leave takes cancelled requests rs (joined together) out of key's queue,
// unless a leader has taken them or rs[0] was made the leader (then it
// must lead: false).
func (g *groups) leave(key string, rs ...*request) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-rs[0].lead:
		return false
	default:
	}
	gr := g.nets[key]
	if gr == nil {
		return false
	}
	i := slices.Index(gr.queue, rs[0])
	if i < 0 {
		return false
	}
	gr.queue = slices.Delete(gr.queue, i, i+len(rs))
	return true
}

// applyGrouped runs d's Apply through its network's group.
func (e *Engine) applyGrouped(ctx context.Context, d *rows.Desired, unless func(context.Context) (bool, error)) (Result, error) {
	r := e.serveGrouped(ctx, []*rows.Desired{d}, unless)[0]
	return r.res, r.err
}

// ApplyTogether applies pieces of one network as Apply applies each, in
// one round of the network's group: those that can share a transaction
// (mergeable) are sent as one, without waiting for another Apply to hold
// the network's lock; the others follow one by one, in the order given.
// A controller that writes several pieces of a network from one reconcile
// (independent pieces: no one names a row another inserts) saves a
// transaction per piece. The results are in the order of ds; the error is
// the pieces' errors joined.
func (e *Engine) ApplyTogether(ctx context.Context, ds ...*rows.Desired) ([]Result, error) {
	return e.ApplyTogetherUnless(ctx, nil, ds...)
}

// ApplyTogetherUnless is ApplyTogether, except that a piece is left
// unwritten when unless (nil: never) says so, asked for each piece with
// the network's lock held (as ApplyUnless asks).
func (e *Engine) ApplyTogetherUnless(ctx context.Context, unless func(context.Context) (bool, error), ds ...*rows.Desired) ([]Result, error) {
	if len(ds) == 0 {
		return nil, nil
	}
	key := ovnk.NetworkPrefix(ds[0].Owner.Network)
	for _, d := range ds {
		if err := d.Validate(); err != nil {
			return nil, err
		}
		if k := ovnk.NetworkPrefix(d.Owner.Network); k != key {
			return nil, fmt.Errorf("apply together: %s/%s/%s is not of network %s", d.Owner.Network, d.Owner.Topology, d.Owner.Piece, ds[0].Owner.Network)
		}
	}
	rs := e.serveGrouped(ctx, ds, unless)
	out := make([]Result, len(rs))
	errs := make([]error, len(rs))
	for i, r := range rs {
		out[i], errs[i] = r.res, r.err
	}
	return out, errors.Join(errs...)
}

// serveGrouped joins ds's requests to their network's group at once and
// returns them served: by the round rs[0] leads, or by another request's
// round, which takes them all.
func (e *Engine) serveGrouped(ctx context.Context, ds []*rows.Desired, unless func(context.Context) (bool, error)) []*request {
	key := ovnk.NetworkPrefix(ds[0].Owner.Network)
	rs := make([]*request, len(ds))
	for i, d := range ds {
		rs[i] = &request{ctx: ctx, d: d, unless: unless, step: e.stepper(d.Owner), served: make(chan struct{}), lead: make(chan struct{})}
	}
	first := rs[0]
	if !e.groups.join(key, rs...) {
		select {
		case <-first.served:
			return rs
		case <-first.lead:
		case <-ctx.Done():
			if e.groups.leave(key, rs...) {
				for _, r := range rs {
					r.err = ctx.Err()
				}
				return rs
			}
			select {
			case <-first.served:
				return rs
			case <-first.lead:
			}
		}
	}
	func() {
		defer e.applying.Lock(key)()
		e.serve(e.groups.take(key))
	}()
	e.groups.handOver(key)
	return rs
}

// serve applies a round's requests, those that can in one transaction.
func (e *Engine) serve(round []*request) {
	defer func() {
		for _, r := range round {
			close(r.served)
		}
	}()
	if len(round) == 1 {
		r := round[0]
		r.res, r.err = e.applyLocked(r.ctx, r.d, r.unless, r.step)
		return
	}
	done := e.ahead.enter()
	merged, alone := e.planRound(round)
	if len(merged) > 1 && e.commitMerged(merged) == nil {
		merged = nil
	}
	done()
	for _, m := range merged {
		alone[m.r] = true
	}
	// In the order they came.
	for _, r := range round {
		if alone[r] {
			r.res, r.err = e.applyLocked(r.ctx, r.d, r.unless, r.step)
		}
	}
}

// member is a request planned into a round's shared transaction.
type member struct {
	r *request
	p *plan.Planner
}

// planRound plans each request of a round against the cache: those with
// nothing to do are served, the rest are members of the shared transaction
// or left to be applied alone (mergeable says which).
func (e *Engine) planRound(round []*request) (merged []member, alone map[*request]bool) {
	alone = map[*request]bool{}
	inserts := map[[2]string]bool{}
	weight := 0
	for _, r := range round {
		if err := r.ctx.Err(); err != nil {
			r.err = err
			continue
		}
		if r.unless != nil {
			if skip, err := r.unless(r.ctx); err != nil || skip {
				r.err = err
				continue
			}
		}
		if err := ovsconn.WaitUp(r.ctx, e.NB); err != nil {
			r.err = err
			continue
		}
		r.step("lock")
		p, err := e.NewPlan(r.d)
		r.step("plan")
		if err != nil || len(p.Zone) > 0 {
			// Alone it plans again after the others commit: a row it
			// refers to may be one of theirs.
			alone[r] = true
			continue
		}
		e.healing.members.planned(r.d, p.MemberPorts(), e.portExists)
		if len(p.Ops) == 0 {
			continue
		}
		w := txn.Weigh(p.Ops, e.CachedRow)
		if weight+w > e.wholeOps() && e.wholeOps() > 0 || !mergeable(p, inserts) {
			alone[r] = true
			continue
		}
		weight += w
		p.Ops = txn.Rename(p.Ops, "m"+strconv.Itoa(len(merged))+"_")
		merged = append(merged, member{r, p})
	}
	if len(merged) == 1 {
		alone[merged[0].r] = true
		merged = nil
	}
	return merged, alone
}

// mergeable says whether a plan can share a transaction with the plans
// whose named inserts are in seen (and adds its own): pieces own disjoint
// rows, but two may both plan to insert a Shared router or switch (or any
// named row) that is missing; the second then applies alone, after the
// first's commit, and finds it.
func mergeable(p *plan.Planner, seen map[[2]string]bool) bool {
	var mine [][2]string
	for _, op := range p.Ops {
		if op.Op != ovsdb.OperationInsert {
			continue
		}
		if name, ok := op.Row["name"].(string); ok {
			k := [2]string{op.Table, name}
			if seen[k] {
				return false
			}
			mine = append(mine, k)
		}
	}
	for _, k := range mine {
		seen[k] = true
	}
	return true
}

// commitMerged sends the members' operations in one transaction and, when
// it commits, serves them; an error leaves them to be applied alone.
func (e *Engine) commitMerged(ms []member) error {
	ctx, cancel := allDone(ms)
	defer cancel()
	var ops txn.Chunk
	var gone []index.RowRef
	for _, m := range ms {
		ops = append(ops, m.p.Ops...)
		gone = append(gone, m.p.Gone...)
	}
	first := ms[0].r.d
	run := &applyRun{e: e, d: first, step: ms[0].r.step, chunks: []txn.Chunk{ops}, real: map[string]string{}}
	defer func() { e.healing.own.finish(run.own, time.Now()) }()
	for _, m := range ms[1:] {
		if h := e.hooks.BeforeTransact; h != nil {
			h(m.r.d.Owner)
		}
	}
	if err := run.transact(ctx, 0); err != nil {
		return err
	}
	for _, m := range ms[1:] {
		if h := e.hooks.AfterTransaction; h != nil {
			h(m.r.d.Owner, 1, 1)
		}
	}
	var err error
	if len(run.inserted)+len(gone) > 0 {
		err = e.waitVisible(ctx, first, run.inserted, gone)
	} else {
		for _, m := range ms {
			if err = e.waitVisible(ctx, m.r.d, nil, nil); err != nil {
				break
			}
		}
	}
	for _, m := range ms {
		m.r.res, m.r.err = Result{Operations: len(m.p.Ops), Transactions: 1}, err
	}
	return nil
}

// allDone is a context done when every member's is (the shared
// transaction is sent for all of them).
func allDone(ms []member) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ms[0].r.ctx))
	var mu sync.Mutex
	left := len(ms)
	stops := make([]func() bool, 0, len(ms))
	for _, m := range ms {
		stops = append(stops, context.AfterFunc(m.r.ctx, func() {
			mu.Lock()
			defer mu.Unlock()
			if left--; left == 0 {
				cancel()
			}
		}))
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// Queued is how many Applies of the network wait for the one under way
// (tests).
func (e *Engine) Queued(network string) int {
	e.groups.mu.Lock()
	defer e.groups.mu.Unlock()
	if gr := e.groups.nets[ovnk.NetworkPrefix(network)]; gr != nil {
		return len(gr.queue)
	}
	return 0
}
