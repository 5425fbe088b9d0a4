package schema

import (
	"fmt"
	"net/netip"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// LogicalRouterPort: a router's port, by name.
var LogicalRouterPort = Spec[nbdb.LogicalRouterPort]{
	Table: nbdb.LogicalRouterPortTable,
	Key:   func(r *nbdb.LogicalRouterPort) string { return r.Name },
	UUID:  func(r *nbdb.LogicalRouterPort) *string { return &r.UUID },
	IDs:   func(r *nbdb.LogicalRouterPort) *map[string]string { return &r.ExternalIDs },
	Fields: func(r *nbdb.LogicalRouterPort, buf []any) []any {
		return append(buf, &r.ExternalIDs, &r.MAC, &r.Networks, &r.Options, &r.Peer, &r.Ipv6RaConfigs)
	},
}

var _ = planned(LogicalRouterPort, Table{
	Kind:    Child,
	Parent:  nbdb.LogicalRouterTable,
	Column:  "ports",
	In:      func(m model.Model) *[]string { return &m.(*nbdb.LogicalRouter).Ports },
	Indexed: true,
	Describe: func(m model.Model, _ string) string {
		p := m.(*nbdb.LogicalRouterPort)
		out := fmt.Sprintf("port %s mac=%s networks=%q", p.Name, p.MAC, p.Networks)
		if p.Peer != nil {
			out += " peer=" + *p.Peer
		}
		return out + kv(" options", p.Options)
	},
	Monitor: func() client.MonitorOption { return client.WithTable(&nbdb.LogicalRouterPort{}) },
	Group: func(m model.Model) GroupRow {
		x := m.(*nbdb.LogicalRouterPort)
		return GroupRow{Table: nbdb.LogicalRouterPortTable, Target: true, Name: x.Name, Peer: Deref(x.Peer), Networks: prefixes(x.Networks)}
	},
	GroupInsert: func(row ovsdb.Row) GroupRow {
		name, _ := row["name"].(string)
		return GroupRow{Table: nbdb.LogicalRouterPortTable, Target: true, Name: name, Peer: first(row["peer"]), Networks: prefixes(Strings(row["networks"]))}
	},
})

// prefixes parses a port's networks ("10.0.0.1/24") into their masked
// prefixes, leaving out what does not parse.
func prefixes(networks []string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range networks {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out
}
