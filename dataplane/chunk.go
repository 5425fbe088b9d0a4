package dataplane

import (
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strconv"

	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// DefaultMaxTransactionOps bounds one Northbound transaction of an Apply
// (Client.MaxTransactionOps): about 15 inserted rows, a few nodes; a plan
// that does not fit is split into transactions of two thirds of it (see
// split).
// The one ovsdb-server commits one transaction at a time and the client's
// single update stream applies one transaction's update at a time (holding
// its cache's lock), so an unrelated network's transaction waits behind at
// most one bounded transaction of a large network, never behind the whole
// network. What it waits for is that transaction's round trip, which grows
// with its operations (the cache holds no routers' child columns, whose
// every update libovsdb would walk and copy: package schema says why). The bound trades
// the large Apply's length against how long an unrelated Apply waits;
// BenchmarkUnrelatedNetworkDuringLargeApply measures both.
const DefaultMaxTransactionOps = 30

// A large plan is split into a sequence of transactions ("chunks"), each of
// which leaves a consistent topology:
//
//   - a child row (router port, route, policy, NAT, switch port) is inserted
//     in the same transaction as the parent insert or mutation that
//     references it (OVSDB garbage-collects unreferenced non-root rows);
//   - rows that belong together go in one transaction: a router port with the
//     routes, policies and NATs that use it (output port, logical port, a
//     next hop within its networks on the same router) and with its peer
//     router port or router-type switch port, i.e. one node's rows;
//   - a parent is inserted in the first transaction that adds one of its
//     children, later ones mutate it by the UUID the first one returned;
//   - root rows (address sets, DHCP options) are inserted first, so nothing
//     refers to a missing one, and deleted last, as are routers and switches;
//     a router or switch with more children than one transaction takes loses
//     them first, a node's rows at a time.
//
// Planning (validation, ownership refusals) is done for the whole plan before
// the first transaction; a failure between transactions leaves a consistent
// prefix that the next Apply completes (the plan is a diff).

// chunk is one transaction of a split plan. Its operations may refer to a
// parent inserted by an earlier chunk by the named UUID of its insert: resolve
// replaces it with the real UUID before the chunk is sent.
type chunk []ovsdb.Operation

// unit is a set of operations that must commit together.
type unit struct {
	order  int // position of its first operation in the plan
	ops    []ovsdb.Operation
	refs   []childRef // children it adds to (or removes from) a parent's column
	gc     int        // children garbage-collected with a parent it deletes
	merged bool       // into another unit
	weight int        // see weigh
}

// childRef is one child UUID to insert into (named: inserted by the same
// unit) or delete from (real) a parent's column.
type childRef struct {
	parent string // the parent's named UUID (inserted by this plan) or real UUID
	table  string // the parent's table
	column string
	uuid   string
	insert bool
}

// childColumns: parent table → column of children → child table (package
// schema).
var childColumns = schema.ChildColumns()

func isRoot(table string) bool {
	return table == nbdb.AddressSetTable || table == nbdb.DHCPOptionsTable
}

// maxTransactions is about the most transactions a plan is split into: a
// larger plan gets heavier ones. Each transaction that changes a router or
// switch with n children costs O(n) (the server and the client's cache
// copy the row), so a fixed bound would make a huge plan (the 40,000
// policies of the pair form) quadratic; this keeps the split Apply within
// a small factor of one transaction.
const maxTransactions = 200

// split splits a plan's operations into chunks that weigh at most two
// thirds of bound each (see weigh; at least a 1/maxTransactions share of
// the plan; a unit heavier than that gets a chunk of its own). A plan that
// weighs at most bound is one chunk, exactly as planned: a small network's
// Apply stays one transaction, while an unrelated one waits behind a
// large one's smaller chunks (BenchmarkUnrelatedNetworkDuringLargeApply
// measures the trade: a smaller bound lets the small Apply in sooner and
// makes the large one longer). cached looks a row
// up in the client's cache (for the children of deleted routers and
// switches).
func split(ops []ovsdb.Operation, bound int, cached func(table, uuid string) model.Model) []chunk {
	total := weigh(ops, cached)
	if bound <= 0 || total <= bound {
		return []chunk{ops}
	}
	max := max(bound*2/3, (total+maxTransactions-1)/maxTransactions, 1)
	units, parents := unitsOf(ops, max, cached)
	sort.SliceStable(units, func(i, j int) bool { return units[i].order < units[j].order })
	var chunks []chunk
	inserted := map[string]bool{} // parents inserted by an earlier chunk
	var cur []*unit
	weight := 0
	flush := func() {
		if len(cur) > 0 {
			chunks = append(chunks, assemble(cur, parents, inserted))
		}
		cur, weight = nil, 0
	}
	for _, u := range units {
		if weight > 0 && weight+u.weight > max {
			flush()
		}
		cur = append(cur, u)
		weight += u.weight
	}
	flush()
	return chunks
}

// weigh is what bounds a transaction: one for each operation and for each
// child a mutation adds or removes (so an inserted child weighs two), and
// the children a deleted parent takes along.
func weigh(ops []ovsdb.Operation, cached func(table, uuid string) model.Model) int {
	n := 0
	for _, op := range ops {
		n++
		for _, m := range op.Mutations {
			n += len(schema.UUIDs(m.Value))
		}
		if op.Op == ovsdb.OperationDelete && childColumns[op.Table] != nil {
			if m := cached(op.Table, schema.WhereUUID(op)); m != nil {
				n += schema.ChildCount(op.Table, m)
			}
		}
	}
	return n
}

// unitsOf groups a plan's operations into units; parents are the plan's
// inserts of routers and switches, by named UUID, without their children.
func unitsOf(ops []ovsdb.Operation, max int, cached func(table, uuid string) model.Model) ([]*unit, map[string]ovsdb.Operation) {
	var units []*unit
	byChild := map[string]*unit{} // named UUID of an inserted child -> its unit
	var members []member          // the child rows units insert or remove
	parents := map[string]ovsdb.Operation{}
	parentOrder := map[string]int{}
	for i, op := range ops {
		if op.Op == ovsdb.OperationInsert && op.UUIDName != "" && childTable(op.Table) {
			u := &unit{order: i, ops: []ovsdb.Operation{op}}
			units = append(units, u)
			byChild[op.UUIDName] = u
			members = append(members, member{u: u, row: insertedRow(op), insert: true})
		}
	}
	standalone := func(op ovsdb.Operation, order int) {
		units = append(units, &unit{order: order, ops: []ovsdb.Operation{op}})
	}
	for i, op := range ops {
		cols := childColumns[op.Table]
		switch {
		case op.Op == ovsdb.OperationInsert && op.UUIDName != "" && childTable(op.Table):
			// a unit already
		case op.Op == ovsdb.OperationInsert && op.UUID == "" && cols != nil:
			if op.UUIDName == "" {
				// Later chunks refer to the parent by the UUID this insert returns.
				op.UUIDName = "udnkitparent" + strconv.Itoa(i)
			}
			row := schema.CopyRow(op.Row)
			for col := range cols {
				var kept []string // not inserted by this plan (none are planned)
				for _, c := range schema.UUIDs(row[col]) {
					if u := byChild[c]; u != nil {
						u.refs = append(u.refs, childRef{parent: op.UUIDName, table: op.Table, column: col, uuid: c, insert: true})
					} else {
						kept = append(kept, c)
					}
				}
				if _, ok := row[col]; ok {
					row[col] = schema.Set(kept...)
				}
			}
			op.Row = row
			parents[op.UUIDName] = op
			parentOrder[op.UUIDName] = i
		case op.Op == ovsdb.OperationMutate && cols != nil && schema.WhereUUID(op) != "":
			var rest []ovsdb.Mutation
			for _, m := range op.Mutations {
				if cols[m.Column] == "" || (m.Mutator != ovsdb.MutateOperationInsert && m.Mutator != ovsdb.MutateOperationDelete) {
					rest = append(rest, m)
					continue
				}
				for _, c := range schema.UUIDs(m.Value) {
					ref := childRef{parent: schema.WhereUUID(op), table: op.Table, column: m.Column, uuid: c,
						insert: m.Mutator == ovsdb.MutateOperationInsert}
					if u := byChild[c]; ref.insert && u != nil {
						u.refs = append(u.refs, ref)
					} else if ref.insert {
						rest = append(rest, ovsdb.Mutation{Column: m.Column, Mutator: m.Mutator, Value: schema.Set(c)})
					} else {
						u := &unit{order: i, refs: []childRef{ref}}
						units = append(units, u)
						if child := cached(cols[m.Column], c); child != nil {
							members = append(members, member{u: u, row: cachedChild(cols[m.Column], child), parent: ref.parent})
						}
					}
				}
			}
			if len(rest) > 0 {
				op.Mutations = rest
				standalone(op, i)
			}
		case op.Op == ovsdb.OperationInsert && isRoot(op.Table):
			standalone(op, -len(ops)+i) // before everything that may refer to it
		case op.Op == ovsdb.OperationDelete && cols != nil:
			u := &unit{order: 2*len(ops) + i, ops: []ovsdb.Operation{op}}
			m, at := cached(op.Table, schema.WhereUUID(op)), schema.WhereUUID(op)
			n := schema.ChildCount(op.Table, m)
			if n <= max {
				u.gc = n
			}
			// Its children go with it (few) or first (many, without it),
			// a node's rows together, like any removed children.
			children := schema.ChildUUIDs(op.Table, m)
			for _, col := range slices.Sorted(maps.Keys(children)) {
				for _, c := range children[col] {
					r := u
					if n > max {
						r = &unit{order: len(ops) + i, refs: []childRef{{parent: at, table: op.Table, column: col, uuid: c}}}
						units = append(units, r)
					}
					if child := cached(cols[col], c); child != nil {
						members = append(members, member{u: r, row: cachedChild(cols[col], child), parent: at})
					}
				}
			}
			units = append(units, u)
		case op.Op == ovsdb.OperationDelete:
			standalone(op, len(ops)+i)
		default:
			standalone(op, i)
		}
	}
	for i := range members {
		if m := &members[i]; m.insert && len(m.u.refs) > 0 {
			m.parent = m.u.refs[0].parent
		}
	}
	group(members)
	var out []*unit
	for _, u := range units {
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
	for name, op := range parents {
		if !used[name] {
			out = append(out, &unit{order: parentOrder[name], ops: []ovsdb.Operation{op}, weight: 1})
		}
	}
	return out, parents
}

func childTable(table string) bool {
	for _, cols := range childColumns {
		for _, t := range cols {
			if t == table {
				return true
			}
		}
	}
	return false
}

// member is one child row a unit inserts or removes, under its parent.
type member struct {
	u      *unit
	row    schema.GroupRow
	parent string
	insert bool
}

// insertedRow reads a child insert's row (package schema says how).
func insertedRow(op ovsdb.Operation) schema.GroupRow {
	return schema.Lookup(op.Table).GroupInsert(op.Row)
}

// cachedChild reads a cached child row of table (one the plan removes).
func cachedChild(table string, m model.Model) schema.GroupRow {
	return schema.Lookup(table).Group(m)
}

// group merges the units whose rows belong together (see the rules
// above): inserted rows with inserted rows, removed rows with removed rows.
// Merged-away units are marked merged.
func group(members []member) {
	parent := map[*unit]*unit{}
	var find func(u *unit) *unit
	find = func(u *unit) *unit {
		p, ok := parent[u]
		if !ok || p == u {
			return u
		}
		r := find(p)
		parent[u] = r
		return r
	}
	union := func(a, b *unit) {
		if a == nil || b == nil {
			return
		}
		ra, rb := find(a), find(b)
		if ra != rb {
			parent[rb] = ra
		}
	}
	type side struct {
		insert bool
		name   string
	}
	type net struct {
		side
		prefix netip.Prefix
	}
	portByName := map[side]*unit{}
	portByNet := map[net]*unit{} // router ports by (insert, parent, network)
	bits := map[int]bool{}       // the prefix lengths of those networks
	for _, m := range members {
		if m.row.Table != nbdb.LogicalRouterPortTable {
			continue
		}
		portByName[side{m.insert, m.row.Name}] = m.u
		for _, n := range m.row.Networks {
			portByNet[net{side{m.insert, m.parent}, n}] = m.u
			bits[n.Bits()] = true
		}
	}
	lengths := make([]int, 0, len(bits))
	for b := range bits {
		lengths = append(lengths, b)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(lengths)))
	// portFor is the router port on the same router, of the same side, whose
	// networks hold addr most specifically.
	portFor := func(m member, addr string) *unit {
		a, err := netip.ParseAddr(addr)
		if err != nil {
			return nil
		}
		for _, b := range lengths {
			p, err := a.Prefix(b)
			if err != nil {
				continue
			}
			if port := portByNet[net{side{m.insert, m.parent}, p}]; port != nil {
				return port
			}
		}
		return nil
	}
	for _, m := range members {
		if m.row.Peer != "" {
			union(m.u, portByName[side{m.insert, m.row.Peer}])
		}
		if m.row.Port != "" {
			union(m.u, portByName[side{m.insert, m.row.Port}])
		}
		for _, nh := range m.row.Nexthops {
			union(m.u, portFor(m, nh))
		}
	}
	seen := map[*unit]bool{}
	for _, m := range members {
		u := m.u
		r := find(u)
		if r == u || seen[u] {
			continue
		}
		seen[u] = true
		r.ops = append(r.ops, u.ops...)
		r.refs = append(r.refs, u.refs...)
		r.order = min(r.order, u.order)
		r.gc += u.gc
		u.merged = true
	}
}

// assemble turns units into one chunk: their operations, then for every
// parent either its insert (first chunk to add to it) or one mutation.
func assemble(units []*unit, parents map[string]ovsdb.Operation, inserted map[string]bool) chunk {
	var ops []ovsdb.Operation
	type key struct{ parent, table string }
	muts := map[key]map[string][2][]string{} // column -> [insert, delete]
	var order []key
	for _, u := range units {
		ops = append(ops, u.ops...)
		for _, r := range u.refs {
			k := key{r.parent, r.table}
			if muts[k] == nil {
				muts[k] = map[string][2][]string{}
				order = append(order, k)
			}
			m := muts[k][r.column]
			if r.insert {
				m[0] = append(m[0], r.uuid)
			} else {
				m[1] = append(m[1], r.uuid)
			}
			muts[k][r.column] = m
		}
	}
	for _, k := range order {
		cols := muts[k]
		names := make([]string, 0, len(cols))
		for c := range cols {
			names = append(names, c)
		}
		sort.Strings(names)
		if p, ok := parents[k.parent]; ok && !inserted[k.parent] {
			inserted[k.parent] = true
			row := schema.CopyRow(p.Row)
			for _, c := range names {
				row[c] = schema.Set(append(schema.UUIDs(row[c]), cols[c][0]...)...)
			}
			p.Row = row
			ops = append(ops, p)
			continue
		}
		op := ovsdb.Operation{Op: ovsdb.OperationMutate, Table: k.table,
			Where: []ovsdb.Condition{ovsdb.NewCondition("_uuid", ovsdb.ConditionEqual, ovsdb.UUID{GoUUID: k.parent})}}
		for _, c := range names {
			if d := cols[c][1]; len(d) > 0 {
				op.Mutations = append(op.Mutations, ovsdb.Mutation{Column: c, Mutator: ovsdb.MutateOperationDelete, Value: schema.Set(d...)})
			}
			if in := cols[c][0]; len(in) > 0 {
				op.Mutations = append(op.Mutations, ovsdb.Mutation{Column: c, Mutator: ovsdb.MutateOperationInsert, Value: schema.Set(in...)})
			}
		}
		ops = append(ops, op)
	}
	// Parents inserted without children in this chunk (their unit).
	for _, op := range ops {
		if _, ok := parents[op.UUIDName]; ok && op.Op == ovsdb.OperationInsert {
			inserted[op.UUIDName] = true
		}
	}
	return ops
}

// resolve replaces, in the _uuid conditions of a chunk, the named UUIDs of
// parents an earlier chunk inserted with their real UUIDs.
func (c chunk) resolve(real map[string]string) chunk {
	out := slices.Clone(c)
	for i, op := range out {
		if len(op.Where) == 0 {
			continue
		}
		where := slices.Clone(op.Where)
		for j, w := range where {
			if u, ok := w.Value.(ovsdb.UUID); ok && w.Column == "_uuid" {
				if r, ok := real[u.GoUUID]; ok {
					where[j].Value = ovsdb.UUID{GoUUID: r}
				}
			}
		}
		out[i].Where = where
	}
	return out
}
