package schema

import (
	"fmt"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// LogicalSwitchPort: a switch's port, by name. Its dhcpv4_options and
// dhcpv6_options name DHCP_Options rows of its piece (package plan).
var LogicalSwitchPort = Spec[nbdb.LogicalSwitchPort]{
	Table: nbdb.LogicalSwitchPortTable,
	Key:   func(r *nbdb.LogicalSwitchPort) string { return r.Name },
	UUID:  func(r *nbdb.LogicalSwitchPort) *string { return &r.UUID },
	IDs:   func(r *nbdb.LogicalSwitchPort) *map[string]string { return &r.ExternalIDs },
	Fields: func(r *nbdb.LogicalSwitchPort, buf []any) []any {
		return append(buf, &r.ExternalIDs, &r.Type, &r.Addresses, &r.Options, &r.PortSecurity, &r.TagRequest, &r.Enabled, &r.Dhcpv4Options, &r.Dhcpv6Options)
	},
}

var _ = planned(LogicalSwitchPort, Table{
	Kind:    Child,
	Parent:  nbdb.LogicalSwitchTable,
	Column:  "ports",
	In:      func(m model.Model) *[]string { return &m.(*nbdb.LogicalSwitch).Ports },
	Indexed: true,
	Describe: func(m model.Model, _ string) string {
		p := m.(*nbdb.LogicalSwitchPort)
		out := "port " + p.Name
		if p.Type != "" {
			out += " type=" + p.Type
		}
		if len(p.Addresses) > 0 {
			out += fmt.Sprintf(" addresses=%q", p.Addresses)
		}
		return out + kv(" options", p.Options)
	},
	Monitor: func() client.MonitorOption { return client.WithTable(&nbdb.LogicalSwitchPort{}) },
	Group: func(m model.Model) GroupRow {
		x := m.(*nbdb.LogicalSwitchPort)
		return GroupRow{Table: nbdb.LogicalSwitchPortTable, Name: x.Name, Port: x.Options["router-port"]}
	},
	GroupInsert: func(row ovsdb.Row) GroupRow {
		r := GroupRow{Table: nbdb.LogicalSwitchPortTable}
		r.Name, _ = row["name"].(string)
		if m, ok := row["options"].(ovsdb.OvsMap); ok {
			r.Port, _ = m.GoMap["router-port"].(string)
		}
		return r
	},
})
