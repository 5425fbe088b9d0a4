package pods

import (
	"fmt"
	"net/netip"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// PieceSecondaryLayer2Switch is a Secondary Layer2 network's switch.
const PieceSecondaryLayer2Switch = "secondary-layer2-switch"

// SecondaryLayer2Network is a Secondary Layer2 network as its switch sees
// it: its NAD's config and network ID.
type SecondaryLayer2Network struct {
	// Name is the network's k8s.ovn.org/network.
	Name string
	// Subnets are the network's subnets (none: a network without IPAM).
	Subnets []netip.Prefix
	// NetworkID is the NAD's k8s.ovn.org/network-id.
	NetworkID int
}

// SecondaryLayer2Switch builds a Secondary Layer2 network's one switch, as
// upstream's initializeLogicalSwitch writes it with interconnect
// (base_secondary_layer2_network_controller.go and zone_interconnect's
// addTransitSwitchConfig): <prefix>ovn_layer2_switch with the network's
// external_ids (network, role secondary, topology), and in other_config
// each subnet's family key, interconn-ts (the switch's name), the legacy
// transit switch tunnel key (BaseTransitSwitchTunnelKey + network ID) and
// IGMP snooping that floods unregistered multicast, and the network's
// three load balancer groups, the cluster-wide and switch ones on the
// switch (initLoadBalancerGroups, which upstream's Layer2 controller runs
// for Secondary networks too; no Service fills them). The switch spans the
// zones: the pods of other zones' nodes are remote ports on it (Ports).
func SecondaryLayer2Switch(n SecondaryLayer2Network) (*rows.Desired, error) {
	if n.Name == "" {
		return nil, fmt.Errorf("network.name: must not be empty")
	}
	key, err := ovnk.LegacyTransitSwitchKey(n.NetworkID)
	if err != nil {
		return nil, fmt.Errorf("network.networkID: %w", err)
	}
	names := ovnk.NamesFor(n.Name)
	name := names.Switch()
	oc := base.TransitSwitchOtherConfig(name, key)
	if err := subnetConfig(oc, n.Subnets); err != nil {
		return nil, err
	}
	var groups []rows.LoadBalancerGroup
	for _, g := range names.LoadBalancerGroups() {
		groups = append(groups, rows.LoadBalancerGroup{Row: nbdb.LoadBalancerGroup{Name: g}})
	}
	return &rows.Desired{
		Owner: rows.Owner{Network: n.Name, Topology: base.TopologyLayer2, Piece: PieceSecondaryLayer2Switch},
		Switches: []rows.Switch{{Row: nbdb.LogicalSwitch{Name: name, OtherConfig: oc,
			ExternalIDs: map[string]string{ovnk.ExternalIDNetworkRole: "secondary"}},
			LoadBalancerGroups: []string{names.ClusterLBGroup(), names.ClusterSwitchLBGroup()}}},
		LoadBalancerGroups: groups,
	}, nil
}

// subnetConfig sets a Layer2 or Localnet switch's per-family subnet keys
// in oc (initializeLogicalSwitch): subnet, the IPv4 subnet; ipv6_prefix,
// the IPv6 subnet's address.
func subnetConfig(oc map[string]string, subnets []netip.Prefix) error {
	for i, s := range subnets {
		if !s.IsValid() {
			return fmt.Errorf("network.subnets[%d]: not a valid prefix", i)
		}
		if s = s.Masked(); s.Addr().Is4() {
			oc["subnet"] = s.String()
		} else {
			oc["ipv6_prefix"] = s.Addr().String()
		}
	}
	return nil
}
