package schema

import (
	"github.com/ovn-kubernetes/libovsdb/client"

	"github.com/udnkit/udnkit/dataplane/sbdb"
)

// Southbound Chassis: read (whole rows), never written.
var _ = register(&Table{Name: sbdb.ChassisTable, DB: Southbound, Kind: Watched,
	Monitor: func() client.MonitorOption { return client.WithTable(&sbdb.Chassis{}) }})
