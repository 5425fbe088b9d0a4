package schema

import (
	"fmt"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"

	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// LoadBalancerGroup: a zone row, by name (the table's index), that routers
// and switches reference (their load_balancer_group column). It has no
// external_ids, so no piece owns one: a plan inserts a missing one and
// never updates one; a network's groups (by their names) are deleted by
// the plan of its last piece that goes away (refs.DropLBGroups). Its load
// balancers (weak references) are members a plan adds and takes out one by
// one (only the piece's own load balancers are taken out).
var LoadBalancerGroup = Spec[nbdb.LoadBalancerGroup]{
	Table: nbdb.LoadBalancerGroupTable,
	Key:   func(r *nbdb.LoadBalancerGroup) string { return r.Name },
	UUID:  func(r *nbdb.LoadBalancerGroup) *string { return &r.UUID },
	// No such column: an empty map, never written.
	IDs:    func(*nbdb.LoadBalancerGroup) *map[string]string { return new(map[string]string) },
	Fields: func(r *nbdb.LoadBalancerGroup, buf []any) []any { return append(buf, &r.LoadBalancer) },
}

var _ = planned(LoadBalancerGroup, Table{
	Kind:    Zone,
	Indexed: true,
	Describe: func(m model.Model, mark string) string {
		g := m.(*nbdb.LoadBalancerGroup)
		return fmt.Sprintf("load_balancer_group %s%s load_balancers=%q", g.Name, mark, g.LoadBalancer)
	},
	Monitor: func() client.MonitorOption { return client.WithTable(&nbdb.LoadBalancerGroup{}) },
})
