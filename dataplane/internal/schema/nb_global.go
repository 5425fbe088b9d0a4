package schema

import (
	"github.com/ovn-kubernetes/libovsdb/client"

	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// NB_Global's one row (created by ovn-northd or `ovn-nbctl init`): its UUID
// tells one database from another (the healer's database_replaced). Only
// its name column is monitored: it is about never written, its counters
// often.
var _ = register(&Table{
	Name: nbdb.NBGlobalTable,
	DB:   Northbound,
	Kind: Identity,
	Monitor: func() client.MonitorOption {
		g := &nbdb.NBGlobal{}
		return client.WithTable(g, &g.Name)
	},
})
