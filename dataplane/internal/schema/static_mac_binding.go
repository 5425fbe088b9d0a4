package schema

import (
	"fmt"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"

	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// StaticMACBinding: a root row, by logical_port and ip (the table's
// index). It has no external_ids: a binding is a piece's when its
// logical_port names one of the piece's router ports (package plan).
var StaticMACBinding = Spec[nbdb.StaticMACBinding]{
	Table: nbdb.StaticMACBindingTable,
	Key:   func(r *nbdb.StaticMACBinding) string { return r.LogicalPort + "|" + r.IP },
	UUID:  func(r *nbdb.StaticMACBinding) *string { return &r.UUID },
	// No such column: an empty map, never written.
	IDs: func(*nbdb.StaticMACBinding) *map[string]string { return new(map[string]string) },
	Fields: func(r *nbdb.StaticMACBinding, buf []any) []any {
		return append(buf, &r.MAC, &r.OverrideDynamicMAC)
	},
}

var _ = planned(StaticMACBinding, Table{
	Kind:    Root,
	Indexed: true,
	Describe: func(m model.Model, _ string) string {
		b := m.(*nbdb.StaticMACBinding)
		return fmt.Sprintf("static_mac_binding %s %s mac=%s override_dynamic_mac=%v", b.LogicalPort, b.IP, b.MAC, b.OverrideDynamicMAC)
	},
	Monitor: func() client.MonitorOption { return client.WithTable(&nbdb.StaticMACBinding{}) },
})
