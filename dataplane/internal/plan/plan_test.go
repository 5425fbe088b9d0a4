package plan_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/dataplane/internal/nbtest"
	"github.com/udnkit/udnkit/dataplane/internal/plan"
	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/ovnk"
)

// These tests plan against libovsdb's in-memory Northbound server (package
// nbtest), so they run under -short.

// desired is one router with two ports and a route, and one switch with a
// port, of network net1.
func desired() *rows.Desired {
	out := "net1_rp0"
	return &rows.Desired{Owner: nbtest.Owner("net1"),
		Routers: []rows.Router{{Row: nbdb.LogicalRouter{Name: "net1_r0"},
			Ports: []nbdb.LogicalRouterPort{{Name: "net1_rp0", MAC: "0a:58:64:40:00:01", Networks: []string{"100.64.0.1/24"}},
				{Name: "net1_rp1", MAC: "0a:58:64:41:00:01", Networks: []string{"100.65.0.1/24"}}},
			Routes: []nbdb.LogicalRouterStaticRoute{{IPPrefix: "10.0.0.0/24", Nexthop: "100.64.0.2", OutputPort: &out}}}},
		Switches: []rows.Switch{{Row: nbdb.LogicalSwitch{Name: "net1_s0"},
			Ports: []nbdb.LogicalSwitchPort{{Name: "net1_sp0", Addresses: []string{"router"}}}}}}
}

// applied is an engine whose database holds desired().
func applied(t *testing.T) (*engine.Engine, string) {
	t.Helper()
	addr := nbtest.Serve(t)
	e := nbtest.Engine(t, addr, nil)
	if _, err := e.Apply(context.Background(), desired()); err != nil {
		t.Fatal(err)
	}
	return e, addr
}

// plans returns the full diff's operations, and fails t unless the
// incremental plan (index and memo) emits the same ones.
func plans(t *testing.T, e *engine.Engine, d *rows.Desired) []ovsdb.Operation {
	t.Helper()
	full, err := plan.Full(e.NB, e.Index, d)
	if err != nil {
		t.Fatal(err)
	}
	var memos plan.Memos
	for range 2 { // the second with the memo the first built
		inc, err := plan.Incremental(e.NB, e.Index, &memos, d)
		if err != nil {
			t.Fatal(err)
		}
		if a, b := fmt.Sprint(inc.Ops), fmt.Sprint(full.Ops); a != b {
			t.Fatalf("the incremental plan differs from the full diff:\nincremental: %s\nfull:        %s", a, b)
		}
	}
	return full.Ops
}

// describe is one line per operation: its kind, table and, for an insert
// or update, the columns it writes; for a mutation, its column and mutator.
func describe(ops []ovsdb.Operation) []string {
	var out []string
	for _, op := range ops {
		s := op.Op + " " + op.Table
		switch op.Op {
		case ovsdb.OperationInsert, ovsdb.OperationUpdate:
			if name, ok := op.Row["name"]; ok {
				s += fmt.Sprintf(" name=%v", name)
			}
			if mac, ok := op.Row["mac"]; ok {
				s += fmt.Sprintf(" mac=%v", mac)
			}
		case ovsdb.OperationMutate:
			for _, m := range op.Mutations {
				s += " " + m.Column + " " + string(m.Mutator)
			}
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Against a database that holds the rows, the plan is empty; a changed
// port is an update of that port alone, a dropped route a mutation that
// takes it out of its router, a new switch port an insert and a mutation
// that adds it to its switch.
func TestPlanInsertsUpdatesAndDeletesOwnedRows(t *testing.T) {
	e, _ := applied(t)
	if ops := plans(t, e, desired()); len(ops) != 0 {
		t.Fatalf("the plan of the rows the database holds: %v, want none", describe(ops))
	}
	d := desired()
	d.Routers[0].Ports[1].MAC = "0a:58:64:41:00:99"
	d.Routers[0].Routes = nil
	d.Switches[0].Ports = append(d.Switches[0].Ports, nbdb.LogicalSwitchPort{Name: "net1_sp1", Addresses: []string{"unknown"}})
	got := describe(plans(t, e, d))
	want := []string{
		"insert Logical_Switch_Port name=net1_sp1",
		"mutate Logical_Router static_routes delete",
		"mutate Logical_Switch ports insert",
		"update Logical_Router_Port mac=0a:58:64:41:00:99",
	}
	if !slices.Equal(got, want) {
		t.Errorf("plan:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// With no desired rows the piece's routers and switches go (their
	// children with them).
	gone := describe(plans(t, e, &rows.Desired{Owner: nbtest.Owner("net1")}))
	wantGone := []string{"delete Logical_Router", "delete Logical_Switch"}
	if !slices.Equal(gone, wantGone) {
		t.Errorf("plan of no rows:\n%s\nwant:\n%s", strings.Join(gone, "\n"), strings.Join(wantGone, "\n"))
	}
}

// Another client's rows on the piece's router and switch (a route, a
// port of the same network and topology from another piece), and a router
// of its own are never named in a plan, neither when the piece's rows
// stay nor when they go; a desired router whose name another client's
// router has is refused.
func TestPlanLeavesForeignRowsAlone(t *testing.T) {
	e, addr := applied(t)
	other := nbtest.Owner("net1")
	other.Piece = "another-piece"
	nbtest.Transact(t, addr,
		ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalRouterStaticRouteTable, UUIDName: "route",
			Row: ovsdb.Row{"ip_prefix": "192.0.2.0/24", "nexthop": "100.64.0.9"}},
		ovsdb.Operation{Op: ovsdb.OperationMutate, Table: nbdb.LogicalRouterTable,
			Where:     []ovsdb.Condition{ovsdb.NewCondition("name", ovsdb.ConditionEqual, "net1_r0")},
			Mutations: []ovsdb.Mutation{{Column: "static_routes", Mutator: ovsdb.MutateOperationInsert, Value: schema.Set("route")}}},
		ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchPortTable, UUIDName: "port",
			Row: ovsdb.Row{"name": "net1_sp9", "external_ids": ovsMap(other.IDs())}},
		ovsdb.Operation{Op: ovsdb.OperationMutate, Table: nbdb.LogicalSwitchTable,
			Where:     []ovsdb.Condition{ovsdb.NewCondition("name", ovsdb.ConditionEqual, "net1_s0")},
			Mutations: []ovsdb.Mutation{{Column: "ports", Mutator: ovsdb.MutateOperationInsert, Value: schema.Set("port")}}},
		ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalRouterTable, Row: ovsdb.Row{"name": "foreign_r"}})
	foreign := foreignUUIDs(t, e, addr)

	for _, d := range []*rows.Desired{desired(), {Owner: nbtest.Owner("net1")}} {
		for _, op := range plans(t, e, d) {
			for _, u := range touched(op) {
				if foreign[u] {
					t.Errorf("plan of %d routers touches another client's row %s: %v", len(d.Routers), u, op)
				}
			}
		}
	}

	d := desired()
	d.Routers = append(d.Routers, rows.Router{Row: nbdb.LogicalRouter{Name: "foreign_r"}})
	var foreignErr *rows.ForeignRowError
	if _, err := plan.Full(e.NB, e.Index, d); !errors.As(err, &foreignErr) {
		t.Errorf("planning a router another client owns: %v, want a ForeignRowError", err)
	}
}

// foreignUUIDs are the UUIDs of the rows no Apply of the tests wrote: those
// without the test owner's piece.
func foreignUUIDs(t *testing.T, e *engine.Engine, addr string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, table := range []string{nbdb.LogicalRouterTable, nbdb.LogicalRouterStaticRouteTable, nbdb.LogicalSwitchPortTable} {
		for u, m := range e.NB.Cache().Table(table).Rows() {
			_, ids, _, _ := schema.RowFields(table, m)
			if ids[ovnk.ExternalIDPiece] != nbtest.Owner("").Piece {
				out[u] = true
			}
		}
	}
	if len(out) != 3 {
		t.Fatalf("fixture: %d foreign rows in the cache, want 3:\n%s", len(out), nbtest.Snapshot(t, addr))
	}
	return out
}

// touched are the UUIDs an operation names: in its where clause and in the
// values of its mutations.
func touched(op ovsdb.Operation) []string {
	var out []string
	for _, c := range op.Where {
		if u, ok := c.Value.(ovsdb.UUID); ok {
			out = append(out, u.GoUUID)
		}
	}
	for _, m := range op.Mutations {
		out = append(out, schema.UUIDs(m.Value)...)
	}
	return out
}

func ovsMap(m map[string]string) ovsdb.OvsMap {
	out := ovsdb.OvsMap{GoMap: map[any]any{}}
	for k, v := range m {
		out.GoMap[k] = v
	}
	return out
}
