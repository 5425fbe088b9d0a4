package schema

import (
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"

	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// Copp: a zone row (control plane protection: a meter name by protocol),
// by name (the table's index); routers reference it weakly (their copp
// column).
var Copp = Spec[nbdb.Copp]{
	Table:  nbdb.CoppTable,
	Key:    func(r *nbdb.Copp) string { return r.Name },
	UUID:   func(r *nbdb.Copp) *string { return &r.UUID },
	IDs:    func(r *nbdb.Copp) *map[string]string { return &r.ExternalIDs },
	Fields: func(r *nbdb.Copp, buf []any) []any { return append(buf, &r.ExternalIDs, &r.Meters) },
}

var _ = planned(Copp, Table{
	Kind:    Zone,
	Indexed: true,
	Describe: func(m model.Model, mark string) string {
		c := m.(*nbdb.Copp)
		return "copp " + c.Name + mark + kv(" meters", c.Meters)
	},
	Monitor: func() client.MonitorOption { return client.WithTable(&nbdb.Copp{}) },
})
