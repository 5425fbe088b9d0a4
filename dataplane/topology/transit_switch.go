package topology

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/ovnk"
)

// transitSwitch is the layer2 switch with its stotr- port, the switch side
// of the trtos- port.
func (b *layer2Build) transitSwitch([]Layer2Node) error {
	names := b.names
	b.sw = rows.Switch{Row: nbdb.LogicalSwitch{
		Name:        names.Switch(),
		OtherConfig: map[string]string{"requested-tnl-key": strconv.Itoa(b.net.SwitchTunnelKey)},
	}}
	b.sw.Ports = append(b.sw.Ports, nbdb.LogicalSwitchPort{
		Name: names.SwitchToRouter(), Type: "router", Addresses: []string{"router"},
		Options: map[string]string{"router-port": names.RouterToSwitch()},
	})
	return nil
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
