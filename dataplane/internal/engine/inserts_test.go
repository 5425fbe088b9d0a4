package engine

import (
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/ovnk"
)

func insertOp(table, piece, network string) ovsdb.Operation {
	ids := map[any]any{}
	if piece != "" {
		ids[ovnk.ExternalIDPiece] = piece
	}
	if network != "" {
		ids[ovnk.ExternalIDNetwork] = network
	}
	return ovsdb.Operation{Op: ovsdb.OperationInsert, Table: table, UUIDName: "row",
		Row: ovsdb.Row{"external_ids": ovsdb.OvsMap{GoMap: ids}}}
}

// An Apply's inserts of owned rows are expected as many times as it makes
// them, per table and network, and no longer than their grace; inserts of
// rows without udnkit's piece and a network are not expected at all.
func TestOwnInsertsAreCountedAndForgotten(t *testing.T) {
	var o ownEdits
	none := func([]string) []string { return nil }
	a := o.note(nil, []ovsdb.Operation{
		insertOp("ACL", "policy", "net1"), insertOp("ACL", "policy", "net1"),
		insertOp("ACL", "", "net1"), insertOp("Meter", "", ""),
	}, none)
	b := o.note(nil, []ovsdb.Operation{insertOp("ACL", "policy", "net1")}, none)
	acl := insKey{"ACL", "net1"}
	for i := range 3 {
		if !o.consumeInsert(acl) {
			t.Fatalf("insert %d of 3 not taken as own", i+1)
		}
	}
	if o.consumeInsert(acl) {
		t.Error("a fourth ACL insert of net1 taken as own")
	}
	if o.consumeInsert(insKey{"ACL", "net2"}) || o.consumeInsert(insKey{"Meter", ""}) {
		t.Error("an insert of another network, or of an unowned row, taken as own")
	}

	// An insert whose event never came is forgotten after the grace.
	c := o.note(nil, []ovsdb.Operation{insertOp("Address_Set", "policy", "net1")}, none)
	now := time.Now()
	for _, e := range []*ownEdit{a, b, c} {
		o.finish(e, now)
	}
	o.sweep(now.Add(ownGrace / 2))
	if len(o.ins) != 1 {
		t.Errorf("before the grace ends: %d keys expected, want 1", len(o.ins))
	}
	o.sweep(now.Add(2 * ownGrace))
	if len(o.ins) != 0 || o.consumeInsert(insKey{"Address_Set", "net1"}) {
		t.Errorf("after the grace: inserts still expected: %v", o.ins)
	}
}
