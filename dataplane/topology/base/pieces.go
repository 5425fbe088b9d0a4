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
	// PieceServices is the load balancers of the Services of a primary
	// network's namespaces in a zone (package topology/services).
	PieceServices = "services"
)

// The network-policy, isolation and EgressIP defaults (package
// topology/policy): a network's pieces, and the zone's, whose rows every
// network shares and which belong to the pseudo-network
// policy.ZoneNetwork of topology TopologyZone.
const (
	TopologyZone          = "zone"
	PieceNetpolDefaults   = "netpol-defaults"
	PieceEgressIPDefaults = "egressip-defaults"
	PieceUDNIsolation     = "udn-isolation"
	PieceEgressIPShared   = "egressip-shared"
	// PieceEgressIPDefaultSets: the zone's node-ips and egresssvc-served-pods
	// address sets, which OVN-Kubernetes' EgressIP also writes for the
	// default network.
	PieceEgressIPDefaultSets = "egressip-default-sets"
)
