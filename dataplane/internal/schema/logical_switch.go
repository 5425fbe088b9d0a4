package schema

import (
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"

	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// LogicalSwitch: a switch is found by name (the table has no name index)
// and holds switch ports. The cache holds only the columns plans read
// (doc.go says why).
var LogicalSwitch = Spec[nbdb.LogicalSwitch]{
	Table:  nbdb.LogicalSwitchTable,
	Key:    func(r *nbdb.LogicalSwitch) string { return r.Name },
	UUID:   func(r *nbdb.LogicalSwitch) *string { return &r.UUID },
	IDs:    func(r *nbdb.LogicalSwitch) *map[string]string { return &r.ExternalIDs },
	Fields: func(r *nbdb.LogicalSwitch, buf []any) []any { return append(buf, &r.ExternalIDs, &r.OtherConfig) },
}

var _ = planned(LogicalSwitch, Table{
	Kind:    Parent,
	Indexed: true,
	// The load balancer groups and load balancers the pieces reference (package plan keeps
	// them; another client's change is one to heal).
	Changed: func(old, cur model.Model, _ *[2][]any) bool {
		o, c := old.(*nbdb.LogicalSwitch), cur.(*nbdb.LogicalSwitch)
		return !SameSet(o.LoadBalancerGroup, c.LoadBalancerGroup) || !SameSet(o.LoadBalancer, c.LoadBalancer)
	},
	Describe: func(m model.Model, mark string) string {
		s := m.(*nbdb.LogicalSwitch)
		return "switch " + s.Name + mark + kv(" other_config", s.OtherConfig)
	},
	Monitor: func() client.MonitorOption {
		ls := &nbdb.LogicalSwitch{}
		return client.WithTable(ls, &ls.Name, &ls.ExternalIDs, &ls.OtherConfig, &ls.LoadBalancerGroup, &ls.LoadBalancer)
	},
})
