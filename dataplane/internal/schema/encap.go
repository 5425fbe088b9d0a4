package schema

import (
	"github.com/ovn-kubernetes/libovsdb/client"

	"github.com/udnkit/udnkit/dataplane/sbdb"
)

// Southbound Encap: read (a chassis's encap IPs), never written. The cache
// holds the columns udnkit reads and the table's index (type, ip).
var _ = register(&Table{Name: sbdb.EncapTable, DB: Southbound, Kind: Watched,
	Monitor: func() client.MonitorOption {
		e := &sbdb.Encap{}
		return client.WithTable(e, &e.ChassisName, &e.IP, &e.Type)
	}})
