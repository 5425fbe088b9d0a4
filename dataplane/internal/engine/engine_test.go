package engine_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/dataplane/internal/nbtest"
	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
)

// These tests run the engine on libovsdb's in-memory Northbound server
// (package nbtest), so they run under -short.

var ctx = context.Background()

func apply(t *testing.T, e *engine.Engine, d *rows.Desired) engine.Result {
	t.Helper()
	res, err := e.Apply(ctx, d)
	if err != nil {
		t.Fatalf("apply %s: %v", d.Owner.Network, err)
	}
	return res
}

// nonEmpty is a random desired state with at least one router and one
// switch.
func nonEmpty(rng *rand.Rand, o rows.Owner) *rows.Desired {
	for {
		if d := nbtest.Random(rng, o); len(d.Routers) > 0 && len(d.Switches) > 0 && len(d.Switches[0].Ports) > 0 {
			return d
		}
	}
}

// An Apply waits until the cache shows what it committed: a second Apply
// of the same rows sends nothing and leaves the database as it was.
func TestApplyTwiceSendsNothing(t *testing.T) {
	addr := nbtest.Serve(t)
	e := nbtest.Engine(t, addr, nil)
	d := nonEmpty(rand.New(rand.NewPCG(1, 2)), nbtest.Owner("net1"))
	if res := apply(t, e, d); res.Operations == 0 {
		t.Fatal("the first Apply sent nothing")
	}
	before := nbtest.Snapshot(t, addr)
	if len(before[nbdb.LogicalRouterTable]) != len(d.Routers) || len(before[nbdb.LogicalSwitchTable]) != len(d.Switches) {
		t.Fatalf("the database does not hold the desired routers and switches:\n%s", before)
	}
	if res := apply(t, e, d); res.Operations != 0 {
		t.Errorf("the second Apply sent %d operations, want 0", res.Operations)
	}
	if after := nbtest.Snapshot(t, addr); after.String() != before.String() {
		t.Errorf("the second Apply changed the database:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// Another client deletes an owned row: the healer asks for the network
// (foreign_edit), and the next Apply puts the row back as it was.
func TestApplyHealsADeletedRow(t *testing.T) {
	addr := nbtest.Serve(t)
	e := nbtest.Engine(t, addr, nil)
	resyncs := make(chan engine.Resync, 16)
	e.OnResync(func(r engine.Resync) { resyncs <- r })
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go e.HealLoop(stop)

	d := nonEmpty(rand.New(rand.NewPCG(3, 4)), nbtest.Owner("net1"))
	apply(t, e, d)
	want := nbtest.Snapshot(t, addr)

	// The switch's first port, unreferenced, is garbage-collected.
	sw, port := d.Switches[0].Row.Name, d.Switches[0].Ports[0].Name
	uuid := portUUID(t, e, port)
	nbtest.Transact(t, addr, ovsdb.Operation{Op: ovsdb.OperationMutate, Table: nbdb.LogicalSwitchTable,
		Where:     []ovsdb.Condition{ovsdb.NewCondition("name", ovsdb.ConditionEqual, sw)},
		Mutations: []ovsdb.Mutation{{Column: "ports", Mutator: ovsdb.MutateOperationDelete, Value: schema.Set(uuid)}}})
	select {
	case r := <-resyncs:
		if r.Reason != engine.ResyncForeignEdit || r.All || len(r.Networks) != 1 || r.Networks[0] != "net1" {
			t.Errorf("resync %+v, want foreign_edit of net1", r)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no resync within 30 s of another client deleting an owned port")
	}
	if got := nbtest.Snapshot(t, addr); got.String() == want.String() {
		t.Fatal("fixture: the port was not deleted")
	}
	if res := apply(t, e, d); res.Operations == 0 {
		t.Error("the Apply after the deletion sent nothing")
	}
	if got := nbtest.Snapshot(t, addr); got.String() != want.String() {
		t.Errorf("the Apply did not put the deleted port back:\nwant:\n%s\ngot:\n%s", want, got)
	}
}

// portUUID is the UUID of the switch port named name in e's cache.
func portUUID(t *testing.T, e *engine.Engine, name string) string {
	t.Helper()
	for uuid, m := range e.NB.Cache().Table(nbdb.LogicalSwitchPortTable).Rows() {
		if m.(*nbdb.LogicalSwitchPort).Name == name {
			return uuid
		}
	}
	t.Fatalf("no switch port %s in the cache", name)
	return ""
}
