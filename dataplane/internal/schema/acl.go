package schema

import (
	"fmt"
	"strconv"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/ovnk"
)

// ACL: a switch's or a port group's ACL (their acls column), by its external_ids
// k8s.ovn.org/id when set (upstream's primary key of the ACLs its BuildACL
// writes), otherwise by name, direction, priority and match. The managed
// columns are those upstream's BuildACL sets.
var ACL = Spec[nbdb.ACL]{
	Table: nbdb.ACLTable,
	Key: func(r *nbdb.ACL) string {
		return objectKey(r.ExternalIDs, Deref(r.Name)+"|"+string(r.Direction), r.Priority, r.Match)
	},
	UUID: func(r *nbdb.ACL) *string { return &r.UUID },
	IDs:  func(r *nbdb.ACL) *map[string]string { return &r.ExternalIDs },
	Fields: func(r *nbdb.ACL, buf []any) []any {
		return append(buf, &r.ExternalIDs, &r.Action, &r.Direction, &r.Log, &r.Match, &r.Meter, &r.Name,
			&r.Options, &r.Priority, &r.Severity, &r.Tier, &r.Label)
	},
}

// objectKey is the identity of a row upstream keys by external_ids
// k8s.ovn.org/id, or of one without it by its other columns.
func objectKey(ids map[string]string, prefix string, priority int, match string) string {
	if id, ok := ids[ovnk.ExternalIDObjectID]; ok {
		return "id:" + id
	}
	return prefix + "|" + strconv.Itoa(priority) + "|" + match
}

var _ = planned(ACL, Table{
	Kind:   Child,
	Parent: nbdb.LogicalSwitchTable,
	Column: "acls",
	AlsoIn: []string{nbdb.PortGroupTable},
	In: func(m model.Model) *[]string {
		if pg, ok := m.(*nbdb.PortGroup); ok {
			return &pg.ACLs
		}
		return &m.(*nbdb.LogicalSwitch).ACLs
	},
	Indexed: true,
	Describe: func(m model.Model, _ string) string {
		a := m.(*nbdb.ACL)
		out := fmt.Sprintf("acl %s %d %q %s", a.Direction, a.Priority, a.Match, a.Action)
		if a.Name != nil {
			out += " name=" + *a.Name
		}
		if a.Tier != 0 {
			out += " tier=" + strconv.Itoa(a.Tier)
		}
		return out + kv(" options", a.Options)
	},
	Monitor:     func() client.MonitorOption { return client.WithTable(&nbdb.ACL{}) },
	Group:       func(model.Model) GroupRow { return GroupRow{Table: nbdb.ACLTable} },
	GroupInsert: func(ovsdb.Row) GroupRow { return GroupRow{Table: nbdb.ACLTable} },
})
