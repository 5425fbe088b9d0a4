package txn

import (
	"maps"
	"slices"
	"strconv"

	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/schema"
)

// grouping is the state of unitsOf: the units found so far and the child
// rows they insert or remove.
type grouping struct {
	n       int // operations in the plan
	max     int // the chunks' weight
	cached  func(table, uuid string) model.Model
	units   []*unit
	byChild map[string]*unit // named UUID of an inserted child -> its unit
	members []member         // the child rows units insert or remove
	// joins are units that commit together whatever their rows name: an
	// inserted child and the children it holds itself (a router port and
	// its gateway chassis), which are no root rows.
	joins [][2]*unit
	// parents are the plan's inserts of routers and switches, by named
	// UUID, without their children; parentOrder their positions.
	parents     map[string]ovsdb.Operation
	parentOrder map[string]int
	// zone is the unit of the plan's zone inserts (nil: none).
	zone *unit
}

// unitsOf groups a plan's operations into units; parents are the plan's
// inserts of routers and switches, by named UUID, without their children.
func unitsOf(ops []ovsdb.Operation, max int, cached func(table, uuid string) model.Model) ([]*unit, map[string]ovsdb.Operation) {
	g := &grouping{n: len(ops), max: max, cached: cached, byChild: map[string]*unit{},
		parents: map[string]ovsdb.Operation{}, parentOrder: map[string]int{}}
	for i, op := range ops {
		if insertsChild(op) {
			u := &unit{order: i, ops: []ovsdb.Operation{op}}
			g.units = append(g.units, u)
			g.byChild[op.UUIDName] = u
			g.members = append(g.members, member{u: u, row: schema.Lookup(op.Table).GroupInsert(op.Row), insert: true})
		}
	}
	for i, op := range ops {
		g.add(i, op)
	}
	return g.finish(), g.parents
}

// isChild: the child tables (package schema).
var isChild = func() map[string]bool {
	out := map[string]bool{}
	for t := range schema.ParentColumns() {
		out[t] = true
	}
	return out
}()

// insertsChild says whether op inserts a child row by a named UUID.
func insertsChild(op ovsdb.Operation) bool {
	return op.Op == ovsdb.OperationInsert && op.UUIDName != "" && isChild[op.Table]
}

// add puts the plan's operation i into units.
func (g *grouping) add(i int, op ovsdb.Operation) {
	cols := childColumns[op.Table]
	t := schema.Lookup(op.Table)
	switch {
	case insertsChild(op):
		// A unit already; the children it inserts with it join it.
		for col := range cols {
			for _, c := range schema.UUIDs(op.Row[col]) {
				if u := g.byChild[c]; u != nil {
					g.joins = append(g.joins, [2]*unit{g.byChild[op.UUIDName], u})
				}
			}
		}
	case op.Op == ovsdb.OperationInsert && op.UUID == "" && cols != nil:
		g.parentInsert(i, op, cols)
	case op.Op == ovsdb.OperationMutate && cols != nil && schema.WhereUUID(op) != "":
		g.parentMutate(i, op, cols)
	case op.Op == ovsdb.OperationInsert && t != nil && t.Kind == schema.Zone:
		// A COPP, its meters and their band: one transaction, before the
		// routers that name the COPP.
		if g.zone == nil {
			g.zone = &unit{order: -2*g.n + i}
			g.units = append(g.units, g.zone)
		}
		g.zone.ops = append(g.zone.ops, op)
	case op.Op == ovsdb.OperationInsert && t != nil && t.Kind == schema.Root:
		g.standalone(op, -g.n+i) // before everything that may refer to it
	case op.Op == ovsdb.OperationDelete && cols != nil:
		g.parentDelete(i, op, cols)
	case op.Op == ovsdb.OperationDelete && t != nil && t.Kind == schema.Zone:
		// A load balancer group: after the routers and switches that named it.
		g.standalone(op, 3*g.n+i)
	case op.Op == ovsdb.OperationDelete:
		g.standalone(op, g.n+i)
	default:
		g.standalone(op, i)
	}
}

func (g *grouping) standalone(op ovsdb.Operation, order int) {
	g.units = append(g.units, &unit{order: order, ops: []ovsdb.Operation{op}})
}

// parentInsert takes the children this plan inserts out of a parent's
// insert: each goes with its own unit, the parent with the first chunk
// that adds one (assemble).
func (g *grouping) parentInsert(i int, op ovsdb.Operation, cols map[string]string) {
	if op.UUIDName == "" {
		// Later chunks refer to the parent by the UUID this insert returns.
		op.UUIDName = "udnkitparent" + strconv.Itoa(i)
	}
	row := schema.CopyRow(op.Row)
	for col := range cols {
		var kept []string // not inserted by this plan (none are planned)
		for _, c := range schema.UUIDs(row[col]) {
			if u := g.byChild[c]; u != nil {
				u.refs = append(u.refs, childRef{parent: op.UUIDName, table: op.Table, column: col, uuid: c, insert: true})
			} else {
				kept = append(kept, c)
			}
		}
		if _, ok := row[col]; ok {
			row[col] = schema.Set(kept...)
		}
	}
	g.memberRefs(op.Table, op.UUIDName, row)
	op.Row = row
	g.parents[op.UUIDName] = op
	g.parentOrder[op.UUIDName] = i
}

// memberRefs takes out of a parent's insert (row) the members this plan
// inserts (a port group's new ports): each joins its own unit, so that no
// transaction names a member another one inserts.
func (g *grouping) memberRefs(table, parent string, row ovsdb.Row) {
	for col := range schema.Lookup(table).Members {
		v, ok := row[col]
		if !ok {
			continue
		}
		var kept []string
		for _, c := range schema.UUIDs(v) {
			if u := g.byChild[c]; u != nil {
				u.refs = append(u.refs, childRef{parent: parent, table: table, column: col, uuid: c, insert: true})
			} else {
				kept = append(kept, c)
			}
		}
		row[col] = schema.Set(kept...)
	}
}

// parentMutate splits a mutation of a parent's columns of children: an
// inserted child goes with its unit, a removed one is a unit of its own
// (grouped with the rows that belong with it), the rest stays one
// operation.
func (g *grouping) parentMutate(i int, op ovsdb.Operation, cols map[string]string) {
	var rest []ovsdb.Mutation
	members := schema.Lookup(op.Table).Members
	for _, m := range op.Mutations {
		if _, member := members[m.Column]; member && m.Mutator == ovsdb.MutateOperationInsert {
			row := ovsdb.Row{m.Column: m.Value}
			g.memberRefs(op.Table, schema.WhereUUID(op), row)
			if kept := row[m.Column].(ovsdb.OvsSet); len(kept.GoSet) > 0 {
				rest = append(rest, ovsdb.Mutation{Column: m.Column, Mutator: m.Mutator, Value: kept})
			}
			continue
		}
		if cols[m.Column] == "" || (m.Mutator != ovsdb.MutateOperationInsert && m.Mutator != ovsdb.MutateOperationDelete) {
			rest = append(rest, m)
			continue
		}
		for _, c := range schema.UUIDs(m.Value) {
			ref := childRef{parent: schema.WhereUUID(op), table: op.Table, column: m.Column, uuid: c,
				insert: m.Mutator == ovsdb.MutateOperationInsert}
			if u := g.byChild[c]; ref.insert && u != nil {
				u.refs = append(u.refs, ref)
			} else if ref.insert {
				rest = append(rest, ovsdb.Mutation{Column: m.Column, Mutator: m.Mutator, Value: schema.Set(c)})
			} else {
				u := &unit{order: i, refs: []childRef{ref}}
				g.units = append(g.units, u)
				g.removed(u, cols[m.Column], c, ref.parent)
			}
		}
	}
	if len(rest) > 0 {
		op.Mutations = rest
		g.standalone(op, i)
	}
}

// parentDelete makes a parent's delete a unit: its children go with it
// (few) or first (many, without it), a node's rows together, like any
// removed children.
func (g *grouping) parentDelete(i int, op ovsdb.Operation, cols map[string]string) {
	u := &unit{order: 2*g.n + i, ops: []ovsdb.Operation{op}}
	m, at := g.cached(op.Table, schema.WhereUUID(op)), schema.WhereUUID(op)
	n := schema.ChildCount(op.Table, m)
	if n <= g.max {
		u.gc = n
	}
	children := schema.ChildUUIDs(op.Table, m)
	for _, col := range slices.Sorted(maps.Keys(children)) {
		for _, c := range children[col] {
			r := u
			if n > g.max {
				r = &unit{order: g.n + i, refs: []childRef{{parent: at, table: op.Table, column: col, uuid: c}}}
				g.units = append(g.units, r)
			}
			g.removed(r, cols[col], c, at)
		}
	}
	g.units = append(g.units, u)
}

// removed notes a cached child of table that unit u removes from parent.
func (g *grouping) removed(u *unit, table, child, parent string) {
	if m := g.cached(table, child); m != nil {
		g.members = append(g.members, member{u: u, row: schema.Lookup(table).Group(m), parent: parent})
	}
}

// finish groups the members' units and weighs the units left.
func (g *grouping) finish() []*unit {
	for i := range g.members {
		if m := &g.members[i]; m.insert && len(m.u.refs) > 0 {
			m.parent = m.u.refs[0].parent
		}
	}
	group(g.members, g.joins)
	var out []*unit
	for _, u := range g.units {
		if u.merged {
			continue
		}
		u.weight = len(u.ops) + len(u.refs) + u.gc
		out = append(out, u)
	}
	// A parent inserted without children of its own is a unit too.
	used := map[string]bool{}
	for _, u := range out {
		for _, r := range u.refs {
			used[r.parent] = true
		}
	}
	for name, op := range g.parents {
		if !used[name] {
			out = append(out, &unit{order: g.parentOrder[name], ops: []ovsdb.Operation{op}, weight: 1})
		}
	}
	return out
}
