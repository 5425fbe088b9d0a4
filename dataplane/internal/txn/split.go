package txn

import (
	"slices"
	"sort"

	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/schema"
)

// DefaultMaxTransactionOps bounds one Northbound transaction of an Apply
// (the client's MaxTransactionOps): about 15 inserted rows, a few nodes; a plan
// that does not fit is split into transactions of two thirds of it (see
// Split).
// The one ovsdb-server commits one transaction at a time and the client's
// single update stream applies one transaction's update at a time (holding
// its cache's lock), so an unrelated network's transaction waits behind at
// most one bounded transaction of a large network, never behind the whole
// network. What it waits for is that transaction's round trip, which grows
// with its operations (the cache holds no routers' child columns, whose
// every update libovsdb would walk and copy: package schema says why). The
// bound trades the large Apply's length against how long an unrelated
// Apply waits;
// BenchmarkUnrelatedNetworkDuringLargeApply measures both.
const DefaultMaxTransactionOps = 30

// DefaultWholeTransactionOps is the weight up to which a plan goes in one
// transaction under the default bound: a network of up to about ten nodes
// (a 3-node Primary Layer2 topology weighs 35, a 10-node one 56, a 50-node
// one 176). Splitting such a plan holds nobody up for less but costs the
// zone's ovn-northd and every ovn-controller one more round per
// transaction on the path of the network's first packet (BenchmarkFirstPacket);
// an unrelated network's Apply waits at most one such transaction, a few
// milliseconds (BenchmarkUnrelatedNetworkDuringLargeApply).
const DefaultWholeTransactionOps = 120

// Chunk is one transaction of a split plan. Its operations may refer to a
// parent inserted by an earlier chunk by the named UUID of its insert: Resolve
// replaces it with the real UUID before the chunk is sent.
type Chunk []ovsdb.Operation

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

// childColumns: parent table → column of children → child table.
var childColumns = schema.ChildColumns()

// maxTransactions is about the most transactions a plan is split into: a
// larger plan gets heavier ones. Each transaction that changes a router or
// switch with n children costs O(n) (the server and the client's cache
// copy the row), so a fixed bound would make a huge plan (the 40,000
// policies of the pair form) quadratic; this keeps the split Apply within
// a small factor of one transaction.
const maxTransactions = 200

// Split splits a plan's operations into chunks that weigh at most two
// thirds of bound each (see Weigh; at least a 1/maxTransactions share of
// the plan; a unit heavier than that gets a chunk of its own). A plan that
// weighs at most bound is one chunk, exactly as planned: a small network's
// Apply stays one transaction, while an unrelated one waits behind a
// large one's smaller chunks (BenchmarkUnrelatedNetworkDuringLargeApply
// measures the trade: a smaller bound lets the small Apply in sooner and
// makes the large one longer). cached looks a row
// up in the client's cache (for the children of deleted routers and
// switches).
func Split(ops []ovsdb.Operation, bound int, cached func(table, uuid string) model.Model) []Chunk {
	total := Weigh(ops, cached)
	if bound <= 0 || total <= bound {
		return []Chunk{ops}
	}
	max := max(bound*2/3, (total+maxTransactions-1)/maxTransactions, 1)
	units, parents := unitsOf(ops, max, cached)
	sort.SliceStable(units, func(i, j int) bool { return units[i].order < units[j].order })
	var chunks []Chunk
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

// Weigh is what bounds a transaction: one for each operation and for each
// child a mutation adds or removes (so an inserted child weighs two), and
// the children a deleted parent takes along.
func Weigh(ops []ovsdb.Operation, cached func(table, uuid string) model.Model) int {
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

// assemble turns units into one chunk: their operations, then for every
// parent either its insert (first chunk to add to it) or one mutation.
func assemble(units []*unit, parents map[string]ovsdb.Operation, inserted map[string]bool) Chunk {
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

// Resolve replaces the named UUIDs of rows an earlier chunk inserted with
// their real UUIDs: in the _uuid conditions (a parent mutated by a later
// chunk), in the rows inserted or updated (a router's copp naming the
// COPP an earlier chunk inserted) and in mutations (a router's
// load_balancer_group gaining a group an earlier chunk inserted).
func (c Chunk) Resolve(real map[string]string) Chunk {
	out := slices.Clone(c)
	for i, op := range out {
		if len(op.Where) > 0 {
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
		if op.Row != nil {
			out[i].Row = resolveRow(op.Row, real)
		}
		if len(op.Mutations) > 0 {
			muts := slices.Clone(op.Mutations)
			for j, m := range muts {
				muts[j].Value = resolveRow(ovsdb.Row{m.Column: m.Value}, real)[m.Column]
			}
			out[i].Mutations = muts
		}
	}
	return out
}

// resolveRow returns row with the named UUIDs in real replaced (row itself
// when it holds none).
func resolveRow(row ovsdb.Row, real map[string]string) ovsdb.Row {
	uuid := func(v any) (any, bool) {
		if u, ok := v.(ovsdb.UUID); ok {
			if r, ok := real[u.GoUUID]; ok {
				return ovsdb.UUID{GoUUID: r}, true
			}
		}
		return v, false
	}
	var out ovsdb.Row
	for col, v := range row {
		nv, changed := uuid(v)
		if set, ok := v.(ovsdb.OvsSet); ok {
			elems := slices.Clone(set.GoSet)
			for k, e := range elems {
				var c bool
				if elems[k], c = uuid(e); c {
					changed = true
				}
			}
			nv = ovsdb.OvsSet{GoSet: elems}
		}
		if !changed {
			continue
		}
		if out == nil {
			out = schema.CopyRow(row)
		}
		out[col] = nv
	}
	if out == nil {
		return row
	}
	return out
}

// Rename gives the named UUIDs of ops' inserts a prefix, so that the
// operations of several plans (each numbering its inserts from one) can
// share a transaction. A plan's named UUIDs only name its own inserts.
func Rename(ops []ovsdb.Operation, prefix string) []ovsdb.Operation {
	names := map[string]string{}
	for _, op := range ops {
		if op.Op == ovsdb.OperationInsert && op.UUIDName != "" {
			names[op.UUIDName] = prefix + op.UUIDName
		}
	}
	if len(names) == 0 {
		return ops
	}
	out := Chunk(ops).Resolve(names)
	for i := range out {
		if n, ok := names[out[i].UUIDName]; ok {
			out[i].UUIDName = n
		}
	}
	return out
}
