package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/nbtest"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/ovnk"
)

// A port with no external_ids that the owner adopts, written by another
// client after the engine connected (a monitor update, not the initial
// dump), is adopted: the Apply takes that row over rather than inserting
// a second port of its name.
func TestAdoptsBareRowFromMonitorUpdate(t *testing.T) {
	addr := nbtest.Serve(t)
	e := nbtest.Engine(t, addr, nil)
	const mgmt = "k8s-node1"
	owner := nbtest.Owner("net1")
	owner.AdoptLegacy = true
	owner.Legacy = func(row any) bool { p, ok := row.(*nbdb.LogicalSwitchPort); return ok && p.Name == mgmt }
	d := func(ports ...nbdb.LogicalSwitchPort) *rows.Desired {
		return &rows.Desired{Owner: owner, Switches: []rows.Switch{{Row: nbdb.LogicalSwitch{Name: "net1_s"}, Ports: ports}}}
	}
	apply(t, e, d())
	res := nbtest.Transact(t, addr,
		ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchPortTable, UUIDName: "mgmt", Row: ovsdb.Row{"name": mgmt}},
		ovsdb.Operation{Op: ovsdb.OperationMutate, Table: nbdb.LogicalSwitchTable,
			Where:     []ovsdb.Condition{ovsdb.NewCondition("name", ovsdb.ConditionEqual, "net1_s")},
			Mutations: []ovsdb.Mutation{{Column: "ports", Mutator: ovsdb.MutateOperationInsert, Value: ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: "mgmt"}}}}}})
	legacy := res[0].UUID.GoUUID
	for deadline := time.Now().Add(10 * time.Second); e.NB.Cache().Table(nbdb.LogicalSwitchPortTable).Row(legacy) == nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the cache never showed the legacy port")
		}
	}
	want := nbdb.LogicalSwitchPort{Name: mgmt, Addresses: []string{"0a:58:0a:00:00:03 10.0.0.3"}}
	if _, err := e.Apply(ctx, d(want)); err != nil {
		t.Fatalf("Apply over the legacy port written after connect: %v", err)
	}
	ports := nbtest.Snapshot(t, addr)[nbdb.LogicalSwitchPortTable]
	if len(ports) != 1 || !strings.Contains(ports[0], "10.0.0.3") || !strings.Contains(ports[0], ovnk.ExternalIDPiece) {
		t.Errorf("switch ports %v, want one, the legacy row adopted with the desired addresses", ports)
	}
	if u := portUUID(t, e, mgmt); u != legacy {
		t.Errorf("the management port is row %s, want the legacy row %s", u, legacy)
	}
	if res := apply(t, e, d(want)); res.Operations != 0 {
		t.Errorf("a second Apply sent %d operations, want 0", res.Operations)
	}
}
