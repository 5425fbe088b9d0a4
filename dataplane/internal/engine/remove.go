package engine

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/index"
	"github.com/udnkit/udnkit/dataplane/internal/ovsconn"
	"github.com/udnkit/udnkit/dataplane/internal/plan"
	"github.com/udnkit/udnkit/dataplane/internal/txn"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/ovnk"
)

// DefaultMaxRemovalOps bounds one transaction of a batched removal
// (Engine.MaxRemovalOps), by txn.Weigh: about 25 Layer2 networks of three
// nodes (a network's removal weighs about 20: its routers and switch with
// the children they take along, its load balancer groups). A removal
// deletes rows the server and the client's cache drop by UUID, without
// the index updates and reference checks of the rows an insert builds, so
// it may be larger than an Apply's transaction (DefaultMaxTransactionOps):
// BenchmarkLayer2NetworksCreatedTogether's 100 deletions take four.
const DefaultMaxRemovalOps = 500

// RemoveUnless removes every row of each owner's piece (a network's: an
// empty Desired each, as ApplyUnless removes one), except the networks
// unless (nil: none) names, asked once for them all with every network's
// lock held. The removals are planned as ApplyUnless plans each
// (ownership checks included), with one read of the zone's routers and
// switches for them all (plan.Removals), and sent together: whole networks'
// removals per transaction, each transaction weighing at most
// MaxRemovalOps, so N networks' removals take a few transactions rather
// than N. A removal that does not fit that way (heavier than a
// transaction, or inserting a zone row) and every removal of a batch
// transaction that fails are left to an ApplyUnless of their own (asked
// unless again), after the batch has released its locks: a failed
// transaction changes nothing, and one network's failure keeps no other
// network's rows. The returned error is the first of those Applies'.
func (e *Engine) RemoveUnless(ctx context.Context, owners []rows.Owner, unless func(ctx context.Context, networks []string) (map[string]bool, error)) (Result, error) {
	ds := make([]*rows.Desired, len(owners))
	for i, o := range owners {
		ds[i] = &rows.Desired{Owner: o}
		if err := ds[i].Validate(); err != nil {
			return Result{}, err
		}
	}
	if len(ds) == 0 {
		return Result{}, nil
	}
	res, alone, err := e.removeBatch(ctx, ds, unless)
	if err != nil {
		return res, err
	}
	for _, d := range alone {
		var one func(context.Context) (bool, error)
		if unless != nil {
			one = func(ctx context.Context) (bool, error) {
				revived, err := unless(ctx, []string{d.Owner.Network})
				return revived[d.Owner.Network], err
			}
		}
		r, err := e.ApplyUnless(ctx, d, one)
		res.Operations += r.Operations
		res.Transactions += r.Transactions
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// removal is one network's planned removal in a batch.
type removal struct {
	d    *rows.Desired
	ops  []ovsdb.Operation
	gone []index.RowRef
}

// removeBatch plans the removals of ds under their networks' locks and
// sends those that fit a batch; it returns the removals left to an Apply
// of their own (see RemoveUnless).
func (e *Engine) removeBatch(ctx context.Context, ds []*rows.Desired, unless func(context.Context, []string) (map[string]bool, error)) (Result, []*rows.Desired, error) {
	keys := make([]string, len(ds))
	for i, d := range ds {
		keys[i] = ovnk.NetworkPrefix(d.Owner.Network)
	}
	step := e.stepper(ds[0].Owner)
	defer e.applying.LockAll(slices.Compact(slices.Sorted(slices.Values(keys))))()
	step("lock")
	done := e.ahead.enter()
	defer func() { done() }()
	if unless != nil {
		networks := make([]string, len(ds))
		for i, d := range ds {
			networks[i] = d.Owner.Network
		}
		revived, err := unless(ctx, networks)
		if err != nil {
			return Result{}, nil, err
		}
		ds = slices.DeleteFunc(slices.Clone(ds), func(d *rows.Desired) bool { return revived[d.Owner.Network] })
	}
	if err := ovsconn.WaitUp(ctx, e.NB); err != nil {
		return Result{}, nil, err
	}
	batches, alone, err := e.planRemovals(ds)
	step("plan")
	if err != nil || len(batches) == 0 {
		return Result{}, alone, err
	}
	if len(batches) > 1 {
		done() // several transactions: others' Applies go ahead, as of a split Apply
	}
	run := &applyRun{e: e, d: batches[0][0].d, step: step, real: map[string]string{}}
	for _, b := range batches {
		var ch txn.Chunk
		for _, r := range b {
			ch = append(ch, r.ops...)
		}
		run.chunks = append(run.chunks, ch)
	}
	defer func() { e.healing.own.finish(run.own, time.Now()) }()
	for k := range batches {
		if err := run.transact(ctx, k); err != nil {
			// Each transaction holds whole networks' removals: the
			// committed ones are complete, the rest go one by one.
			res := Result{Operations: sent(run.chunks[:k]), Transactions: k}
			err = e.waitRemoved(ctx, batches[:k])
			for _, rest := range batches[k:] {
				for _, r := range rest {
					alone = append(alone, r.d)
				}
			}
			return res, alone, err
		}
	}
	return Result{Operations: sent(run.chunks), Transactions: len(run.chunks)}, alone, e.waitRemoved(ctx, batches)
}

// planRemovals plans each removal and packs those that fit a batch into
// transactions of at most MaxRemovalOps; it returns them and the ones left
// to an Apply of their own.
func (e *Engine) planRemovals(ds []*rows.Desired) (batches [][]*removal, alone []*rows.Desired, err error) {
	bound := e.MaxRemovalOps
	if bound == 0 {
		bound = DefaultMaxRemovalOps
	}
	ps, err := plan.Removals(e.NB, e.Index, &e.Memos, ds)
	if err != nil {
		return nil, nil, err
	}
	weight := 0
	for i, d := range ds {
		p := ps[i]
		e.healing.members.planned(d, p.MemberPorts(), e.portExists)
		if len(p.Ops) == 0 {
			continue
		}
		w := txn.Weigh(p.Ops, e.CachedRow)
		if len(p.Zone) > 0 || inserts(p.Ops) || (bound > 0 && w > bound) {
			alone = append(alone, d)
			continue
		}
		if len(batches) == 0 || (bound > 0 && weight+w > bound) {
			batches, weight = append(batches, nil), 0
		}
		batches[len(batches)-1] = append(batches[len(batches)-1], &removal{d: d, ops: p.Ops, gone: p.Gone})
		weight += w
	}
	return batches, alone, nil
}

// inserts says whether ops insert a row (a removal's never do; one that
// did would need its named UUIDs kept apart from another plan's).
func inserts(ops []ovsdb.Operation) bool {
	return slices.ContainsFunc(ops, func(op ovsdb.Operation) bool { return op.Op == ovsdb.OperationInsert })
}

// waitRemoved waits until the index shows the committed removals, as
// Apply does (waitVisible): the rows each deleted are gone; a removal that
// only took rows out of others' columns is planned again until it plans
// nothing.
func (e *Engine) waitRemoved(ctx context.Context, batches [][]*removal) error {
	var gone []index.RowRef
	var unmarked []*rows.Desired
	for _, b := range batches {
		for _, r := range b {
			if len(r.gone) == 0 {
				unmarked = append(unmarked, r.d)
			}
			gone = append(gone, r.gone...)
		}
	}
	var errs []error
	if len(gone) > 0 {
		errs = append(errs, e.waitVisible(ctx, batches[0][0].d, nil, gone))
	}
	for _, d := range unmarked {
		errs = append(errs, e.waitVisible(ctx, d, nil, nil))
	}
	return errors.Join(errs...)
}
