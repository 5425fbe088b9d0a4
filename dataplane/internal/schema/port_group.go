package schema

import (
	"fmt"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"

	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// PortGroup: a port group is found by name (the table's index) and holds
// ACLs. Its ports (weak references to switch ports) are members the piece
// adds and takes out one by one (Table.Members), never written whole: other
// pieces' ports share a group. The cache holds its name, external_ids and
// ports (doc.go says why not its ACLs).
var PortGroup = Spec[nbdb.PortGroup]{
	Table:  nbdb.PortGroupTable,
	Key:    func(r *nbdb.PortGroup) string { return r.Name },
	UUID:   func(r *nbdb.PortGroup) *string { return &r.UUID },
	IDs:    func(r *nbdb.PortGroup) *map[string]string { return &r.ExternalIDs },
	Fields: func(r *nbdb.PortGroup, buf []any) []any { return append(buf, &r.ExternalIDs) },
}

var _ = planned(PortGroup, Table{
	Kind:    Parent,
	Indexed: true,
	Members: map[string]Member{"ports": {Table: nbdb.LogicalSwitchPortTable,
		In: func(m model.Model) *[]string { return &m.(*nbdb.PortGroup).Ports }}},
	// A member taken out by another client is a change the healer sees.
	Changed: func(old, cur model.Model, _ *[2][]any) bool {
		return !SameSet(old.(*nbdb.PortGroup).Ports, cur.(*nbdb.PortGroup).Ports)
	},
	Describe: func(m model.Model, mark string) string {
		return fmt.Sprintf("port_group %s%s ports=%q", m.(*nbdb.PortGroup).Name, mark, m.(*nbdb.PortGroup).Ports)
	},
	Monitor: func() client.MonitorOption {
		pg := &nbdb.PortGroup{}
		return client.WithTable(pg, &pg.Name, &pg.ExternalIDs, &pg.Ports)
	},
})
