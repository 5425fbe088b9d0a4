package txn

import (
	"strconv"
	"testing"

	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// A router port the plan inserts holding gateway chassis the plan inserts
// (rows of a Child table held by a child) lands in one chunk with them,
// however small the bound: a gateway chassis in another transaction than
// its port would be a reference to a missing row there and a row no parent
// holds in its own.
func TestSplitKeepsAPortWithItsGatewayChassis(t *testing.T) {
	const router = "2f1b6a9e-1d5c-4a0e-9d1c-000000000001"
	var ops []ovsdb.Operation
	var ports []string
	for i := range 12 {
		p, g1, g2 := "port"+strconv.Itoa(i), "gc"+strconv.Itoa(i)+"a", "gc"+strconv.Itoa(i)+"b"
		ops = append(ops,
			ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.GatewayChassisTable, UUIDName: g1,
				Row: ovsdb.Row{"name": "trtos-" + p + "-a", "chassis_name": "a", "priority": 1}},
			ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.GatewayChassisTable, UUIDName: g2,
				Row: ovsdb.Row{"name": "trtos-" + p + "-b", "chassis_name": "b", "priority": 1}},
			ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalRouterPortTable, UUIDName: p,
				Row: ovsdb.Row{"name": "trtos-" + p, "networks": schema.Set("10.0." + strconv.Itoa(i) + ".1/24"),
					"gateway_chassis": schema.Set(g1, g2)}})
		ports = append(ports, p)
	}
	ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationMutate, Table: nbdb.LogicalRouterTable,
		Where:     []ovsdb.Condition{ovsdb.NewCondition("_uuid", ovsdb.ConditionEqual, ovsdb.UUID{GoUUID: router})},
		Mutations: []ovsdb.Mutation{{Column: "ports", Mutator: ovsdb.MutateOperationInsert, Value: schema.Set(ports...)}}})
	none := func(string, string) model.Model { return nil }

	chunks := Split(ops, 8, none)
	if len(chunks) < 3 {
		t.Fatalf("%d chunks, want the plan split", len(chunks))
	}
	seen := 0
	for k, ch := range chunks {
		inserted := map[string]bool{}
		for _, op := range ch {
			if op.Op == ovsdb.OperationInsert {
				inserted[op.UUIDName] = true
			}
		}
		for _, op := range ch {
			if op.Table != nbdb.LogicalRouterPortTable {
				continue
			}
			seen++
			for _, g := range schema.UUIDs(op.Row["gateway_chassis"]) {
				if !inserted[g] {
					t.Errorf("chunk %d inserts %s without its gateway chassis %s", k, op.UUIDName, g)
				}
			}
		}
		for name := range inserted {
			if len(name) > 2 && name[:2] == "gc" {
				port := "port" + name[2:len(name)-1]
				if !inserted[port] {
					t.Errorf("chunk %d inserts gateway chassis %s without its port %s", k, name, port)
				}
			}
		}
	}
	if seen != len(ports) {
		t.Errorf("the chunks insert %d ports, want %d", seen, len(ports))
	}
}

// A load balancer group a plan deletes goes in the last chunk, after the
// switches and routers that named it, wherever the plan put its delete:
// OVSDB refuses the delete of a row a switch still references (strongly).
func TestSplitDeletesALoadBalancerGroupLast(t *testing.T) {
	where := func(u string) []ovsdb.Condition {
		return []ovsdb.Condition{ovsdb.NewCondition("_uuid", ovsdb.ConditionEqual, ovsdb.UUID{GoUUID: u})}
	}
	const group = "2f1b6a9e-1d5c-4a0e-9d1c-0000000000ff"
	ops := []ovsdb.Operation{{Op: ovsdb.OperationDelete, Table: nbdb.LoadBalancerGroupTable, Where: where(group)}}
	switches := map[string]model.Model{}
	for i := range 6 {
		u := "2f1b6a9e-1d5c-4a0e-9d1c-00000000000" + strconv.Itoa(i)
		var ports []string
		for j := range 3 {
			ports = append(ports, u[:len(u)-2]+strconv.Itoa(i)+strconv.Itoa(j))
		}
		switches[u] = &nbdb.LogicalSwitch{UUID: u, Name: "s" + strconv.Itoa(i), Ports: ports, LoadBalancerGroup: []string{group}}
		ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationDelete, Table: nbdb.LogicalSwitchTable, Where: where(u)})
	}
	cached := func(table, u string) model.Model {
		if table == nbdb.LogicalSwitchTable {
			return switches[u]
		}
		return nil
	}

	chunks := Split(ops, 6, cached)
	if len(chunks) < 3 {
		t.Fatalf("%d chunks, want the plan split", len(chunks))
	}
	groupAt, lastSwitch := -1, -1
	for k, ch := range chunks {
		for _, op := range ch {
			switch op.Table {
			case nbdb.LoadBalancerGroupTable:
				groupAt = k
			case nbdb.LogicalSwitchTable:
				if op.Op == ovsdb.OperationDelete {
					lastSwitch = k
				}
			}
		}
	}
	if groupAt < lastSwitch {
		t.Errorf("the group is deleted in chunk %d, before the switch delete of chunk %d", groupAt, lastSwitch)
	}
}
