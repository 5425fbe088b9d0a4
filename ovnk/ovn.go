package ovnk

// OVNVersion is the OVN release udnkit is built for: the one OVN-Kubernetes'
// image ships. The dataplane's models are generated from its schemas (so its
// Northbound schema, 7.18.0, is the oldest the dataplane accepts), `make ovn`
// provisions it and the tests run against it.
const OVNVersion = "26.03.1"

// Tunnel keys of a Layer2 transit router's ports, which every zone must agree
// on (upstream's pkg/ovn/transit_router.go): the switch-facing trtos- port has
// key TransitRouterToSwitchTunnelKey on every node; the keys below
// TransitRouterPortFirstTunnelKey are reserved for local ports; a node's
// trtor- port has TransitRouterPortFirstTunnelKey + its node ID.
const (
	TransitRouterToSwitchTunnelKey  = 1
	TransitRouterPortFirstTunnelKey = 10
)

// TransitRouterPortTunnelKey is the tunnel key of the trtor- port of the
// node with ID nodeID.
func TransitRouterPortTunnelKey(nodeID int) int { return TransitRouterPortFirstTunnelKey + nodeID }
