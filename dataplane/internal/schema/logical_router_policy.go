package schema

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// LogicalRouterPolicy: a router's policy, by priority and match.
var LogicalRouterPolicy = Spec[nbdb.LogicalRouterPolicy]{
	Table: nbdb.LogicalRouterPolicyTable,
	Key:   func(r *nbdb.LogicalRouterPolicy) string { return strconv.Itoa(r.Priority) + "|" + r.Match },
	UUID:  func(r *nbdb.LogicalRouterPolicy) *string { return &r.UUID },
	IDs:   func(r *nbdb.LogicalRouterPolicy) *map[string]string { return &r.ExternalIDs },
	Fields: func(r *nbdb.LogicalRouterPolicy, buf []any) []any {
		return append(buf, &r.ExternalIDs, &r.Action, &r.Nexthops, &r.Options)
	},
}

var _ = planned(LogicalRouterPolicy, Table{
	Kind:    Child,
	Parent:  nbdb.LogicalRouterTable,
	Column:  "policies",
	In:      func(m model.Model) *[]string { return &m.(*nbdb.LogicalRouter).Policies },
	Indexed: true,
	Describe: func(m model.Model, _ string) string {
		p := m.(*nbdb.LogicalRouterPolicy)
		out := fmt.Sprintf("policy %d %s %s", p.Priority, p.Match, p.Action)
		if len(p.Nexthops) > 0 {
			out += " " + strings.Join(p.Nexthops, ",")
		}
		return out
	},
	Monitor: func() client.MonitorOption { return client.WithTable(&nbdb.LogicalRouterPolicy{}) },
	Group: func(m model.Model) GroupRow {
		return GroupRow{Table: nbdb.LogicalRouterPolicyTable, Nexthops: m.(*nbdb.LogicalRouterPolicy).Nexthops}
	},
	GroupInsert: func(row ovsdb.Row) GroupRow {
		return GroupRow{Table: nbdb.LogicalRouterPolicyTable, Nexthops: Strings(row["nexthops"])}
	},
})
