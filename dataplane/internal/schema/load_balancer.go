package schema

import (
	"fmt"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"

	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// LoadBalancer: a root row, by name (the table has no name index), which
// load balancer groups hold (weak references).
var LoadBalancer = Spec[nbdb.LoadBalancer]{
	Table: nbdb.LoadBalancerTable,
	Key:   func(r *nbdb.LoadBalancer) string { return r.Name },
	UUID:  func(r *nbdb.LoadBalancer) *string { return &r.UUID },
	IDs:   func(r *nbdb.LoadBalancer) *map[string]string { return &r.ExternalIDs },
	Fields: func(r *nbdb.LoadBalancer, buf []any) []any {
		return append(buf, &r.ExternalIDs, &r.Vips, &r.Protocol, &r.Options, &r.SelectionFields, &r.IPPortMappings)
	},
}

var _ = planned(LoadBalancer, Table{
	Kind:    Root,
	Indexed: true,
	Describe: func(m model.Model, _ string) string {
		lb := m.(*nbdb.LoadBalancer)
		proto := ""
		if lb.Protocol != nil {
			proto = " " + string(*lb.Protocol)
		}
		return fmt.Sprintf("load_balancer %s%s", lb.Name, proto) + kv(" vips", lb.Vips) + kv(" options", lb.Options)
	},
	Monitor: func() client.MonitorOption { return client.WithTable(&nbdb.LoadBalancer{}) },
})
