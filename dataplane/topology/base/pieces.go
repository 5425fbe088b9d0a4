package base

// Topology and piece names in the rows' external_ids: a network's rows are
// grouped by topology, and each builder writes one piece of it.
const (
	TopologyLayer2      = "layer2"
	TopologyLayer3      = "layer3"
	PieceTransitRouter  = "transit-router"
	PieceSubnetPolicies = "subnet-policies"
	// PieceTopology is a Layer3 network's whole topology in a zone.
	PieceTopology      = "topology"
	PieceLiveMigration = "live-migration"
	PieceMultiVTEP     = "multi-vtep"
)
