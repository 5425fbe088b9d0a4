package plan

import (
	"errors"

	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/udnkit/udnkit/dataplane/internal/index"
	"github.com/udnkit/udnkit/dataplane/internal/plan/refs"
	"github.com/udnkit/udnkit/dataplane/internal/schema"
)

// ColumnMemo remembers, between one owner's plans, what children found in a
// parent's column of children: its owned children by key (with the cached
// model each was read from) and, for each, a fingerprint of the desired row
// last found equal to it. A plan brings it up to date with the rows and
// links the index changed since (index.ChangesSince), so adding one node
// to a network whose transit router holds a thousand ports reads the few
// changed ports instead of every port and every route again (reading each
// cached row of a large column was most of such a plan: cold memory), and
// a desired row whose fingerprint matches is not compared again.
//
// What it skips is only what the index says did not change: a row changed
// by another client whose event is still on its way is seen by the plan
// after the event, as it would be had the change come a moment later.
type ColumnMemo struct {
	// log and seq are the column's change log and the position in it the
	// memo is up to date with.
	log *index.ChangeLog
	seq uint64
	// Seen: every child of the column → its key ("" when the child is not
	// the owner's or has no cached row).
	Seen map[string]string
	// ByKey: the owner's children, by key.
	ByKey map[string]*ColRow
	// epoch counts the plans that read the memo (ColRow.epoch).
	epoch uint64
	// used: read by the current plan (Memo.prune forgets the others).
	used bool
}

type ColRow struct {
	uuid     string
	M        model.Model
	ownerIDs bool
	// FP is the fingerprint of the desired row last found equal to m (0:
	// none, compare).
	FP uint64
	// epoch is the last plan whose desired rows hold this key.
	epoch uint64
}

// ChangedBound is the largest share of a column's size that a memo applies
// changes for: beyond it (e.g. after the network's own large Apply)
// building it afresh is as cheap, and the column's log keeps no more.
func ChangedBound(children int) int { return children/4 + 64 }

// column returns the memo of a parent's column brought up to date with the
// index, or nil when the column is not remembered: no memo (a full diff),
// or a child whose ownership depends on the owner's AdoptLegacy and Legacy
// (which one owner's Applies may change), or two owned children with one
// key (duplicates, which the full diff heals).
func column[T any, PT interface {
	*T
	model.Model
}](p *Planner, sp schema.Spec[T], parent string, current []string) *ColumnMemo {
	if p.memo == nil || p.links == nil || parent == "" {
		return nil
	}
	col := parentColumns[sp.Table][1]
	if p.memo.Cols == nil {
		p.memo.Cols = map[index.ColKey]*ColumnMemo{}
	}
	ck := index.ColKey{Parent: parent, Column: col}
	ix := p.links
	cm := p.memo.Cols[ck]
	switch {
	case cm == nil:
		// A column is remembered from its second plan on: a restart plans
		// every network once, most networks are planned once for a long
		// while, and a memo costs memory and a plan building it. Until
		// then its place holds no children (seen nil).
		p.memo.Cols[ck] = &ColumnMemo{used: true}
		return nil
	case cm.Seen == nil:
		cm = nil // the second plan: built below
	default:
		changed, end, ok := ix.ChangesSince(ck, cm.log, cm.seq)
		if !ok || len(changed) > ChangedBound(len(current)) {
			cm = nil
		}
		for _, u := range changed {
			if cm == nil {
				break
			}
			if !forgetChild[T, PT](p, sp, cm, parent, col, u) {
				cm = nil
			}
		}
		if cm != nil {
			cm.seq = end
			p.memo.ColHits++
		}
		// Every child is accounted for, or the memo is built again.
		if cm != nil && len(cm.Seen) != len(current) {
			cm = nil
		}
	}
	if cm == nil {
		delete(p.memo.Cols, ck)
		cl, seq := ix.Follow(ck)
		cm = &ColumnMemo{log: cl, seq: seq, Seen: make(map[string]string, len(current)), ByKey: make(map[string]*ColRow, len(current))}
		for _, u := range current {
			if !addChild[T, PT](p, sp, cm, u) {
				return nil
			}
		}
		p.memo.Cols[ck] = cm
	}
	cm.used = true
	return cm
}

// forgetChild applies one change of the index to a memo: the child is read
// again if the column holds it. false: the memo cannot follow it.
func forgetChild[T any, PT interface {
	*T
	model.Model
}](p *Planner, sp schema.Spec[T], cm *ColumnMemo, parent, col, u string) bool {
	if k, ok := cm.Seen[u]; ok {
		if r := cm.ByKey[k]; k != "" && r != nil && r.uuid == u {
			delete(cm.ByKey, k)
		}
		delete(cm.Seen, u)
	}
	if !p.links.Holds(parent, col, u) {
		return true
	}
	return addChild[T, PT](p, sp, cm, u)
}

// addChild reads one child of the column into the memo. false: its
// ownership may change between plans, or its key is another owned child's.
func addChild[T any, PT interface {
	*T
	model.Model
}](p *Planner, sp schema.Spec[T], cm *ColumnMemo, u string) bool {
	m := p.row(sp.Table, u)
	if m == nil {
		cm.Seen[u] = "" // deleted since the index saw it: its event will come
		return true
	}
	row := m.(PT)
	if !p.owner.Settled(*sp.IDs((*T)(row))) {
		return false
	}
	// Not memoKey: the column's memo holds the key, the key memo would
	// hold it a second time.
	r := ownedKey(p, m, sp, (*T)(row))
	if !r.owned {
		cm.Seen[u] = ""
		return true
	}
	if _, dup := cm.ByKey[r.key]; dup {
		return false
	}
	cm.Seen[u] = r.key
	cm.ByKey[r.key] = &ColRow{uuid: u, M: m, ownerIDs: r.ownerIDs}
	return true
}

// errMemoBehind: a column's memo holds a model the cache has replaced.
var errMemoBehind = errors.New("the column's memo is behind the cache")

// rememberedChildren is children with a column's memo: only the desired
// rows whose fingerprint differs from the one last found equal (and those
// of rows that changed since) are compared with their cached row.
func rememberedChildren[T any, PT interface {
	*T
	model.Model
}](p *Planner, sp schema.Spec[T], cm *ColumnMemo, desired []T, kids kids[T]) (insert, remove []string, err error) {
	cm.epoch++
	epoch := cm.epoch
	shared := p.sharedIDs()
	if p.memo.idsFP == 0 {
		p.memo.idsFP = schema.MapFP(shared)
	}
	claimed := 0
	var created map[string]bool
	for i := range desired {
		d := &desired[i]
		k := sp.Key(d)
		ex := cm.ByKey[k]
		if ex != nil && ex.epoch == epoch || ex == nil && created[k] {
			return nil, nil, refs.DuplicateRows(sp.Table, k)
		}
		if ex == nil {
			p.stamp(sp.IDs(d))
			u, err := createChild[T, PT](p, sp, d, k, &created, kids)
			if err != nil {
				return nil, nil, err
			}
			insert = append(insert, u)
			continue
		}
		ex.epoch = epoch
		claimed++
		// Its own children are diffed whatever its fingerprint says (they
		// are not among its columns).
		if err := kids.plan(d, ex.uuid); err != nil {
			return nil, nil, err
		}
		// The fingerprint reads the external_ids as the stamp makes them
		// (schema.Fingerprint): a row that matches is neither stamped nor
		// compared.
		want := sp.Fields(d, p.want[:0])
		fp, ok := schema.Fingerprint(want, shared, p.memo.idsFP)
		if ok && fp == ex.FP {
			p.memo.FPHits++
			continue
		}
		if p.row(sp.Table, ex.uuid) != ex.M {
			// The cache is ahead of the index (an event on its way): the
			// plan reads the column afresh.
			return nil, nil, errMemoBehind
		}
		stamped := p.stamp(sp.IDs(d))
		same, err := updateChild(p, sp, d, ex.M.(PT), stamped, ex.ownerIDs)
		if err != nil {
			return nil, nil, err
		}
		if same {
			ex.FP = fp // 0 when !ok: compared again next time
			continue
		}
		ex.FP = 0
	}
	if claimed < len(cm.ByKey) {
		for _, r := range cm.ByKey {
			if r.epoch != epoch {
				remove = append(remove, r.uuid)
			}
		}
	}
	return insert, remove, nil
}
