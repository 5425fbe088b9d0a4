package schema

import (
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"

	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// LogicalRouter: a router is found by name (the table has no name index)
// and holds ports, routes, policies and NATs (their files name the
// columns); its copp names a zone row (copp.go) by UUID, which the plan
// finds or inserts. The cache holds only the columns plans read (doc.go
// says why).
var LogicalRouter = Spec[nbdb.LogicalRouter]{
	Table: nbdb.LogicalRouterTable,
	Key:   func(r *nbdb.LogicalRouter) string { return r.Name },
	UUID:  func(r *nbdb.LogicalRouter) *string { return &r.UUID },
	IDs:   func(r *nbdb.LogicalRouter) *map[string]string { return &r.ExternalIDs },
	Fields: func(r *nbdb.LogicalRouter, buf []any) []any {
		return append(buf, &r.ExternalIDs, &r.Options, &r.Copp)
	},
}

var _ = planned(LogicalRouter, Table{
	Kind:    Parent,
	Indexed: true,
	// The load balancer groups and load balancers the pieces reference (package plan keeps
	// them; another client's change is one to heal).
	Changed: func(old, cur model.Model, _ *[2][]any) bool {
		o, c := old.(*nbdb.LogicalRouter), cur.(*nbdb.LogicalRouter)
		return !SameSet(o.LoadBalancerGroup, c.LoadBalancerGroup) || !SameSet(o.LoadBalancer, c.LoadBalancer)
	},
	Describe: func(m model.Model, mark string) string {
		r := m.(*nbdb.LogicalRouter)
		return "router " + r.Name + mark + kv(" options", r.Options)
	},
	Monitor: func() client.MonitorOption {
		lr := &nbdb.LogicalRouter{}
		return client.WithTable(lr, &lr.Name, &lr.ExternalIDs, &lr.Options, &lr.Copp, &lr.LoadBalancerGroup, &lr.LoadBalancer)
	},
})
