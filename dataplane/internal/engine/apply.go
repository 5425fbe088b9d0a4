package engine

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/index"
	"github.com/udnkit/udnkit/dataplane/internal/ovsconn"
	"github.com/udnkit/udnkit/dataplane/internal/plan"
	"github.com/udnkit/udnkit/dataplane/internal/txn"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
)

// Result says what an Apply did.
type Result struct {
	// Operations is the number of OVSDB operations sent (0: nothing changed).
	Operations int
	// Transactions is the number of transactions they were sent in (see
	// Engine.MaxTransactionOps).
	Transactions int
}

// Apply makes the Northbound database hold exactly the desired rows of the
// piece: it creates missing rows, updates rows whose managed columns differ and
// removes the piece's rows that are no longer desired, in one transaction,
// or, when the plan has more than Engine.MaxTransactionOps operations, in a
// sequence of bounded transactions that each leave a consistent topology (see
// package txn), so that a large network never holds up another's Apply for long.
// Everything is validated and planned (ownership refusals included) before
// the first transaction; when a later transaction fails, Apply returns the
// error and the next Apply completes the topology. Rows without the piece's
// external_ids are never modified. When the transactions commit, Apply waits
// until the client's cache shows the result, so an immediate second Apply
// computes zero operations.
func (e *Engine) Apply(ctx context.Context, d *rows.Desired) (Result, error) {
	return e.ApplyUnless(ctx, d, nil)
}

// ApplyUnless is Apply, except that it does nothing when unless (nil: never)
// says so. unless is asked with the network's lock held, so no other Apply
// of the network runs between its answer and this Apply: a controller
// removing a network whose NAD is gone asks whether the NAD is back, and so
// never removes the rows a concurrent reconcile of the new NAD has just
// written.
//
// Applies of one network that wait for each other are served together
// (group.go): several may then share one transaction.
func (e *Engine) ApplyUnless(ctx context.Context, d *rows.Desired, unless func(context.Context) (bool, error)) (Result, error) {
	if err := d.Validate(); err != nil {
		return Result{}, err
	}
	return e.applyGrouped(ctx, d, unless)
}

// applyLocked is one Apply, with the network's lock held.
// step reports its steps, the first ("lock") timed from the Apply's start.
func (e *Engine) applyLocked(ctx context.Context, d *rows.Desired, unless func(context.Context) (bool, error), step func(string)) (Result, error) {
	step("lock")
	// Until it turns out to be split, an Apply goes ahead of split ones.
	done := e.ahead.enter()
	defer func() { done() }()
	if unless != nil {
		if skip, err := unless(ctx); err != nil || skip {
			return Result{}, err
		}
	}
	// Plan only against a cache that the monitor has resynchronised.
	if err := ovsconn.WaitUp(ctx, e.NB); err != nil {
		return Result{}, err
	}
	p, unlockZone, err := e.planZone(d, &done)
	defer unlockZone()
	step("plan")
	if err == nil {
		e.healing.members.planned(d, p.MemberPorts(), e.portExists)
	}
	if err != nil || len(p.Ops) == 0 {
		return Result{}, err
	}
	run := &applyRun{e: e, d: d, step: step, chunks: e.split(p.Ops), real: map[string]string{}}
	step("split")
	if len(run.chunks) > 1 {
		done()
	}
	defer func() { e.healing.own.finish(run.own, time.Now()) }()
	for k := range run.chunks {
		if err := run.transact(ctx, k); err != nil {
			return run.failed(ctx, k, err)
		}
	}
	err = e.waitVisible(ctx, d, run.inserted, p.Gone)
	step("visible")
	return Result{Operations: sent(run.chunks), Transactions: len(run.chunks)}, err
}

// planZone plans d and, when the plan inserts zone rows, takes their locks
// and plans again, until the locks held cover the zone rows the plan
// inserts; it returns the plan and the locks' unlock. While it waits for a
// lock the Apply does not go ahead of split ones (*done, re-entered after):
// a split Apply holding the lock would otherwise yield to the Apply waiting
// for it, at every transaction.
func (e *Engine) planZone(d *rows.Desired, done *func()) (*plan.Planner, func(), error) {
	unlock := func() {}
	var held []string
	for {
		p, err := e.NewPlan(d)
		if err != nil || subset(p.Zone, held) {
			return p, unlock, err
		}
		unlock()
		held = slices.Compact(slices.Sorted(slices.Values(append(held, p.Zone...))))
		(*done)()
		unlock = e.zone.LockAll(held)
		*done = e.ahead.enter()
	}
}

// subset says whether every key of a is in b.
func subset(a, b []string) bool {
	for _, k := range a {
		if !slices.Contains(b, k) {
			return false
		}
	}
	return true
}

// applyRun is one Apply's transactions under way. Chunks go one after
// another on the client's one connection, so the transaction of another
// network's Apply goes in between (fair.go).
type applyRun struct {
	e      *Engine
	d      *rows.Desired
	step   func(string)
	chunks []txn.Chunk
	// real maps the named UUIDs of earlier chunks' inserts to the server's.
	real     map[string]string
	inserted []index.RowRef
	// own are the owned rows the transactions update or delete: their
	// events are this Apply's own, not another client's edits (heal.go).
	own *ownEdit
}

// transact sends chunk k (after a split Apply's yield) and learns what it
// committed.
func (r *applyRun) transact(ctx context.Context, k int) error {
	e, hooks := r.e, r.e.hooks
	if len(r.chunks) > 1 {
		e.ahead.yield(ctx, cmp.Or(hooks.YieldAtMost, yieldAtMost), hooks.YieldWaits)
		r.step("yield")
	}
	if k == 0 && hooks.BeforeTransact != nil {
		hooks.BeforeTransact(r.d.Owner)
	}
	ops := r.chunks[k].Resolve(r.real)
	// libovsdb sends a transaction even when ctx is done (and then may or
	// may not return its result): a cancelled Apply sends no more.
	if err := ctx.Err(); err != nil {
		return err
	}
	r.own = e.healing.own.note(r.own, ops, e.descendants)
	// Until its links are learnt below, a plan that meets the
	// transaction's new children waits for it (index.Sending).
	defer e.Index.Sending()()
	started := time.Now()
	results, err := e.NB.Transact(ctx, ops...)
	transactionSeconds.WithLabelValues(r.d.Owner.Topology, r.d.Owner.Piece).Observe(time.Since(started).Seconds())
	r.step("transact")
	if err == nil {
		_, err = ovsdb.CheckOperationResults(results, ops)
	}
	if err != nil {
		return err
	}
	for i, op := range ops {
		if op.Op == ovsdb.OperationInsert && i < len(results) {
			r.inserted = append(r.inserted, index.RowRef{Table: op.Table, UUID: results[i].UUID.GoUUID})
			if op.UUIDName != "" {
				r.real[op.UUIDName] = results[i].UUID.GoUUID
			}
		}
	}
	if hooks.Committed != nil {
		hooks.Committed(r.d.Owner)
	}
	// The cache does not show which parent holds which child: the
	// transaction says (package index).
	e.Index.Learn(txn.Committed(ops, results, r.real))
	if hooks.AfterTransaction != nil {
		hooks.AfterTransaction(r.d.Owner, k+1, len(r.chunks))
	}
	return nil
}

// failed is the result of an Apply whose transaction k failed.
func (r *applyRun) failed(ctx context.Context, k int, err error) (Result, error) {
	o := r.d.Owner
	if len(r.chunks) == 1 {
		return Result{}, fmt.Errorf("apply %s/%s/%s: %w", o.Network, o.Topology, o.Piece, err)
	}
	// The earlier chunks are committed: let the cache show them, so the
	// next Apply plans the rest and not the same rows again.
	if k > 0 {
		settle, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = r.e.waitVisible(settle, r.d, r.inserted, nil)
		cancel()
	}
	return Result{Operations: sent(r.chunks[:k]), Transactions: k},
		fmt.Errorf("apply %s/%s/%s: transaction %d of %d (the earlier ones are committed; the next Apply completes the topology): %w",
			o.Network, o.Topology, o.Piece, k+1, len(r.chunks), err)
}

// DefaultMaxTransactionOps bounds one Northbound transaction of an Apply
// (Engine.MaxTransactionOps; package txn says how it was chosen).
const DefaultMaxTransactionOps = txn.DefaultMaxTransactionOps

// planWait bounds how long Plan waits for a connection.
const planWait = 30 * time.Second

func sent(chunks []txn.Chunk) int {
	n := 0
	for _, ch := range chunks {
		n += len(ch)
	}
	return n
}

// split cuts a plan into its transactions: under the default bound, a
// plan of up to txn.DefaultWholeTransactionOps stays one.
func (e *Engine) split(ops []ovsdb.Operation) []txn.Chunk {
	if e.MaxTransactionOps == 0 && txn.Weigh(ops, e.CachedRow) <= txn.DefaultWholeTransactionOps {
		return []txn.Chunk{ops}
	}
	return txn.Split(ops, e.maxOps(), e.CachedRow)
}

// wholeOps is the most a transaction of a round's Applies may weigh (group.go).
func (e *Engine) wholeOps() int {
	if e.MaxTransactionOps == 0 {
		return txn.DefaultWholeTransactionOps
	}
	return e.MaxTransactionOps
}

func (e *Engine) maxOps() int {
	if e.MaxTransactionOps == 0 {
		return DefaultMaxTransactionOps
	}
	return e.MaxTransactionOps
}

// CachedRow returns a copy of a cached row, a router's or switch's with
// its children.
func (e *Engine) CachedRow(table, uuid string) model.Model {
	t := e.NB.Cache().Table(table)
	if t == nil {
		return nil
	}
	m := t.Row(uuid)
	if m != nil && childColumns[table] != nil {
		defer e.Index.Read(e.NB)()
		e.Index.Fill(table, m)
	}
	return m
}

// descendants lists the children of routers, switches and ports, and
// theirs, as the index knows them.
func (e *Engine) descendants(parents []string) []string {
	defer e.Index.Read(e.NB)()
	var out []string
	for len(parents) > 0 {
		var next []string
		for _, p := range parents {
			next = append(next, e.Index.ChildrenOf(p)...)
		}
		out = append(out, next...)
		parents = next
	}
	return out
}

// stepper returns a function that reports to Hooks.Observe, when set, the time
// since its previous call (or since stepper) under a step's name.
func (e *Engine) stepper(o rows.Owner) func(step string) {
	observe := e.hooks.Observe
	if observe == nil {
		return func(string) {}
	}
	last := time.Now()
	return func(step string) {
		now := time.Now()
		observe(o, step, now.Sub(last))
		last = now
	}
}

// Plan returns the operations Apply would send, without sending them. Like
// Apply, it waits (here up to planWait) for a connection that is being
// made again.
func (e *Engine) Plan(d *rows.Desired) ([]ovsdb.Operation, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), planWait)
	defer cancel()
	if err := ovsconn.WaitUp(ctx, e.NB); err != nil {
		return nil, err
	}
	p, err := e.FullPlan(d)
	if err != nil {
		return nil, err
	}
	return p.Ops, nil
}

// waitVisible waits until the client's index (which follows its cache)
// shows the committed transaction, so that an immediate second Apply plans
// nothing: the rows it inserted are there and the rows it removed are gone
// (the server sends one transaction's changes in one update). A transaction
// of pure field updates has no such marker; then the index is polled until
// planning yields nothing.
func (e *Engine) waitVisible(ctx context.Context, d *rows.Desired, inserted, gone []index.RowRef) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// In the index (where plans find rows) and in the cache (what they read).
	has := func(r index.RowRef) bool {
		return e.Index.Has(r.Table, r.UUID) && e.Index.Row(e.NB.Cache().Table(r.Table), r.Table, r.UUID) != nil
	}
	hasNot := func(r index.RowRef) bool {
		return !e.Index.Has(r.Table, r.UUID) && e.Index.Row(e.NB.Cache().Table(r.Table), r.Table, r.UUID) == nil
	}
	marked := len(inserted)+len(gone) > 0
	// The rows seen are not looked at again (a large Apply's are many).
	inserted, gone = slices.Clone(inserted), slices.Clone(gone)
	for {
		// The index changes with events, which libovsdb delivers after the
		// cache has changed: wait for the next one, or poll (while the
		// index waits for a reconnect to rebuild).
		next := e.Index.Next()
		var done bool
		if marked {
			unlock := e.Index.Read(e.NB)
			inserted = slices.DeleteFunc(inserted, has)
			gone = slices.DeleteFunc(gone, hasNot)
			unlock()
			done = len(inserted)+len(gone) == 0
		} else {
			pending, err := e.IndexPlan(d, nil)
			if err != nil {
				return err
			}
			done = len(pending.Ops) == 0
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the committed changes did not reach the client's cache: %w", ctx.Err())
		case <-next:
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Networks lists the networks that have routers of a topology piece in the
// Northbound database, e.g. to remove the topology of deleted networks.
func (e *Engine) Networks(topology, piece string) []string {
	defer e.Index.Read(e.NB)()
	return e.Index.Networks(topology, piece, nbdb.LogicalRouterTable)
}

// PieceNetworks lists the networks that own any Northbound row of a topology
// piece (routers, switches, their children or DHCP options), including
// pieces that only add rows to routers or switches they do not own.
func (e *Engine) PieceNetworks(topology, piece string) []string {
	defer e.Index.Read(e.NB)()
	return e.Index.Networks(topology, piece, indexedTables...)
}

// LoadBalancerGroups names the cache's load balancer groups, sorted.
func (e *Engine) LoadBalancerGroups() []string {
	t := e.NB.Cache().Table(nbdb.LoadBalancerGroupTable)
	if t == nil {
		return nil
	}
	var out []string
	for _, m := range t.RowsShallow() {
		out = append(out, m.(*nbdb.LoadBalancerGroup).Name)
	}
	slices.Sort(out)
	return out
}

// PieceHasNetwork says whether the network owns any Northbound row of a
// topology piece (PieceNetworks for one network).
func (e *Engine) PieceHasNetwork(topology, piece, network string) bool {
	defer e.Index.Read(e.NB)()
	return e.Index.HasNetwork(topology, piece, network, indexedTables...)
}
