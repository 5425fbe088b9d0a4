package plan

import (
	"errors"
	"slices"

	"github.com/ovn-kubernetes/libovsdb/model"

	"github.com/udnkit/udnkit/dataplane/internal/index"
	"github.com/udnkit/udnkit/dataplane/internal/plan/refs"
	"github.com/udnkit/udnkit/dataplane/internal/schema"
)

// rowsOf returns the cached rows of a root table the plan looks at (see
// scan), in UUID order.
func rowsOf[T any, PT interface {
	*T
	model.Model
}](p *Planner, table string, names []string) []PT {
	uuids := p.scan(table, names, true)
	out := make([]PT, 0, len(uuids))
	for _, u := range uuids {
		if m := p.row(table, u); m != nil { // nil: deleted since the index saw it
			out = append(out, m.(PT))
		}
	}
	return out
}

// children diffs the desired child rows against the parent's current children
// (in its column: parentColumns) that this piece owns; it emits creates and updates and
// returns the named UUIDs to insert into the parent's column and the UUIDs
// to remove from it. parent is "" for a root table's rows (current: every
// row the plan looks at), and for the children of a row the plan inserts.
// kids, when set, plans each desired row's own children (see kids).
func children[T any, PT interface {
	*T
	model.Model
}](p *Planner, sp schema.Spec[T], parent string, current []string, desired []T, kids kids[T]) (insert, remove []string, err error) {
	if cm := column[T, PT](p, sp, parent, current); cm != nil {
		ops := len(p.Ops)
		insert, remove, err := rememberedChildren[T, PT](p, sp, cm, desired, kids)
		if err == nil {
			return insert, p.removing(sp.Table, remove), nil
		}
		if !errors.Is(err, errMemoBehind) {
			return nil, nil, err
		}
		p.Ops = p.Ops[:ops]
		delete(p.memo.Cols, index.ColKey{Parent: parent, Column: parentColumns[sp.Table][1]})
	}
	type found struct {
		row      PT
		ownerIDs bool
		claimed  bool // by a desired row
	}
	existing := make(map[string]found, len(current))
	var extra []string
	for _, u := range current {
		m := p.row(sp.Table, u)
		if m == nil {
			continue
		}
		row := m.(PT)
		r := memoKey(p, m, sp, (*T)(row))
		if !r.owned {
			continue
		}
		if prev, dup := existing[r.key]; dup {
			// Duplicates (e.g. written by a racing writer) heal: the row with
			// the smallest UUID survives, whatever the column's order.
			if pu := *sp.UUID((*T)(prev.row)); u < pu {
				existing[r.key], u = found{row: row, ownerIDs: r.ownerIDs}, pu
			}
			extra = append(extra, u)
			continue
		}
		existing[r.key] = found{row: row, ownerIDs: r.ownerIDs}
	}
	var created map[string]bool
	for i := range desired {
		d := &desired[i]
		k := sp.Key(d)
		ex, ok := existing[k]
		if ok && ex.claimed || !ok && created[k] {
			return nil, nil, refs.DuplicateRows(sp.Table, k)
		}
		shared := p.stamp(sp.IDs(d))
		if !ok {
			u, err := createChild[T, PT](p, sp, d, k, &created, kids)
			if err != nil {
				return nil, nil, err
			}
			insert = append(insert, u)
			continue
		}
		ex.claimed = true
		existing[k] = ex
		if err := kids.plan(d, *sp.UUID((*T)(ex.row))); err != nil {
			return nil, nil, err
		}
		if _, err := updateChild(p, sp, d, ex.row, shared, ex.ownerIDs); err != nil {
			return nil, nil, err
		}
	}
	for _, f := range existing {
		if !f.claimed {
			remove = append(remove, *sp.UUID((*T)(f.row)))
		}
	}
	return insert, p.removing(sp.Table, append(remove, extra...)), nil
}

// removing sorts the children a plan takes out of their parent's column
// and notes them gone, with their own children (a port's gateway chassis,
// garbage-collected with it): Apply waits until the cache shows them
// deleted.
func (p *Planner) removing(table string, uuids []string) []string {
	slices.Sort(uuids)
	for _, u := range uuids {
		p.Gone = append(p.Gone, index.RowRef{Table: table, UUID: u})
		for _, c := range schema.ChildTables(table) {
			for _, k := range p.links.Children(u, c.Column) {
				p.Gone = append(p.Gone, index.RowRef{Table: c.Name, UUID: k})
			}
		}
	}
	return uuids
}

// kids plans the children of one desired child row (a router port's
// gateway chassis: rows of a Child table that a child holds). uuid is the
// cached row's; "" for a row the plan inserts, whose column of children
// kids then sets to the children it inserts (in the same transaction:
// package txn keeps them together).
type kids[T any] func(d *T, uuid string) error

func (k kids[T]) plan(d *T, uuid string) error {
	if k == nil {
		return nil
	}
	return k(d, uuid)
}

// createChild emits the insert of a desired child (after its own children's)
// and returns its named UUID.
func createChild[T any, PT interface {
	*T
	model.Model
}](p *Planner, sp schema.Spec[T], d *T, k string, created *map[string]bool, kids kids[T]) (string, error) {
	if *created == nil {
		*created = map[string]bool{}
	}
	(*created)[k] = true
	if err := kids.plan(d, ""); err != nil {
		return "", err
	}
	u := p.name()
	*sp.UUID(d) = u
	if p.inserted == nil {
		p.inserted = map[[2]string]string{}
	}
	p.inserted[[2]string{sp.Table, k}] = u
	return u, p.add(p.api.Create(PT(d)))
}

// updateChild compares a desired child with its cached row and emits an
// update when they differ; same says they did not. stamped and ownerIDs say
// the desired and the cached external_ids are exactly the owner's.
func updateChild[T any, PT interface {
	*T
	model.Model
}](p *Planner, sp schema.Spec[T], d *T, row PT, stamped, ownerIDs bool) (same bool, err error) {
	want, have := sp.Fields(d, p.want[:0]), sp.Fields((*T)(row), p.have[:0])
	if stamped && ownerIDs && want[0] == any(sp.IDs(d)) {
		// Both external_ids are exactly the owner's: compare the rest.
		want, have = want[1:], have[1:]
	}
	if schema.SameFields(want, have) {
		return true, nil
	}
	return false, p.add(p.api.Where(row).Update(PT(d), sp.Fields(d, nil)...))
}

// stamp adds the owner's external_ids to a desired row's. Rows with no
// external_ids of their own (most of them) share one read-only map.
func (p *Planner) stamp(ids *map[string]string) (shared bool) {
	if len(*ids) == 0 || schema.SameMap(*ids, p.sharedIDs()) {
		*ids = p.sharedIDs()
		return true
	}
	stamped := true
	for k, v := range p.ownerIDs {
		if w, ok := (*ids)[k]; !ok || w != v {
			stamped = false
			break
		}
	}
	if stamped {
		// Stamped by an earlier plan of the same desired rows.
		if len(*ids) == len(p.ownerIDs) {
			*ids = p.ownerIDs
			return true
		}
		return false
	}
	m := make(map[string]string, len(*ids)+3)
	for k, v := range *ids {
		m[k] = v
	}
	for k, v := range p.ownerIDs {
		m[k] = v
	}
	*ids = m
	return false
}

// sharedIDs is the owner's external_ids, shared read-only by the desired
// rows that have no other external_ids.
func (p *Planner) sharedIDs() map[string]string {
	if p.ownerIDs == nil {
		p.ownerIDs = p.owner.IDs()
	}
	return p.ownerIDs
}

// roots diffs rows of a root table (kept until deleted) that this piece owns.
func roots[T any, PT interface {
	*T
	model.Model
}](p *Planner, sp schema.Spec[T], desired []T) error {
	_, remove, err := children[T, PT](p, sp, "", p.scan(sp.Table, nil, false), desired, nil)
	if err != nil {
		return err
	}
	for _, u := range remove {
		row := PT(new(T))
		*sp.UUID((*T)(row)) = u
		if err := p.add(p.api.Where(row).Delete()); err != nil {
			return err
		}
	}
	return nil
}
