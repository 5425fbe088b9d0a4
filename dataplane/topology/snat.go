package topology

import (
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// snat is the management port's SNAT to the masquerade IPs on the transit
// router. It applies only to packets sent to the management port (its MAC,
// from the first subnet's management IP, as upstream's
// syncNodeManagementPort derives it), as upstream's buildUDNEgressSNAT
// matches them, with upstream's external_port_range (every NAT its
// libovsdbops.buildNAT writes has it).
func (b *layer2Build) snat([]Layer2Node) error {
	mgmtMAC := ovnk.MACFromIP(b.net.managementIP(b.net.Subnets[0].Addr().Is6()))
	for _, masq := range b.net.MasqueradeIPs {
		s, ok := ovnk.FamilyOf(b.net.Subnets, masq.Is6())
		if !ok {
			continue // a cluster family the network does not have: no pods to SNAT
		}
		b.tr.NATs = append(b.tr.NATs, nbdb.NAT{
			Type: nbdb.NATTypeSNAT, LogicalIP: s.String(), ExternalIP: masq.String(),
			LogicalPort: base.Ptr(b.names.RouterToSwitch()), Options: map[string]string{"stateless": "false"},
			Match: "eth.dst == " + mgmtMAC.String(), ExternalPortRange: b.net.externalPortRange(),
		})
	}
	return nil
}
