package schema

import (
	"fmt"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// GatewayChassis: a router port's gateway chassis (a distributed gateway
// port's candidates), by name; held by the port's gateway_chassis column.
var GatewayChassis = Spec[nbdb.GatewayChassis]{
	Table: nbdb.GatewayChassisTable,
	Key:   func(r *nbdb.GatewayChassis) string { return r.Name },
	UUID:  func(r *nbdb.GatewayChassis) *string { return &r.UUID },
	IDs:   func(r *nbdb.GatewayChassis) *map[string]string { return &r.ExternalIDs },
	Fields: func(r *nbdb.GatewayChassis, buf []any) []any {
		return append(buf, &r.ExternalIDs, &r.ChassisName, &r.Priority, &r.Options)
	},
}

var _ = planned(GatewayChassis, Table{
	Kind:    Child,
	Parent:  nbdb.LogicalRouterPortTable,
	Column:  "gateway_chassis",
	In:      func(m model.Model) *[]string { return &m.(*nbdb.LogicalRouterPort).GatewayChassis },
	Indexed: true,
	Describe: func(m model.Model, _ string) string {
		g := m.(*nbdb.GatewayChassis)
		return fmt.Sprintf("gateway_chassis %s chassis=%s priority=%d", g.Name, g.ChassisName, g.Priority)
	},
	Monitor: func() client.MonitorOption { return client.WithTable(&nbdb.GatewayChassis{}) },
	Group: func(m model.Model) GroupRow {
		return GroupRow{Table: nbdb.GatewayChassisTable, Name: m.(*nbdb.GatewayChassis).Name}
	},
	GroupInsert: func(row ovsdb.Row) GroupRow {
		name, _ := row["name"].(string)
		return GroupRow{Table: nbdb.GatewayChassisTable, Name: name}
	},
})
