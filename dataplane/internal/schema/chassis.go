package schema

import (
	"github.com/ovn-kubernetes/libovsdb/client"

	"github.com/udnkit/udnkit/dataplane/sbdb"
)

// Southbound Chassis: watched by name only (nothing reads its other
// columns; ovn-controller writes them).
var _ = register(&Table{Name: sbdb.ChassisTable, DB: Southbound, Kind: Watched,
	Monitor: func() client.MonitorOption {
		ch := &sbdb.Chassis{}
		return client.WithTable(ch, &ch.Name)
	}})
