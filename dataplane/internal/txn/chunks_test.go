package txn_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/nbtest"
	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/internal/txn"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
)

// large is a router with n ports, each with a route through it, and a
// switch with n ports: a plan of about 4n operations.
func large(n int) *rows.Desired {
	d := &rows.Desired{Owner: nbtest.Owner("big")}
	r := rows.Router{Row: nbdb.LogicalRouter{Name: "big_r"}}
	s := rows.Switch{Row: nbdb.LogicalSwitch{Name: "big_s"}}
	for i := range n {
		port := fmt.Sprintf("big_rp%d", i)
		r.Ports = append(r.Ports, nbdb.LogicalRouterPort{Name: port, MAC: fmt.Sprintf("0a:58:64:40:00:%02x", i),
			Networks: []string{fmt.Sprintf("100.64.%d.1/24", i)}})
		r.Routes = append(r.Routes, nbdb.LogicalRouterStaticRoute{IPPrefix: fmt.Sprintf("10.%d.0.0/16", i),
			Nexthop: fmt.Sprintf("100.64.%d.2", i), OutputPort: &port})
		s.Ports = append(s.Ports, nbdb.LogicalSwitchPort{Name: fmt.Sprintf("big_sp%d", i), Addresses: []string{"unknown"}})
	}
	d.Routers, d.Switches = []rows.Router{r}, []rows.Switch{s}
	return d
}

// A plan larger than the bound is cut into transactions of at most the
// bound's weight, each inserting a child with the parent insert or
// mutation that holds it, and a route with the router port it leaves
// through; sent one after another, they leave the rows one transaction
// leaves.
func TestSplitKeepsParentsWithChildrenOnTheServer(t *testing.T) {
	const bound = 9
	addr := nbtest.Serve(t)
	e := nbtest.Engine(t, addr, nil)
	d := large(12)
	ops, err := e.Plan(d)
	if err != nil {
		t.Fatal(err)
	}
	chunks := txn.Split(ops, bound, e.CachedRow)
	if len(chunks) < 4 {
		t.Fatalf("%d operations in %d transactions, want the plan split", len(ops), len(chunks))
	}
	sent := 0
	for k, ch := range chunks {
		if w := txn.Weigh(ch, e.CachedRow); w > bound {
			t.Errorf("transaction %d weighs %d, more than the bound %d", k, w, bound)
		}
		checkTogether(t, k, ch)
		sent += inserts(ch)
	}
	// (Later transactions mutate a parent an earlier one inserted: the
	// mutations are the split's own.)
	if sent != inserts(ops) {
		t.Errorf("the transactions insert %d rows, the plan %d", sent, inserts(ops))
	}

	real := map[string]string{}
	for k, ch := range chunks {
		resolved := ch.Resolve(real)
		res, err := e.NB.Transact(context.Background(), resolved...)
		if err == nil {
			_, err = ovsdb.CheckOperationResults(res, resolved)
		}
		if err != nil {
			t.Fatalf("transaction %d of %d: %v", k+1, len(chunks), err)
		}
		for i, op := range resolved {
			if op.Op == ovsdb.OperationInsert && op.UUIDName != "" {
				real[op.UUIDName] = res[i].UUID.GoUUID
			}
		}
	}

	fresh := nbtest.Serve(t)
	f := nbtest.Engine(t, fresh, nil)
	f.MaxTransactionOps = -1
	if res, err := f.Apply(context.Background(), d); err != nil || res.Transactions != 1 {
		t.Fatalf("one transaction: %+v, %v", res, err)
	}
	if got, want := nbtest.Snapshot(t, addr), nbtest.Snapshot(t, fresh); got.String() != want.String() {
		t.Errorf("the split plan left other rows than one transaction:\ngot:\n%s\nwant:\n%s", got, want)
	}
}

// checkTogether fails t when chunk k inserts a child without the parent
// operation that holds it, or a route without the port it leaves through
// (when the plan inserts that port).
func checkTogether(t *testing.T, k int, ch txn.Chunk) {
	t.Helper()
	held := map[string]bool{}    // named UUIDs a parent of this chunk holds
	ports := map[string]bool{}   // router ports this chunk inserts, by name
	planned := map[string]bool{} // every router port the test's plan inserts
	for i := range 12 {
		planned[fmt.Sprintf("big_rp%d", i)] = true
	}
	for _, op := range ch {
		for _, col := range []string{"ports", "static_routes"} {
			held = addUUIDs(held, schema.UUIDs(op.Row[col]))
			for _, m := range op.Mutations {
				if m.Column == col && m.Mutator == ovsdb.MutateOperationInsert {
					held = addUUIDs(held, schema.UUIDs(m.Value))
				}
			}
		}
		if op.Op == ovsdb.OperationInsert && op.Table == nbdb.LogicalRouterPortTable {
			ports[fmt.Sprint(op.Row["name"])] = true
		}
	}
	for _, op := range ch {
		if op.Op != ovsdb.OperationInsert {
			continue
		}
		switch op.Table {
		case nbdb.LogicalRouterPortTable, nbdb.LogicalRouterStaticRouteTable, nbdb.LogicalSwitchPortTable:
			if !held[op.UUIDName] {
				t.Errorf("transaction %d inserts %s %s without the parent that holds it", k, op.Table, op.UUIDName)
			}
		}
		if op.Table == nbdb.LogicalRouterStaticRouteTable {
			if out := firstString(op.Row["output_port"]); planned[out] && !ports[out] {
				t.Errorf("transaction %d inserts the route through %s without that port", k, out)
			}
		}
	}
}

func inserts(ops []ovsdb.Operation) int {
	n := 0
	for _, op := range ops {
		if op.Op == ovsdb.OperationInsert {
			n++
		}
	}
	return n
}

func addUUIDs(m map[string]bool, uuids []string) map[string]bool {
	for _, u := range uuids {
		m[u] = true
	}
	return m
}

// firstString is an optional string column's value ("" when empty).
func firstString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case ovsdb.OvsSet:
		if len(x.GoSet) > 0 {
			return fmt.Sprint(x.GoSet[0])
		}
	}
	return ""
}
