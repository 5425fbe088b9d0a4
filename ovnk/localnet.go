package ovnk

// TopologyLocalnet is a Localnet network's topology in its NAD's config and
// in its rows' k8s.ovn.org/topology (upstream's types.LocalnetTopology).
const TopologyLocalnet = "localnet"

// LocalnetSwitch is a Localnet network's one logical switch
// (types.OVNLocalnetSwitch under the network's prefix).
func (n Layer2Names) LocalnetSwitch() string { return n.prefix + "ovn_localnet_switch" }

// LocalnetPort is the Localnet switch's localnet port onto the physical
// network (types.OVNLocalnetPort under the network's prefix).
func (n Layer2Names) LocalnetPort() string { return n.prefix + "ovn_localnet_port" }

// Layer3NodeSwitch is a Layer3 network's switch of one node
// (GetNetworkScopedSwitchName(node): the network's prefix, then the node).
func (n Layer2Names) Layer3NodeSwitch(node string) string { return n.prefix + node }
