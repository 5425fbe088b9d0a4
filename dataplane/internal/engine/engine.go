package engine

import (
	"time"

	"github.com/ovn-kubernetes/libovsdb/cache"
	"github.com/ovn-kubernetes/libovsdb/client"

	"github.com/udnkit/udnkit/dataplane/internal/index"
	"github.com/udnkit/udnkit/dataplane/internal/ovsconn"
	"github.com/udnkit/udnkit/dataplane/internal/plan"
	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/rows"
)

// Engine applies desired rows to the Northbound database through one
// connection: per-network locks, the planner, the transactions, waiting
// until the cache shows them, and the healer that notices rows lost
// without an Apply.
type Engine struct {
	// NB is the Northbound connection; Index the rows plans read.
	NB    client.Client
	Index *index.Index
	// MaxTransactionOps bounds one transaction of an Apply: its operations
	// plus the child references they add or remove. A larger plan is sent
	// as a sequence of transactions of at most two thirds of this size
	// (rows that belong together, such as one node's, are never split). 0
	// means DefaultMaxTransactionOps; a negative value never splits. Set it
	// before the first Apply.
	MaxTransactionOps int
	// MaxRemovalOps bounds one transaction of RemoveUnless the same way
	// (whole networks' removals per transaction); 0 means
	// DefaultMaxRemovalOps, a negative value one transaction.
	MaxRemovalOps int
	// Memos remember, per topology piece, the keys of its cached rows
	// between Applies (package plan).
	Memos plan.Memos
	// applying serialises the Applies of one network (by its OVN name
	// prefix, which every row name of the network starts with): a piece
	// plans against a cache that shows every earlier Apply of its network,
	// so two pieces sharing a missing router or switch (Shared) never both
	// create it. Networks share no rows, so different networks apply
	// concurrently: a large network's transaction never delays another's.
	applying KeyLocks
	// groups queues the Applies waiting for their network's lock, to be
	// served together (group.go).
	groups groups
	// zone serialises the Applies that insert the same zone rows (the
	// default COPP and meters, which every network uses), one lock per row
	// ("table/name"): an Apply whose plan inserts some takes their locks
	// and plans again, so it finds the rows another network's Apply has
	// just inserted instead of inserting them a second time. Networks
	// inserting different zone rows (each its own load balancer groups)
	// never wait for each other.
	zone KeyLocks
	// ahead lets Applies of one transaction go before the next transaction
	// of a split (large) Apply.
	ahead priority
	// healing finds the networks whose rows the database lost or another
	// client changed (heal.go); it follows the Northbound cache's events.
	healing healer
	// hooks are the tests' (never nil; empty in production).
	hooks *Hooks
}

// Hooks are what tests and benchmarks pass in (New) to watch or steer an
// Apply; production passes none. The engine reads them as each Apply runs,
// so a test may set one between Applies.
type Hooks struct {
	// YieldAtMost, when set, replaces yieldAtMost.
	YieldAtMost time.Duration
	// BeforeTransact runs in Apply after planning (and a split Apply's
	// yield), with the network's lock held, just before the first
	// transaction is sent.
	BeforeTransact func(rows.Owner)
	// Committed runs in Apply once a transaction has committed, before the
	// index learns the links it made (the cache may show its rows).
	Committed func(rows.Owner)
	// AfterTransaction runs in Apply after transaction k of n has committed.
	AfterTransaction func(o rows.Owner, k, n int)
	// Observe is told how long each step of an Apply took: "lock" (waiting
	// for the network's lock), "plan", "split" (cutting a large plan into
	// transactions), "transact" (the round trip of a transaction), "yield"
	// (a split Apply letting others go first) and "visible" (waiting for
	// the cache to show the result).
	Observe func(o rows.Owner, step string, d time.Duration)
	// YieldWaits runs when a split Apply's yield starts waiting.
	YieldWaits func()
}

// New returns an engine with an empty index; the caller sets NB to the
// Northbound connection and feeds Index and Healer with its cache's events.
// hooks are the tests' (nil: none).
func New(hooks *Hooks) *Engine {
	if hooks == nil {
		hooks = &Hooks{}
	}
	return &Engine{Index: index.New(ovsconn.Up, plan.ChangedBound), hooks: hooks}
}

// Healer is the cache event handler that notices owned rows another client
// inserted, changed or deleted (heal.go); set NB before its first event.
func (e *Engine) Healer() *healer {
	e.healing.cache = func() *cache.TableCache { return e.NB.Cache() }
	return &e.healing
}

// NewPlan plans an Apply of d against the index with the owner's key memo
// (under the network's lock, which Apply holds).
func (e *Engine) NewPlan(d *rows.Desired) (*plan.Planner, error) {
	return plan.Incremental(e.NB, e.Index, &e.Memos, d)
}

// IndexPlan plans d against the index (memo nil: none).
func (e *Engine) IndexPlan(d *rows.Desired, memo *plan.Memo) (*plan.Planner, error) {
	return plan.Indexed(e.NB, e.Index, d, memo)
}

// FullPlan is the full diff of d against the cache.
func (e *Engine) FullPlan(d *rows.Desired) (*plan.Planner, error) {
	return plan.Full(e.NB, e.Index, d)
}

// The per-table facts the engine reads (package schema).
var (
	childColumns  = schema.ChildColumns()
	indexedTables = schema.Indexed()
)
