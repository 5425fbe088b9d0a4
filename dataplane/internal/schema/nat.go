package schema

import (
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// NAT: a router's NAT, by type, logical and external IP and logical port.
var NAT = Spec[nbdb.NAT]{
	Table: nbdb.NATTable,
	Key: func(r *nbdb.NAT) string {
		return r.Type + "|" + r.LogicalIP + "|" + r.ExternalIP + "|" + Deref(r.LogicalPort)
	},
	UUID: func(r *nbdb.NAT) *string { return &r.UUID },
	IDs:  func(r *nbdb.NAT) *map[string]string { return &r.ExternalIDs },
	Fields: func(r *nbdb.NAT, buf []any) []any {
		return append(buf, &r.ExternalIDs, &r.Options, &r.ExternalPortRange, &r.Match)
	},
}

var _ = planned(NAT, Table{
	Kind:    Child,
	Parent:  nbdb.LogicalRouterTable,
	Column:  "nat",
	In:      func(m model.Model) *[]string { return &m.(*nbdb.LogicalRouter).Nat },
	Indexed: true,
	Describe: func(m model.Model, _ string) string {
		n := m.(*nbdb.NAT)
		return "nat " + n.Type + " " + n.LogicalIP + " -> " + n.ExternalIP
	},
	Monitor: func() client.MonitorOption { return client.WithTable(&nbdb.NAT{}) },
	Group: func(m model.Model) GroupRow {
		return GroupRow{Table: nbdb.NATTable, Port: Deref(m.(*nbdb.NAT).LogicalPort)}
	},
	GroupInsert: func(row ovsdb.Row) GroupRow {
		return GroupRow{Table: nbdb.NATTable, Port: first(row["logical_port"])}
	},
})
