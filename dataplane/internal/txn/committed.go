package txn

import (
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/index"
	"github.com/udnkit/udnkit/dataplane/internal/schema"
)

// Committed returns the links a committed transaction made and unmade:
// children inserted with a new parent, added to or removed from one by a
// mutation. real maps the named UUIDs of its (and earlier transactions')
// inserts to the UUIDs the server gave them.
func Committed(ops []ovsdb.Operation, results []ovsdb.OperationResult, real map[string]string) []index.Link {
	resolve := func(u string) string {
		if r, ok := real[u]; ok {
			return r
		}
		return u
	}
	var out []index.Link
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
					out = append(out, index.Link{Parent: parent, Column: col, Child: resolve(c), Add: true})
				}
			}
		case ovsdb.OperationMutate:
			parent := resolve(schema.WhereUUID(op))
			for _, m := range op.Mutations {
				if cols[m.Column] == "" || (m.Mutator != ovsdb.MutateOperationInsert && m.Mutator != ovsdb.MutateOperationDelete) {
					continue
				}
				for _, c := range schema.UUIDs(m.Value) {
					out = append(out, index.Link{Parent: parent, Column: m.Column, Child: resolve(c), Add: m.Mutator == ovsdb.MutateOperationInsert})
				}
			}
		}
	}
	return out
}
