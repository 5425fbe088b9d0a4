package ovnk

// The names of a node's gateway external side and management port on a
// network (upstream's util.GetExtSwitchFromNode, GetExtPortName and
// GetK8sMgmtIntfName over GetNetworkScopedName, and types'
// GWRouterToExtSwitchPrefix and EXTSwitchToGWRouterPrefix).

// ExternalSwitch is the node's external switch: ext_<prefix><node>.
func (n Layer2Names) ExternalSwitch(node string) string { return "ext_" + n.prefix + node }

// GRToExternal is the gateway router's port on the external switch.
func (n Layer2Names) GRToExternal(node string) string { return "rtoe-" + n.GatewayRouter(node) }

// ExternalToGR is the external switch's router port, peer of GRToExternal.
func (n Layer2Names) ExternalToGR(node string) string { return "etor-" + n.GatewayRouter(node) }

// ExternalLocalnetPort is the external switch's localnet port onto the
// node's bridge: <bridge>_<prefix><node>.
func (n Layer2Names) ExternalLocalnetPort(bridge, node string) string {
	return bridge + "_" + n.prefix + node
}

// ManagementPort is the node's management port on the network:
// k8s-<prefix><node>.
func (n Layer2Names) ManagementPort(node string) string { return "k8s-" + n.prefix + node }

// PhysicalNetworkName is the network_name of a Primary network's localnet
// ports onto the node's bridge when it has no uplink (upstream's
// types.PhysicalNetworkName).
const PhysicalNetworkName = "physnet"
