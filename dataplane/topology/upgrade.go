package topology

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// upgradePair is, while another node runs the old topology, the temporary
// upgrade pair: a router-type switch port with the local node's tunnel ID
// for the network, peered with a transit router port that owns the GR's MAC
// and a dummy join-subnet IP (the last usable address); and the management
// masquerade IPs on the trtos- port.
func (b *layer2Build) upgradePair([]Layer2Node) error {
	if !b.anyOld || len(b.locals) != 1 {
		return nil
	}
	net, names, local := b.net, b.names, b.all[b.locals[0]]
	if local.LegacyTunnelKey <= 0 {
		return fmt.Errorf("nodes: local node %s has no tunnel ID for network %s in %s: the upgrade switch port needs it while other nodes run the old topology",
			local.Name, net.Name, ovnk.AnnotationLayer2GRLRPTunnelIDs)
	}
	b.tr.Ports[0].Networks = append(b.tr.Ports[0].Networks, net.masqueradeNetworks()...)
	var dummies []netip.Prefix
	for _, v6 := range net.JoinFamilies() {
		j, _ := ovnk.FamilyOf(net.JoinSubnets, v6)
		last := ovnk.LastAddr(j)
		dummies = append(dummies, netip.PrefixFrom(last.Prev(), j.Bits()))
	}
	b.tr.Ports = append(b.tr.Ports, nbdb.LogicalRouterPort{
		Name: names.UpgradeRouterPort(), MAC: ovnk.MACFromIP(local.joinIPs[0].Addr()).String(),
		Networks: base.PrefixStrings(dummies),
	})
	b.sw.Ports = append(b.sw.Ports, nbdb.LogicalSwitchPort{
		Name: names.UpgradeSwitchPort(), Type: "router", Addresses: []string{"router"},
		Options: map[string]string{
			"router-port":       names.UpgradeRouterPort(),
			"requested-tnl-key": strconv.Itoa(local.LegacyTunnelKey),
		},
	})
	return nil
}

// Layer2Legacy says which rows of a network, labelled with its network and
// topology but no udnkit piece, are the old Layer2 topology's and so adopted
// (and removed when not desired): the transit router and layer2 switch by
// name, the old GR-to-switch ports (rtos-<switch>, stor-GR_...), routes whose
// nexthop is inside the network's subnets (the old GR route to the
// management port) and SNATs to the management port's masquerade IPs. Rows
// OVN-Kubernetes keeps in the new topology (the GR itself, its rtoe- port and
// default routes, the external switch, node SNATs) carry the same labels and
// are never adopted.
func Layer2Legacy(subnets []netip.Prefix, masqueradeIPs []netip.Addr) func(any) bool {
	inSubnets := func(a string) bool {
		ip, err := netip.ParseAddr(a)
		return err == nil && slices.ContainsFunc(subnets, func(s netip.Prefix) bool { return s.Contains(ip) })
	}
	return func(row any) bool {
		switch r := row.(type) {
		case *nbdb.LogicalRouter:
			return strings.HasSuffix(r.Name, "transit_router")
		case *nbdb.LogicalSwitch:
			return strings.HasSuffix(r.Name, "ovn_layer2_switch")
		case *nbdb.LogicalRouterPort:
			return strings.HasPrefix(r.Name, "rtos-") || strings.HasPrefix(r.Name, "trtor-") || strings.HasPrefix(r.Name, "rtotr-")
		case *nbdb.LogicalSwitchPort:
			return strings.HasPrefix(r.Name, "stor-")
		case *nbdb.LogicalRouterStaticRoute:
			return inSubnets(r.Nexthop)
		case *nbdb.NAT:
			ext, err := netip.ParseAddr(r.ExternalIP)
			return err == nil && slices.Contains(masqueradeIPs, ext)
		case *nbdb.LogicalRouterPolicy:
			return true
		}
		return false
	}
}
