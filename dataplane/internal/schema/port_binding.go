package schema

import (
	"github.com/ovn-kubernetes/libovsdb/client"

	"github.com/udnkit/udnkit/dataplane/sbdb"
)

// Southbound Port_Binding: read, never written but for its encap
// (SetPortEncaps, which names that column alone). The cache holds the two
// columns udnkit reads: ovn-northd and ovn-controller fill the others (and
// change up and chassis with every pod), and a cluster has a binding per
// logical port of every node.
var _ = register(&Table{Name: sbdb.PortBindingTable, DB: Southbound, Kind: Watched,
	Monitor: func() client.MonitorOption {
		pb := &sbdb.PortBinding{}
		return client.WithTable(pb, &pb.LogicalPort, &pb.Encap)
	}})
