package engine_test

import (
	"slices"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/dataplane/internal/nbtest"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
)

// A port group may name a port another writer owns (a default-network pod
// port in the isolation group): while it does not exist the Apply
// succeeds without it; when another client creates it, the engine adds it
// with no new Apply; when that client deletes it, it leaves the group and
// the next Apply succeeds; created again, it is added again.
func TestPortGroupMemberOfAnotherWriter(t *testing.T) {
	addr := nbtest.Serve(t)
	e := nbtest.Engine(t, addr, nil)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go e.HealLoop(stop)

	d := func() *rows.Desired {
		return &rows.Desired{Owner: nbtest.Owner("net1"),
			Switches: []rows.Switch{{Row: nbdb.LogicalSwitch{Name: "net1_s"},
				Ports: []nbdb.LogicalSwitchPort{{Name: "net1_p", Addresses: []string{"unknown"}}}}},
			PortGroups: []rows.PortGroup{{Row: nbdb.PortGroup{Name: "net1_pg"}, Ports: []string{"net1_p", "foreign_p"}}}}
	}
	apply(t, e, d())
	members := func() []string {
		t.Helper()
		var names []string
		for _, m := range e.NB.Cache().Table(nbdb.PortGroupTable).Rows() {
			for _, u := range m.(*nbdb.PortGroup).Ports {
				if p := e.NB.Cache().Table(nbdb.LogicalSwitchPortTable).Row(u); p != nil {
					names = append(names, p.(*nbdb.LogicalSwitchPort).Name)
				}
			}
		}
		slices.Sort(names)
		return names
	}
	waitMembers := func(what string, want ...string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !slices.Equal(members(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the port group holds %v, want %v", what, members(), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitMembers("the foreign port missing", "net1_p")
	if res := apply(t, e, d()); res.Operations != 0 {
		t.Errorf("a second Apply with the port still missing sent %d operations, want 0", res.Operations)
	}

	create := func() {
		nbtest.Transact(t, addr,
			ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchPortTable, UUIDName: "fport", Row: ovsdb.Row{"name": "foreign_p"}},
			ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchTable, Row: ovsdb.Row{"name": "foreign_s", "ports": ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: "fport"}}}}})
	}
	create()
	waitMembers("the foreign port created", "foreign_p", "net1_p")
	if res := apply(t, e, d()); res.Operations != 0 {
		t.Errorf("an Apply once the port was added sent %d operations, want 0", res.Operations)
	}

	nbtest.Transact(t, addr, ovsdb.Operation{Op: ovsdb.OperationDelete, Table: nbdb.LogicalSwitchTable,
		Where: []ovsdb.Condition{ovsdb.NewCondition("name", ovsdb.ConditionEqual, "foreign_s")}})
	waitMembers("the foreign port deleted", "net1_p")
	if _, err := e.Apply(ctx, d()); err != nil {
		t.Fatalf("Apply once the foreign port is gone: %v", err)
	}
	create()
	waitMembers("the foreign port created again", "foreign_p", "net1_p")

	// Once the group no longer names the port, it leaves the group though it
	// exists (the group's members are its piece's to plan: a default-network
	// port leaves the isolation group when its namespace loses its Primary
	// UDN), and its next creation does not bring it back.
	gone := d()
	gone.PortGroups[0].Ports = []string{"net1_p"}
	apply(t, e, gone)
	waitMembers("the port no longer named", "net1_p")
	nbtest.Transact(t, addr, ovsdb.Operation{Op: ovsdb.OperationDelete, Table: nbdb.LogicalSwitchTable,
		Where: []ovsdb.Condition{ovsdb.NewCondition("name", ovsdb.ConditionEqual, "foreign_s")}})
	waitMembers("the foreign port deleted again", "net1_p")
	create()
	time.Sleep(5 * engine.HealTick)
	waitMembers("the port created once no longer named", "net1_p")
}
