package index

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/ovnk"
)

// The client's cache does not hold the routers' and switches' columns of
// children (package schema says why); the index knows which parent holds each
// child (its links) instead:
//
//   - when it is built, from the server (one select of those columns,
//     which the connection sends with its monitor: prefetch.go);
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

// Link is one child in (or out of) a parent's column of children.
type Link struct {
	Parent, Column, Child string
	Add                   bool
}

// parentColumns: child table → the parent table and column that hold its
// rows, and childColumns: parent table → column of children → child table
// (package schema).
var (
	parentColumns = schema.ParentColumns()
	childColumns  = schema.ChildColumns()
)

// lookUpTimeout bounds a select the index sends.
const lookUpTimeout = 30 * time.Second

// lookUpAtMost is how many children a look-up selects one by one; more
// are found with one select of every router's and switch's children.
const lookUpAtMost = 64

// learn applies links learnt otherwise than from a row (with rw held for
// writing).
func (ix *Index) learn(e rowEvent) {
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
func (ix *Index) recheck(table, c string) {
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
func (ix *Index) childTable(c string) (string, bool) {
	for t := range parentColumns {
		if _, ok := ix.rows[t][c]; ok {
			return t, true
		}
	}
	return "", false
}

// setLinks replaces every link.
func (ix *Index) setLinks(kids map[string]map[string]uuidSet) {
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
				ix.relate(Link{Parent: parent, Column: col, Child: c, Add: true})
			}
		}
	}
	ix.netParents = map[string]map[string]int{}
	for t := range parentColumns {
		for c, m := range ix.rows[t] {
			_, ids, _, _ := schema.RowFields(t, m)
			for _, p := range ix.parents[c] {
				ix.holds(ids[ovnk.ExternalIDNetwork], p, true)
			}
			ix.recheck(t, c)
		}
	}
	// Memos built from the links replaced are built again.
	ix.follows = nil
}

// relate adds or removes one link.
func (ix *Index) relate(l Link) {
	defer ix.resort(l)
	ix.logChange(l.Parent, l.Column, l.Child)
	cols := ix.kids[l.Parent]
	ps := ix.parents[l.Child]
	i := slices.Index(ps, l.Parent)
	if l.Add {
		if cols == nil {
			cols = map[string]uuidSet{}
			ix.kids[l.Parent] = cols
		}
		if cols[l.Column] == nil {
			cols[l.Column] = uuidSet{}
		}
		cols[l.Column][l.Child] = struct{}{}
		if i < 0 {
			ix.parents[l.Child] = append(ps, l.Parent)
			if ix.netParents != nil {
				ix.holds(ix.childNetwork(l.Child), l.Parent, true)
			}
		}
		delete(ix.unparented, l.Child)
		delete(ix.loose, l.Child)
		return
	}
	if cols != nil {
		delete(cols[l.Column], l.Child)
	}
	if i >= 0 {
		ix.holds(ix.childNetwork(l.Child), l.Parent, false)
	}
	switch {
	case i >= 0 && len(ps) == 1:
		delete(ix.parents, l.Child)
		if t, ok := ix.childTable(l.Child); ok {
			ix.recheck(t, l.Child)
		}
	case i >= 0:
		ix.parents[l.Child] = slices.Delete(slices.Clone(ps), i, i+1)
	}
}

// resort notes a link's change for the parent's kept sorted children, if
// any (after the set changed): the next children of the parent applies the
// changes noted since, in one copy (the slice handed out before stays as
// it was). A copy per change cost a large network's Apply, and its removal,
// a copy of its routers' ports per port: quadratic, and most of what the
// garbage collector had to do while another network's Apply waited.
func (ix *Index) resort(l Link) {
	key := [2]string{l.Parent, l.Column}
	ix.sortedMu.Lock()
	defer ix.sortedMu.Unlock()
	s, ok := ix.sorted[key]
	if !ok {
		return
	}
	e := ix.edits[key]
	if len(ix.kids[l.Parent][l.Column]) == 0 || e != nil && len(e.add)+len(e.del) >= len(s)/2+64 {
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
	if l.Add {
		e.add = append(e.add, l.Child)
	} else {
		e.del = append(e.del, l.Child)
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
func (ix *Index) holds(network, parent string, add bool) {
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
func (ix *Index) childNetwork(c string) string {
	t, ok := ix.childTable(c)
	if !ok {
		return ""
	}
	_, ids, _, _ := schema.RowFields(t, ix.rows[t][c])
	return ids[ovnk.ExternalIDNetwork]
}

// orphan forgets a (deleted) parent of table: its children, and the sorted
// lists and change logs kept for its columns.
func (ix *Index) orphan(table, parent string) {
	ix.sortedMu.Lock()
	for col := range childColumns[table] {
		delete(ix.sorted, [2]string{parent, col})
		delete(ix.edits, [2]string{parent, col})
		delete(ix.follows, ColKey{Parent: parent, Column: col})
	}
	ix.sortedMu.Unlock()
	for col, children := range ix.kids[parent] {
		for c := range children {
			ix.relate(Link{Parent: parent, Column: col, Child: c})
		}
	}
	delete(ix.kids, parent)
}

// disown takes a (deleted) child out of its parents.
func (ix *Index) disown(table, child string) {
	pc, ok := parentColumns[table]
	if !ok {
		return
	}
	for _, p := range slices.Clone(ix.parents[child]) {
		ix.relate(Link{Parent: p, Column: pc[1], Child: child})
	}
	delete(ix.unparented, child)
}

// children returns a parent's children in a column, sorted: a slice the
// index keeps (relate replaces it as the set changes), which callers must
// not modify (its capacity is its length, so an append copies).
func (ix *Index) children(parent, column string) []string {
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

// Children returns a parent's children in a column, sorted (read-locked):
// a router port's gateway chassis, which no Fill of its router reaches.
// Callers must not modify the slice.
func (ix *Index) Children(parent, column string) []string { return ix.children(parent, column) }

// Fill sets a router's or switch's columns of children (on a copy the
// caller owns) from the links.
func (ix *Index) Fill(table string, m model.Model) {
	schema.FillChildren(table, m, ix.children)
}

// Unlinked returns the children of a network (of every network: "") that
// no known parent holds and that were not looked up in vain: loose's
// (every plan asks; a scan of the network's children grew it with the
// network's size).
func (ix *Index) Unlinked(network string) []RowRef {
	var out []RowRef
	for c, t := range ix.loose {
		if _, ok := ix.byNet[t][network][c]; network == "" || ok {
			out = append(out, RowRef{t, c})
		}
	}
	return sortRefs(out)
}

// UnlinkedBare returns the children with no external_ids at all that no
// known parent holds and that were not looked up in vain: rows of no
// network, which only an owner adopting legacy rows (rows.Owner.Legacy)
// may claim, so its plans look them up too (OVN-Kubernetes writes a
// node's management port so, possibly after the monitor's initial dump).
func (ix *Index) UnlinkedBare() []RowRef {
	var out []RowRef
	for c, t := range ix.loose {
		if _, ids, _, _ := schema.RowFields(t, ix.rows[t][c]); len(ids) == 0 {
			out = append(out, RowRef{t, c})
		}
	}
	return sortRefs(out)
}

// sortRefs sorts rows by table, then UUID.
func sortRefs(refs []RowRef) []RowRef {
	slices.SortFunc(refs, func(a, b RowRef) int { return cmp.Or(cmp.Compare(a.Table, b.Table), cmp.Compare(a.UUID, b.UUID)) })
	return refs
}

// LookUp finds the parents of children (by a select) and queues what it
// found for the index.
func (ix *Index) LookUp(api client.Client, children []RowRef) error {
	if len(children) > lookUpAtMost {
		linkLookUps.WithLabelValues("all").Inc()
		kids, err := selectLinks(api)
		if err != nil {
			return err
		}
		ix.enqueue(rowEvent{all: kids})
		return nil
	}
	linkLookUps.WithLabelValues("children").Inc()
	// One select per child and table that may hold it.
	var ops []ovsdb.Operation
	var asked []RowRef
	for _, c := range children {
		col := parentColumns[c.Table][1]
		for _, pt := range schema.Lookup(c.Table).Parents() {
			ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationSelect, Table: pt, Columns: []string{"_uuid"},
				Where: []ovsdb.Condition{ovsdb.NewCondition(col, ovsdb.ConditionIncludes, schema.Set(c.UUID))}})
			asked = append(asked, c)
		}
	}
	results, err := selectRows(api, ops)
	if err != nil {
		return err
	}
	var e rowEvent
	found := map[string]bool{}
	for i, c := range asked {
		for _, row := range results[i].Rows {
			for _, p := range schema.UUIDs(row["_uuid"]) {
				found[c.UUID] = true
				e.links = append(e.links, Link{Parent: p, Column: parentColumns[c.Table][1], Child: c.UUID, Add: true})
			}
		}
	}
	for _, c := range children {
		if !found[c.UUID] {
			e.unparented = append(e.unparented, c.UUID)
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

// Holds says whether a parent's column holds a child (read-locked).
func (ix *Index) Holds(parent, column, child string) bool {
	_, ok := ix.kids[parent][column][child]
	return ok
}

// ChildrenOf lists a parent's children of every column (read-locked).
func (ix *Index) ChildrenOf(parent string) []string {
	var out []string
	for _, kids := range ix.kids[parent] {
		for k := range kids {
			out = append(out, k)
		}
	}
	return out
}

// Unsure says whether some child's parent is not known (read-locked): a
// decision that needs every child of a parent must wait for its look-up.
func (ix *Index) Unsure() bool { return len(ix.loose) > 0 }
