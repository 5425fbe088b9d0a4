package dataplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/schema"
)

// The client's cache does not hold the routers' and switches' columns of
// children (package schema says why); the index knows which parent holds each
// child (its links) instead:
//
//   - when it is built, from the server (one select of those columns);
//   - from every transaction Apply commits, which says exactly which
//     children it added to and removed from which parent;
//   - from the cache's events: a deleted parent holds no children, and a
//     deleted child is in no parent (OVSDB garbage-collects the children
//     no parent holds, so removing a child from its parent deletes it);
//   - a child another client inserted arrives as a row with no known
//     parent: before a plan reads a network's rows, its children with no
//     known parent are looked up on the server (a select per child).
//
// What it does not see is another client moving an existing child from
// one parent to another in one transaction (OVN's own tools never do), or
// adding an existing child to a second parent; the next rebuild (after a
// reconnect) sees them.

// link is one child in (or out of) a parent's column of children.
type link struct {
	parent, column, child string
	add                   bool
}

// parentColumns: child table → the parent table and column that hold its
// rows (package schema).
var parentColumns = schema.ParentColumns()

// lookUpTimeout bounds a select the index sends.
const lookUpTimeout = 30 * time.Second

// lookUpAtMost is how many children a look-up selects one by one; more
// are found with one select of every router's and switch's children.
const lookUpAtMost = 64

// learn applies links learnt otherwise than from a row (with rw held for
// writing).
func (ix *rowIndex) learn(e rowEvent) {
	if e.all != nil {
		ix.setLinks(e.all)
	}
	for _, l := range e.links {
		ix.relate(l)
	}
	for _, c := range e.unparented {
		if len(ix.parents[c]) == 0 {
			ix.unparented[c] = struct{}{}
			delete(ix.loose, c)
		}
	}
}

// recheck puts a child of table in loose, or takes it out, as its row,
// parents and look-ups now say.
func (ix *rowIndex) recheck(table, c string) {
	if ix.loose == nil {
		ix.loose = map[string]string{}
	}
	_, looked := ix.unparented[c]
	if _, ok := ix.rows[table][c]; ok && !looked && len(ix.parents[c]) == 0 {
		ix.loose[c] = table
		return
	}
	delete(ix.loose, c)
}

// childTable is the table of a child's row (UUIDs are unique across
// tables), if the index has it.
func (ix *rowIndex) childTable(c string) (string, bool) {
	for t := range parentColumns {
		if _, ok := ix.rows[t][c]; ok {
			return t, true
		}
	}
	return "", false
}

// setLinks replaces every link.
func (ix *rowIndex) setLinks(kids map[string]map[string]uuidSet) {
	ix.kids = map[string]map[string]uuidSet{}
	ix.sortedMu.Lock()
	ix.sorted, ix.edits = nil, nil
	ix.sortedMu.Unlock()
	ix.parents = map[string][]string{}
	ix.unparented = uuidSet{}
	ix.loose = map[string]string{}
	ix.netParents = nil // counted below, in one pass over the children
	for parent, cols := range kids {
		for col, children := range cols {
			for c := range children {
				ix.relate(link{parent: parent, column: col, child: c, add: true})
			}
		}
	}
	ix.netParents = map[string]map[string]int{}
	for t := range parentColumns {
		for c, m := range ix.rows[t] {
			_, ids, _, _ := schema.RowFields(t, m)
			for _, p := range ix.parents[c] {
				ix.holds(ids[ExternalIDNetwork], p, true)
			}
			ix.recheck(t, c)
		}
	}
	// Memos built from the links replaced are built again.
	ix.follows = nil
}

// relate adds or removes one link.
func (ix *rowIndex) relate(l link) {
	defer ix.resort(l)
	ix.logChange(l.parent, l.column, l.child)
	cols := ix.kids[l.parent]
	ps := ix.parents[l.child]
	i := slices.Index(ps, l.parent)
	if l.add {
		if cols == nil {
			cols = map[string]uuidSet{}
			ix.kids[l.parent] = cols
		}
		if cols[l.column] == nil {
			cols[l.column] = uuidSet{}
		}
		cols[l.column][l.child] = struct{}{}
		if i < 0 {
			ix.parents[l.child] = append(ps, l.parent)
			if ix.netParents != nil {
				ix.holds(ix.childNetwork(l.child), l.parent, true)
			}
		}
		delete(ix.unparented, l.child)
		delete(ix.loose, l.child)
		return
	}
	if cols != nil {
		delete(cols[l.column], l.child)
	}
	if i >= 0 {
		ix.holds(ix.childNetwork(l.child), l.parent, false)
	}
	switch {
	case i >= 0 && len(ps) == 1:
		delete(ix.parents, l.child)
		if t, ok := ix.childTable(l.child); ok {
			ix.recheck(t, l.child)
		}
	case i >= 0:
		ix.parents[l.child] = slices.Delete(slices.Clone(ps), i, i+1)
	}
}

// resort notes a link's change for the parent's kept sorted children, if
// any (after the set changed): the next children of the parent applies the
// changes noted since, in one copy (the slice handed out before stays as
// it was). A copy per change cost a large network's Apply, and its removal,
// a copy of its routers' ports per port: quadratic, and most of what the
// garbage collector had to do while another network's Apply waited.
func (ix *rowIndex) resort(l link) {
	key := [2]string{l.parent, l.column}
	ix.sortedMu.Lock()
	defer ix.sortedMu.Unlock()
	s, ok := ix.sorted[key]
	if !ok {
		return
	}
	e := ix.edits[key]
	if len(ix.kids[l.parent][l.column]) == 0 || e != nil && len(e.add)+len(e.del) >= len(s)/2+64 {
		// Nothing kept for a parent that lost its last child (or is gone),
		// nor when sorting the set anew is as cheap.
		delete(ix.sorted, key)
		delete(ix.edits, key)
		return
	}
	if e == nil {
		if ix.edits == nil {
			ix.edits = map[[2]string]*sortEdits{}
		}
		e = &sortEdits{}
		ix.edits[key] = e
	}
	if l.add {
		e.add = append(e.add, l.child)
	} else {
		e.del = append(e.del, l.child)
	}
}

// sortEdits are the children added to and removed from a parent's column
// since its kept sorted slice was made (each may since be undone).
type sortEdits struct{ add, del []string }

// apply returns s with the edits, as set now holds them: a new slice
// whose capacity is its length (s itself when nothing changed).
func (e *sortEdits) apply(s []string, set uuidSet) []string {
	var gone, add []string
	for _, c := range e.del {
		if _, in := set[c]; !in {
			if _, found := slices.BinarySearch(s, c); found {
				gone = append(gone, c)
			}
		}
	}
	for _, c := range e.add {
		if _, in := set[c]; in {
			if _, found := slices.BinarySearch(s, c); !found {
				add = append(add, c)
			}
		}
	}
	if len(gone) == 0 && len(add) == 0 {
		return s
	}
	slices.Sort(gone)
	gone = slices.Compact(gone)
	slices.Sort(add)
	add = slices.Compact(add)
	out := make([]string, 0, len(s)-len(gone)+len(add))
	g, a := 0, 0
	for _, c := range s {
		for a < len(add) && add[a] < c {
			out = append(out, add[a])
			a++
		}
		if g < len(gone) && gone[g] == c {
			g++
			continue
		}
		out = append(out, c)
	}
	return append(out, add[a:]...)
}

// holds counts one of a network's children in (or out of) a parent's
// netParents entry (none while setLinks relates every link).
func (ix *rowIndex) holds(network, parent string, add bool) {
	if network == "" || ix.netParents == nil {
		return
	}
	byParent := ix.netParents[network]
	if add {
		if byParent == nil {
			byParent = map[string]int{}
			ix.netParents[network] = byParent
		}
		byParent[parent]++
		return
	}
	if byParent[parent]--; byParent[parent] <= 0 {
		delete(byParent, parent)
		if len(byParent) == 0 {
			delete(ix.netParents, network)
		}
	}
}

// childNetwork is the network (external_ids) of an indexed child row, ""
// when the index has no row for it.
func (ix *rowIndex) childNetwork(c string) string {
	t, ok := ix.childTable(c)
	if !ok {
		return ""
	}
	_, ids, _, _ := schema.RowFields(t, ix.rows[t][c])
	return ids[ExternalIDNetwork]
}

// orphan forgets a (deleted) parent of table: its children, and the sorted
// lists and change logs kept for its columns.
func (ix *rowIndex) orphan(table, parent string) {
	ix.sortedMu.Lock()
	for col := range childColumns[table] {
		delete(ix.sorted, [2]string{parent, col})
		delete(ix.edits, [2]string{parent, col})
		delete(ix.follows, colKey{parent, col})
	}
	ix.sortedMu.Unlock()
	for col, children := range ix.kids[parent] {
		for c := range children {
			ix.relate(link{parent: parent, column: col, child: c})
		}
	}
	delete(ix.kids, parent)
}

// disown takes a (deleted) child out of its parents.
func (ix *rowIndex) disown(table, child string) {
	pc, ok := parentColumns[table]
	if !ok {
		return
	}
	for _, p := range slices.Clone(ix.parents[child]) {
		ix.relate(link{parent: p, column: pc[1], child: child})
	}
	delete(ix.unparented, child)
}

// children returns a parent's children in a column, sorted: a slice the
// index keeps (relate replaces it as the set changes), which callers must
// not modify (its capacity is its length, so an append copies).
func (ix *rowIndex) children(parent, column string) []string {
	key := [2]string{parent, column}
	ix.sortedMu.Lock()
	s, ok := ix.sorted[key]
	if e := ix.edits[key]; ok && e != nil {
		s = e.apply(s, ix.kids[parent][column])
		ix.sorted[key] = s
		delete(ix.edits, key)
	}
	ix.sortedMu.Unlock()
	if ok {
		return s
	}
	set := ix.kids[parent][column]
	if len(set) == 0 {
		return nil
	}
	s = slices.Clip(slices.Sorted(maps.Keys(set)))
	ix.sortedMu.Lock()
	if ix.sorted == nil {
		ix.sorted = map[[2]string][]string{}
	}
	ix.sorted[key] = s
	ix.sortedMu.Unlock()
	return s
}

// fill sets a router's or switch's columns of children (on a copy the
// caller owns) from the links.
func (ix *rowIndex) fill(table string, m model.Model) {
	schema.FillChildren(table, m, ix.children)
}

// withChildren returns a copy of a cached router or switch with its
// columns of children.
func withChildren[T any, PT interface {
	*T
	model.Model
}](ix *rowIndex, table string, m PT) PT {
	c := PT(new(T))
	*c = *m
	ix.fill(table, c)
	return c
}

// unlinked returns the children of a network (of every network: "") that
// no known parent holds and that were not looked up in vain: loose's
// (every plan asks; a scan of the network's children grew it with the
// network's size).
func (ix *rowIndex) unlinked(network string) []rowRef {
	var out []rowRef
	for c, t := range ix.loose {
		if _, ok := ix.byNet[t][network][c]; network == "" || ok {
			out = append(out, rowRef{t, c})
		}
	}
	slices.SortFunc(out, func(a, b rowRef) int { return cmp.Or(cmp.Compare(a.table, b.table), cmp.Compare(a.uuid, b.uuid)) })
	return out
}

// errUnlinked is what a plan returns when a decision needs every child of a
// parent (whether a shared router still holds another's rows, which of two
// routers of one name to keep) while some child's parent is unknown.
var errUnlinked = errors.New("some children's parents are not known yet")

// lookUp finds the parents of children (by a select) and queues what it
// found for the index.
func (ix *rowIndex) lookUp(api client.Client, children []rowRef) error {
	if len(children) > lookUpAtMost {
		kids, err := selectLinks(api)
		if err != nil {
			return err
		}
		ix.enqueue(rowEvent{all: kids})
		return nil
	}
	ops := make([]ovsdb.Operation, 0, len(children))
	for _, c := range children {
		pc := parentColumns[c.table]
		ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationSelect, Table: pc[0], Columns: []string{"_uuid"},
			Where: []ovsdb.Condition{ovsdb.NewCondition(pc[1], ovsdb.ConditionIncludes, schema.Set(c.uuid))}})
	}
	results, err := selectRows(api, ops)
	if err != nil {
		return err
	}
	var e rowEvent
	for i, c := range children {
		if len(results[i].Rows) == 0 {
			e.unparented = append(e.unparented, c.uuid)
		}
		for _, row := range results[i].Rows {
			for _, p := range schema.UUIDs(row["_uuid"]) {
				e.links = append(e.links, link{parent: p, column: parentColumns[c.table][1], child: c.uuid, add: true})
			}
		}
	}
	ix.enqueue(e)
	return nil
}

// selectLinks reads every router's and switch's children from the server.
func selectLinks(api client.Client) (map[string]map[string]uuidSet, error) {
	tables := slices.Sorted(maps.Keys(childColumns))
	ops := make([]ovsdb.Operation, 0, len(tables))
	for _, t := range tables {
		ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationSelect, Table: t,
			Columns: append([]string{"_uuid"}, slices.Sorted(maps.Keys(childColumns[t]))...)})
	}
	results, err := selectRows(api, ops)
	if err != nil {
		return nil, err
	}
	kids := map[string]map[string]uuidSet{}
	for i, t := range tables {
		for _, row := range results[i].Rows {
			for _, parent := range schema.UUIDs(row["_uuid"]) {
				cols := map[string]uuidSet{}
				for col := range childColumns[t] {
					for _, c := range schema.UUIDs(row[col]) {
						if cols[col] == nil {
							cols[col] = uuidSet{}
						}
						cols[col][c] = struct{}{}
					}
				}
				kids[parent] = cols
			}
		}
	}
	return kids, nil
}

func selectRows(api client.Client, ops []ovsdb.Operation) ([]ovsdb.OperationResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), lookUpTimeout)
	defer cancel()
	results, err := api.Transact(ctx, ops...)
	if err == nil {
		_, err = ovsdb.CheckOperationResults(results, ops)
	}
	if err != nil {
		return nil, fmt.Errorf("reading which routers and switches hold which rows: %w", err)
	}
	return results, nil
}

// committed returns the links a committed transaction made and unmade:
// children inserted with a new parent, added to or removed from one by a
// mutation. real maps the named UUIDs of its (and earlier transactions')
// inserts to the UUIDs the server gave them.
func committed(ops []ovsdb.Operation, results []ovsdb.OperationResult, real map[string]string) []link {
	resolve := func(u string) string {
		if r, ok := real[u]; ok {
			return r
		}
		return u
	}
	var out []link
	for i, op := range ops {
		cols := childColumns[op.Table]
		if cols == nil {
			continue
		}
		switch op.Op {
		case ovsdb.OperationInsert:
			if i >= len(results) {
				continue
			}
			parent := results[i].UUID.GoUUID
			for col := range cols {
				for _, c := range schema.UUIDs(op.Row[col]) {
					out = append(out, link{parent: parent, column: col, child: resolve(c), add: true})
				}
			}
		case ovsdb.OperationMutate:
			parent := resolve(schema.WhereUUID(op))
			for _, m := range op.Mutations {
				if cols[m.Column] == "" || (m.Mutator != ovsdb.MutateOperationInsert && m.Mutator != ovsdb.MutateOperationDelete) {
					continue
				}
				for _, c := range schema.UUIDs(m.Value) {
					out = append(out, link{parent: parent, column: m.Column, child: resolve(c), add: m.Mutator == ovsdb.MutateOperationInsert})
				}
			}
		}
	}
	return out
}
