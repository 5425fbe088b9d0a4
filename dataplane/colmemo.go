package dataplane

import (
	"errors"
	"hash/maphash"

	"github.com/ovn-kubernetes/libovsdb/model"
)

// columnMemo remembers, between one owner's plans, what children found in a
// parent's column of children: its owned children by key (with the cached
// model each was read from) and, for each, a fingerprint of the desired row
// last found equal to it. A plan brings it up to date with the rows and
// links the index changed since (rowIndex.changesSince), so adding one node
// to a network whose transit router holds a thousand ports reads the few
// changed ports instead of every port and every route again (reading each
// cached row of a large column was most of such a plan: cold memory), and
// a desired row whose fingerprint matches is not compared again.
//
// What it skips is only what the index says did not change: a row changed
// by another client whose event is still on its way is seen by the plan
// after the event, as it would be had the change come a moment later.
type columnMemo struct {
	// log and seq are the column's change log and the position in it the
	// memo is up to date with.
	log *changeLog
	seq uint64
	// seen: every child of the column → its key ("" when the child is not
	// the owner's or has no cached row).
	seen map[string]string
	// byKey: the owner's children, by key.
	byKey map[string]*colRow
	// epoch counts the plans that read the memo (colRow.epoch).
	epoch uint64
	// used: read by the current plan (keyMemo.prune forgets the others).
	used bool
}

type colRow struct {
	uuid     string
	m        model.Model
	ownerIDs bool
	// fp is the fingerprint of the desired row last found equal to m (0:
	// none, compare).
	fp uint64
	// epoch is the last plan whose desired rows hold this key.
	epoch uint64
}

// colKey names a parent's column of children.
type colKey struct{ parent, column string }

// changedBound is the largest share of a column's size that a memo applies
// changes for: beyond it (e.g. after the network's own large Apply)
// building it afresh is as cheap, and the column's log keeps no more.
func changedBound(children int) int { return children/4 + 64 }

// column returns the memo of a parent's column brought up to date with the
// index, or nil when the column is not remembered: no memo (a full diff),
// or a child whose ownership depends on the owner's AdoptLegacy and Legacy
// (which one owner's Applies may change), or two owned children with one
// key (duplicates, which the full diff heals).
func column[T any, PT interface {
	*T
	model.Model
}](p *planner, sp spec[T], parent string, current []string) *columnMemo {
	if p.memo == nil || p.links == nil || parent == "" {
		return nil
	}
	col := parentColumns[sp.table][1]
	if p.memo.cols == nil {
		p.memo.cols = map[colKey]*columnMemo{}
	}
	ck := colKey{parent, col}
	ix := p.links
	cm := p.memo.cols[ck]
	switch {
	case cm == nil:
		// A column is remembered from its second plan on: a restart plans
		// every network once, most networks are planned once for a long
		// while, and a memo costs memory and a plan building it. Until
		// then its place holds no children (seen nil).
		p.memo.cols[ck] = &columnMemo{used: true}
		return nil
	case cm.seen == nil:
		cm = nil // the second plan: built below
	default:
		changed, end, ok := ix.changesSince(ck, cm.log, cm.seq)
		if !ok || len(changed) > changedBound(len(current)) {
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
			p.memo.colHits++
		}
		// Every child is accounted for, or the memo is built again.
		if cm != nil && len(cm.seen) != len(current) {
			cm = nil
		}
	}
	if cm == nil {
		delete(p.memo.cols, ck)
		cl, seq := ix.follow(ck)
		cm = &columnMemo{log: cl, seq: seq, seen: make(map[string]string, len(current)), byKey: make(map[string]*colRow, len(current))}
		for _, u := range current {
			if !addChild[T, PT](p, sp, cm, u) {
				return nil
			}
		}
		p.memo.cols[ck] = cm
	}
	cm.used = true
	return cm
}

// forgetChild applies one change of the index to a memo: the child is read
// again if the column holds it. false: the memo cannot follow it.
func forgetChild[T any, PT interface {
	*T
	model.Model
}](p *planner, sp spec[T], cm *columnMemo, parent, col, u string) bool {
	if k, ok := cm.seen[u]; ok {
		if r := cm.byKey[k]; k != "" && r != nil && r.uuid == u {
			delete(cm.byKey, k)
		}
		delete(cm.seen, u)
	}
	if _, member := p.links.kids[parent][col][u]; !member {
		return true
	}
	return addChild[T, PT](p, sp, cm, u)
}

// addChild reads one child of the column into the memo. false: its
// ownership may change between plans, or its key is another owned child's.
func addChild[T any, PT interface {
	*T
	model.Model
}](p *planner, sp spec[T], cm *columnMemo, u string) bool {
	m := p.row(sp.table, u)
	if m == nil {
		cm.seen[u] = "" // deleted since the index saw it: its event will come
		return true
	}
	row := m.(PT)
	if !p.owner.settled(*sp.ids((*T)(row))) {
		return false
	}
	// Not memoKey: the column's memo holds the key, the key memo would
	// hold it a second time.
	r := ownedKey(p, m, sp, (*T)(row))
	if !r.owned {
		cm.seen[u] = ""
		return true
	}
	if _, dup := cm.byKey[r.key]; dup {
		return false
	}
	cm.seen[u] = r.key
	cm.byKey[r.key] = &colRow{uuid: u, m: m, ownerIDs: r.ownerIDs}
	return true
}

// fpSeed seeds the fingerprints (one process's memos compare them).
var fpSeed = maphash.MakeSeed()

// fingerprint hashes a row's managed columns the way sameFields compares
// them: sets and maps unordered, an empty map as a missing one, an unset
// optional value apart from every set one. ok is false for a column type it
// does not know (the row is then always compared). Two rows with equal
// fingerprints are taken as equal: with 64 bits, a wrong match has a
// probability of 2⁻⁶⁴ per comparison.
func fingerprint(fields []any, shared map[string]string, sharedFP uint64) (fp uint64, ok bool) {
	mix := func(tag, v uint64) { fp = maphash.Comparable(fpSeed, [3]uint64{fp, tag, v}) }
	for _, f := range fields {
		switch x := f.(type) {
		case *map[string]string:
			if len(*x) > 0 && sameMap(*x, shared) {
				mix(1, sharedFP)
				continue
			}
			mix(1, mapFP(*x))
		case *[]string:
			var sum uint64
			for _, s := range *x {
				sum += maphash.String(fpSeed, s)
			}
			mix(2, sum+uint64(len(*x)))
		case **string:
			if *x == nil {
				mix(3, 0)
				continue
			}
			mix(4, maphash.String(fpSeed, **x))
		case *string:
			mix(5, maphash.String(fpSeed, *x))
		case *int:
			mix(6, uint64(*x))
		default:
			return 0, false
		}
	}
	return fp, fp != 0
}

// mapFP is an order-independent hash of a map's entries.
func mapFP(m map[string]string) uint64 {
	var sum uint64
	for k, v := range m {
		sum += maphash.Comparable(fpSeed, [2]string{k, v})
	}
	return sum
}

// errMemoBehind: a column's memo holds a model the cache has replaced.
var errMemoBehind = errors.New("the column's memo is behind the cache")

// rememberedChildren is children with a column's memo: only the desired
// rows whose fingerprint differs from the one last found equal (and those
// of rows that changed since) are compared with their cached row.
func rememberedChildren[T any, PT interface {
	*T
	model.Model
}](p *planner, sp spec[T], cm *columnMemo, desired []T) (insert, remove []string, err error) {
	cm.epoch++
	epoch := cm.epoch
	shared := p.sharedIDs()
	if p.memo.idsFP == 0 {
		p.memo.idsFP = mapFP(shared)
	}
	claimed := 0
	var created map[string]bool
	for i := range desired {
		d := &desired[i]
		k := sp.key(d)
		ex := cm.byKey[k]
		if ex != nil && ex.epoch == epoch || ex == nil && created[k] {
			return nil, nil, duplicateRows(sp.table, k)
		}
		stamped := p.stamp(sp.ids(d))
		if ex == nil {
			u, err := createChild[T, PT](p, sp, d, k, &created)
			if err != nil {
				return nil, nil, err
			}
			insert = append(insert, u)
			continue
		}
		ex.epoch = epoch
		claimed++
		want := sp.fields(d, p.want[:0])
		fp, ok := fingerprint(want, shared, p.memo.idsFP)
		if ok && fp == ex.fp {
			p.memo.fpHits++
			continue
		}
		if p.row(sp.table, ex.uuid) != ex.m {
			// The cache is ahead of the index (an event on its way): the
			// plan reads the column afresh.
			return nil, nil, errMemoBehind
		}
		same, err := updateChild(p, sp, d, ex.m.(PT), stamped, ex.ownerIDs)
		if err != nil {
			return nil, nil, err
		}
		if same {
			ex.fp = fp // 0 when !ok: compared again next time
			continue
		}
		ex.fp = 0
	}
	if claimed < len(cm.byKey) {
		for _, r := range cm.byKey {
			if r.epoch != epoch {
				remove = append(remove, r.uuid)
			}
		}
	}
	return insert, remove, nil
}
