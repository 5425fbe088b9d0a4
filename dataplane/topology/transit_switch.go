package topology

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// transitSwitch is the layer2 switch with its stotr- port, the switch side
// of the trtos- port.
func (b *layer2Build) transitSwitch([]Layer2Node) error {
	names := b.names
	b.sw = rows.Switch{Row: nbdb.LogicalSwitch{Name: names.Switch(), OtherConfig: b.switchOtherConfig(),
		ExternalIDs: map[string]string{ovnk.ExternalIDNetworkRole: "primary"}}, LoadBalancerGroups: switchLBGroups(names)}
	b.sw.Ports = append(b.sw.Ports, nbdb.LogicalSwitchPort{
		Name: names.SwitchToRouter(), Type: "router", Addresses: []string{"router"},
		Options: map[string]string{"router-port": names.RouterToSwitch()},
	})
	return nil
}

// switchOtherConfig is the layer2 switch's other_config as upstream writes
// it (base_secondary_layer2_network_controller.go: initializeLogicalSwitch):
// each subnet's family key (subnet: the IPv4 subnet, ipv6_prefix: the IPv6
// subnet's address) and zone_interconnect/zone_ic_handler.go's
// addTransitSwitchConfig (the switch's own name, its tunnel key, IGMP
// snooping that floods unregistered multicast and queries nothing).
func (b *layer2Build) switchOtherConfig() map[string]string {
	oc := base.TransitSwitchOtherConfig(b.names.Switch(), b.net.SwitchTunnelKey)
	for _, s := range b.net.Subnets {
		if s = s.Masked(); s.Addr().Is4() {
			oc["subnet"] = s.String()
		} else {
			oc["ipv6_prefix"] = s.Addr().String()
		}
	}
	return oc
}

// oldNode keeps an old-topology node's remote switch port and reaches its
// join IP through the upgrade port (the document's "100.65.0.3 100.65.0.3
// dst-ip").
func (b *layer2Build) oldNode(n l2node) {
	b.sw.Ports = append(b.sw.Ports, nbdb.LogicalSwitchPort{
		Name: b.names.SwitchToGR(n.Name), Type: "remote",
		Addresses: []string{macAndIPs(n.joinIPs)},
		Options: map[string]string{
			"requested-tnl-key": strconv.Itoa(n.LegacyTunnelKey),
			"requested-chassis": n.Chassis,
		},
		ExternalIDs: map[string]string{ovnk.ExternalIDNode: n.Name},
	})
	for _, j := range n.joinIPs {
		b.tr.Routes = append(b.tr.Routes, remoteJoinRoute(n, j.Addr().String(), j.Addr().String()))
	}
}

// macAndIPs is a remote LSP address: the GR MAC and its join IPs.
func macAndIPs(join []netip.Prefix) string {
	parts := []string{ovnk.MACFromIP(join[0].Addr()).String()}
	for _, j := range join {
		parts = append(parts, j.String())
	}
	return strings.Join(parts, " ")
}
