package dataplane

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/index"
	"github.com/udnkit/udnkit/dataplane/internal/txn"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/ovnk"
)

// Result says what an Apply did.
type Result struct {
	// Operations is the number of OVSDB operations sent (0: nothing changed).
	Operations int
	// Transactions is the number of transactions they were sent in (see
	// Client.MaxTransactionOps).
	Transactions int
}

// Apply makes the Northbound database hold exactly the desired rows of the
// piece: it creates missing rows, updates rows whose managed columns differ and
// removes the piece's rows that are no longer desired, in one transaction,
// or, when the plan has more than Client.MaxTransactionOps operations, in a
// sequence of bounded transactions that each leave a consistent topology (see
// package txn), so that a large network never holds up another's Apply for long.
// Everything is validated and planned (ownership refusals included) before
// the first transaction; when a later transaction fails, Apply returns the
// error and the next Apply completes the topology. Rows without the piece's
// external_ids are never modified. When the transactions commit, Apply waits
// until the client's cache shows the result, so an immediate second Apply
// computes zero operations.
func (c *Client) Apply(ctx context.Context, d *Desired) (Result, error) {
	return c.ApplyUnless(ctx, d, nil)
}

// ApplyUnless is Apply, except that it does nothing when unless (nil: never)
// says so. unless is asked with the network's lock held, so no other Apply
// of the network runs between its answer and this Apply: a controller
// removing a network whose NAD is gone asks whether the NAD is back, and so
// never removes the rows a concurrent reconcile of the new NAD has just
// written.
func (c *Client) ApplyUnless(ctx context.Context, d *Desired, unless func(context.Context) (bool, error)) (Result, error) {
	if err := d.Validate(); err != nil {
		return Result{}, err
	}
	step := c.stepper(d.Owner)
	defer c.applying.Lock(ovnk.NetworkPrefix(d.Owner.Network))()
	step("lock")
	// Until it turns out to be split, an Apply goes ahead of split ones.
	done := c.ahead.enter()
	defer done()
	if unless != nil {
		if skip, err := unless(ctx); err != nil || skip {
			return Result{}, err
		}
	}
	// Plan only against a cache that the monitor has resynchronised.
	if err := waitConnected(ctx, c.NB); err != nil {
		return Result{}, err
	}
	p, err := c.newPlan(d)
	step("plan")
	if err != nil {
		return Result{}, err
	}
	if len(p.Ops) == 0 {
		return Result{}, nil
	}
	chunks := txn.Split(p.Ops, c.maxOps(), c.cachedRow)
	step("split")
	if len(chunks) > 1 {
		done()
	}
	// Chunks go one after another on the client's one connection, so the
	// transaction of another network's Apply goes in between (the server and
	// the client's update stream handle one transaction at a time, in order);
	// before each chunk, the first one included (other Applies may have
	// started while this one planned), the Applies of one transaction under
	// way finish first (briefly: see yieldAtMost), so they do not share the
	// database, the update stream and the CPU with this one.
	real := map[string]string{} // named UUIDs of earlier chunks' inserts
	var inserted []index.RowRef
	// The owned rows the transactions update or delete: their events are
	// this Apply's own, not another client's edits (resync.go).
	var own *ownEdit
	defer func() { c.healing.own.finish(own, time.Now()) }()
	for k, ch := range chunks {
		if len(chunks) > 1 {
			c.ahead.yield(ctx, cmp.Or(c.yieldAtMost, yieldAtMost))
			step("yield")
		}
		if k == 0 && c.beforeTransact != nil {
			c.beforeTransact(d.Owner)
		}
		ops := ch.Resolve(real)
		// libovsdb sends a transaction even when ctx is done (and then may
		// or may not return its result): a cancelled Apply sends no more.
		var results []ovsdb.OperationResult
		err := ctx.Err()
		if err == nil {
			own = c.healing.own.note(own, ops, c.children)
			started := time.Now()
			results, err = c.NB.Transact(ctx, ops...)
			transactionSeconds.WithLabelValues(d.Owner.Topology, d.Owner.Piece).Observe(time.Since(started).Seconds())
			step("transact")
		}
		if err == nil {
			_, err = ovsdb.CheckOperationResults(results, ops)
		}
		if err != nil {
			if len(chunks) == 1 {
				return Result{}, fmt.Errorf("apply %s/%s/%s: %w", d.Owner.Network, d.Owner.Topology, d.Owner.Piece, err)
			}
			// The earlier chunks are committed: let the cache show them, so
			// the next Apply plans the rest and not the same rows again.
			if k > 0 {
				settle, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				_ = c.waitVisible(settle, d, inserted, nil)
				cancel()
			}
			return Result{Operations: sent(chunks[:k]), Transactions: k}, fmt.Errorf("apply %s/%s/%s: transaction %d of %d (the earlier ones are committed; the next Apply completes the topology): %w",
				d.Owner.Network, d.Owner.Topology, d.Owner.Piece, k+1, len(chunks), err)
		}
		for i, op := range ops {
			if op.Op == ovsdb.OperationInsert && i < len(results) {
				inserted = append(inserted, index.RowRef{Table: op.Table, UUID: results[i].UUID.GoUUID})
				if op.UUIDName != "" {
					real[op.UUIDName] = results[i].UUID.GoUUID
				}
			}
		}
		// The cache does not show which parent holds which child: the
		// transaction says (links.go).
		c.index.Learn(txn.Committed(ops, results, real))
		if c.afterTransaction != nil {
			c.afterTransaction(d.Owner, k+1, len(chunks))
		}
	}
	err = c.waitVisible(ctx, d, inserted, p.Gone)
	step("visible")
	return Result{Operations: sent(chunks), Transactions: len(chunks)}, err
}

// DefaultMaxTransactionOps bounds one Northbound transaction of an Apply
// (Client.MaxTransactionOps; package txn says how it was chosen).
const DefaultMaxTransactionOps = txn.DefaultMaxTransactionOps

// planWait bounds how long Plan waits for a connection.
const planWait = 30 * time.Second

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
	// waits, when set (by tests), runs when a yield starts waiting.
	waits func()
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

// yield waits until no counted Apply is under way, for at most max.
func (p *priority) yield(ctx context.Context, max time.Duration) {
	p.mu.Lock()
	if p.n == 0 {
		p.mu.Unlock()
		return
	}
	idle := p.idle
	p.mu.Unlock()
	if p.waits != nil {
		p.waits()
	}
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	case <-ctx.Done():
	}
}

func sent(chunks []txn.Chunk) int {
	n := 0
	for _, ch := range chunks {
		n += len(ch)
	}
	return n
}

func (c *Client) maxOps() int {
	if c.MaxTransactionOps == 0 {
		return DefaultMaxTransactionOps
	}
	return c.MaxTransactionOps
}

// cachedRow returns a copy of a cached row, a router's or switch's with
// its children.
func (c *Client) cachedRow(table, uuid string) model.Model {
	t := c.NB.Cache().Table(table)
	if t == nil {
		return nil
	}
	m := t.Row(uuid)
	if m != nil && childColumns[table] != nil {
		defer c.index.Read(c.NB)()
		c.index.Fill(table, m)
	}
	return m
}

// children lists the children of a router or switch, as the index knows them.
func (c *Client) children(parent string) []string {
	defer c.index.Read(c.NB)()
	return c.index.ChildrenOf(parent)
}

// stepper returns a function that reports to c.observe, when set, the time
// since its previous call (or since stepper) under a step's name.
func (c *Client) stepper(o Owner) func(step string) {
	if c.observe == nil {
		return func(string) {}
	}
	last := time.Now()
	return func(step string) {
		now := time.Now()
		c.observe(o, step, now.Sub(last))
		last = now
	}
}

// Plan returns the operations Apply would send, without sending them. Like
// Apply, it waits (here up to planWait) for a connection that is being
// made again.
func (c *Client) Plan(d *Desired) ([]ovsdb.Operation, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), planWait)
	defer cancel()
	if err := waitConnected(ctx, c.NB); err != nil {
		return nil, err
	}
	p, err := c.fullPlan(d)
	if err != nil {
		return nil, err
	}
	return p.Ops, nil
}

func transact(ctx context.Context, c client.Client, ops []ovsdb.Operation) error {
	results, err := c.Transact(ctx, ops...)
	if err != nil {
		return err
	}
	if _, err := ovsdb.CheckOperationResults(results, ops); err != nil {
		return err
	}
	return nil
}

func waitConnected(ctx context.Context, c client.Client) error {
	for !up(c) {
		select {
		case <-ctx.Done():
			// (CurrentEndpoint is empty until libovsdb is connected again.)
			return fmt.Errorf("waiting for the OVN database %s to reconnect: %w", c.Schema().Name, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// waitVisible waits until the client's index (which follows its cache)
// shows the committed transaction, so that an immediate second Apply plans
// nothing: the rows it inserted are there and the rows it removed are gone
// (the server sends one transaction's changes in one update). A transaction
// of pure field updates has no such marker; then the index is polled until
// planning yields nothing.
func (c *Client) waitVisible(ctx context.Context, d *Desired, inserted, gone []index.RowRef) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// In the index (where plans find rows) and in the cache (what they read).
	has := func(r index.RowRef) bool {
		return c.index.Has(r.Table, r.UUID) && c.index.Row(c.NB.Cache().Table(r.Table), r.Table, r.UUID) != nil
	}
	hasNot := func(r index.RowRef) bool {
		return !c.index.Has(r.Table, r.UUID) && c.index.Row(c.NB.Cache().Table(r.Table), r.Table, r.UUID) == nil
	}
	marked := len(inserted)+len(gone) > 0
	// The rows seen are not looked at again (a large Apply's are many).
	inserted, gone = slices.Clone(inserted), slices.Clone(gone)
	for {
		// The index changes with events, which libovsdb delivers after the
		// cache has changed: wait for the next one, or poll (while the
		// index waits for a reconnect to rebuild).
		next := c.index.Next()
		var done bool
		if marked {
			unlock := c.index.Read(c.NB)
			inserted = slices.DeleteFunc(inserted, has)
			gone = slices.DeleteFunc(gone, hasNot)
			unlock()
			done = len(inserted)+len(gone) == 0
		} else {
			pending, err := c.indexPlan(d, nil)
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
func (c *Client) Networks(topology, piece string) []string {
	defer c.index.Read(c.NB)()
	return c.index.Networks(topology, piece, nbdb.LogicalRouterTable)
}

// PieceNetworks lists the networks that own any Northbound row of a topology
// piece (routers, switches, their children or DHCP options), including
// pieces that only add rows to routers or switches they do not own.
func (c *Client) PieceNetworks(topology, piece string) []string {
	defer c.index.Read(c.NB)()
	return c.index.Networks(topology, piece, indexedTables...)
}
