package schema

import (
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// LogicalRouterStaticRoute: a router's route, by route table, prefix, next
// hop, policy and output port.
var LogicalRouterStaticRoute = Spec[nbdb.LogicalRouterStaticRoute]{
	Table: nbdb.LogicalRouterStaticRouteTable,
	Key: func(r *nbdb.LogicalRouterStaticRoute) string {
		pol := nbdb.LogicalRouterStaticRoutePolicyDstIP
		if r.Policy != nil {
			pol = *r.Policy
		}
		// One concatenation, one allocation: every desired route's key is
		// built on every Apply of its network.
		return r.RouteTable + "|" + r.IPPrefix + "|" + r.Nexthop + "|" + pol + "|" + Deref(r.OutputPort)
	},
	UUID: func(r *nbdb.LogicalRouterStaticRoute) *string { return &r.UUID },
	IDs:  func(r *nbdb.LogicalRouterStaticRoute) *map[string]string { return &r.ExternalIDs },
	Fields: func(r *nbdb.LogicalRouterStaticRoute, buf []any) []any {
		return append(buf, &r.ExternalIDs, &r.Options)
	},
}

var _ = planned(LogicalRouterStaticRoute, Table{
	Kind:    Child,
	Parent:  nbdb.LogicalRouterTable,
	Column:  "static_routes",
	In:      func(m model.Model) *[]string { return &m.(*nbdb.LogicalRouter).StaticRoutes },
	Indexed: true,
	Describe: func(m model.Model, _ string) string {
		rt := m.(*nbdb.LogicalRouterStaticRoute)
		out := "route " + rt.IPPrefix + " via " + rt.Nexthop
		if rt.Policy != nil {
			out += " policy=" + string(*rt.Policy)
		}
		if rt.OutputPort != nil {
			out += " output_port=" + *rt.OutputPort
		}
		return out + kv(" external_ids", rt.ExternalIDs)
	},
	Monitor: func() client.MonitorOption { return client.WithTable(&nbdb.LogicalRouterStaticRoute{}) },
	Group: func(m model.Model) GroupRow {
		x := m.(*nbdb.LogicalRouterStaticRoute)
		return GroupRow{Table: nbdb.LogicalRouterStaticRouteTable, Port: Deref(x.OutputPort), Nexthops: []string{x.Nexthop}}
	},
	GroupInsert: func(row ovsdb.Row) GroupRow {
		return GroupRow{Table: nbdb.LogicalRouterStaticRouteTable, Port: first(row["output_port"]), Nexthops: Strings(row["nexthop"])}
	},
})
