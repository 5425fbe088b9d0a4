package pods

import (
	"fmt"
	"net/netip"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/ovnk"
)

// PieceLocalnetSwitch is a Localnet network's switch and localnet port.
const PieceLocalnetSwitch = "localnet-switch"

// MaxVLAN is the largest 802.1Q VLAN ID.
const MaxVLAN = 4094

// LocalnetNetwork is a Localnet network as its switch sees it (its NAD's
// config).
type LocalnetNetwork struct {
	// Name is the network's k8s.ovn.org/network; Role "primary" or
	// "secondary".
	Name, Role string
	// Subnets are the network's subnets (none: a network without IPAM).
	Subnets []netip.Prefix
	// PhysicalNetwork is physicalNetworkName: the bridge mapping the
	// localnet port leads to ("": the network's name).
	PhysicalNetwork string
	// VLAN is vlanID (0: untagged).
	VLAN int
}

// LocalnetSwitch builds a Localnet network's switch with its localnet port,
// as upstream's LocalnetUserDefinedNetworkController.init and
// initializeLogicalSwitch write them: the switch <prefix>ovn_localnet_switch
// with the network's external_ids (network, role, topology) and each
// subnet's family key in other_config (subnet: the IPv4 subnet,
// ipv6_prefix: the IPv6 subnet's address); the port
// <prefix>ovn_localnet_port of type localnet, addresses "unknown",
// options:network_name the physical network and tag_request the VLAN.
func LocalnetSwitch(n LocalnetNetwork) (*rows.Desired, error) {
	if n.Name == "" {
		return nil, fmt.Errorf("network.name: must not be empty")
	}
	if n.Role != "primary" && n.Role != "secondary" {
		return nil, fmt.Errorf("network.role: %q is not primary or secondary", n.Role)
	}
	if n.VLAN < 0 || n.VLAN > MaxVLAN {
		return nil, fmt.Errorf("network.vlan: %d is outside [0, %d]", n.VLAN, MaxVLAN)
	}
	names := ovnk.NamesFor(n.Name)
	oc := map[string]string{}
	if err := subnetConfig(oc, n.Subnets); err != nil {
		return nil, err
	}
	physnet := n.PhysicalNetwork
	if physnet == "" {
		physnet = n.Name
	}
	port := nbdb.LogicalSwitchPort{
		Name: names.LocalnetPort(), Type: "localnet", Addresses: []string{"unknown"},
		Options: map[string]string{"network_name": physnet},
	}
	if n.VLAN != 0 {
		vlan := n.VLAN
		port.TagRequest = &vlan
	}
	sw := rows.Switch{
		Row: nbdb.LogicalSwitch{Name: names.LocalnetSwitch(), OtherConfig: oc,
			ExternalIDs: map[string]string{ovnk.ExternalIDNetworkRole: n.Role}},
		Ports: []nbdb.LogicalSwitchPort{port},
	}
	return &rows.Desired{
		Owner:    rows.Owner{Network: n.Name, Topology: ovnk.TopologyLocalnet, Piece: PieceLocalnetSwitch},
		Switches: []rows.Switch{sw},
	}, nil
}
