package plan

import (
	"maps"
	"sync"

	"github.com/ovn-kubernetes/libovsdb/model"

	"github.com/udnkit/udnkit/dataplane/internal/index"
	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/rows"
)

// Memo remembers, by the cached model's pointer, whether a cached row is
// the owner's and its identity key: a pointer seen again is the same row
// content (package index states why), so what was computed from it still
// holds. The memo only saves work (the route and NAT keys are built
// strings, and every owned child of a network's routers is keyed on every
// Apply), it never changes a plan.
type Memo struct {
	rows map[model.Model]memoRow
	// used counts this plan's lookups, to forget the models the cache dropped.
	used int
	// Hits counts the lookups answered from memory (tests).
	Hits int
	// ids is the owner's external_ids map the plans share, so that desired
	// rows stamped by an earlier plan are recognised as stamped by the map.
	ids map[string]string
	// Cols remembers the parents' columns of children (colmemo.go);
	// ColHits counts the columns brought up to date rather than read
	// afresh (tests).
	Cols    map[index.ColKey]*ColumnMemo
	ColHits int
	// FPHits counts the desired rows not compared (fingerprint matched).
	FPHits int
	// idsFP is the fingerprint of ids.
	idsFP uint64
}

type memoRow struct {
	key   string
	owned bool
	// ownerIDs: the row's external_ids are exactly the owner's (as most
	// desired rows' are), so comparing them with a desired row's that are
	// the Planner's shared ownerIDs map needs no map comparison.
	ownerIDs bool
}

// Memos holds one Memo per owner (network, topology, piece and Only).
type Memos struct {
	mu sync.Mutex
	// off makes every plan a plain full diff (benchmark baselines, tests).
	off   bool
	memos map[[5]string]*Memo
}

func (k *Memos) Get(o rows.Owner) *Memo {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.off {
		return nil
	}
	key := o.Key()
	if k.memos == nil {
		k.memos = map[[5]string]*Memo{}
	}
	m := k.memos[key]
	if m == nil {
		m = &Memo{rows: map[model.Model]memoRow{}}
		k.memos[key] = m
	}
	return m
}

// drop forgets an owner's memo.
func (k *Memos) drop(o rows.Owner) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.memos, o.Key())
}

// Reset forgets every memo; with off, later plans do not memoise.
func (k *Memos) Reset(off bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.memos, k.off = nil, off
}

// memoKey says whether a cached child row is the owner's, with its key.
// Ownership is remembered only when it does not depend on the owner's
// AdoptLegacy and Legacy (rows.Owner.settled).
func memoKey[T any](p *Planner, m model.Model, sp schema.Spec[T], row *T) memoRow {
	if p.memo != nil {
		p.memo.used++
		if r, ok := p.memo.rows[m]; ok {
			p.memo.Hits++
			return r
		}
	}
	r := ownedKey(p, m, sp, row)
	if r.owned && p.memo != nil && p.owner.Settled(*sp.IDs(row)) {
		p.memo.rows[m] = r
	}
	return r
}

// ownedKey is memoKey without the memo.
func ownedKey[T any](p *Planner, m model.Model, sp schema.Spec[T], row *T) memoRow {
	ids := *sp.IDs(row)
	if !p.owner.Owns(ids, m) {
		return memoRow{}
	}
	return memoRow{key: sp.Key(row), owned: true, ownerIDs: maps.Equal(ids, p.sharedIDs())}
}

// prune forgets every key when most of them are of models the cache no
// longer holds (they are computed again when next needed).
func (m *Memo) prune() {
	if len(m.rows) > 2*m.used+1024 {
		m.rows = map[model.Model]memoRow{}
	}
	m.used = 0
	// And the columns the plan did not read (their parent is gone).
	for k, c := range m.Cols {
		if !c.used {
			delete(m.Cols, k)
		}
		c.used = false
	}
}
