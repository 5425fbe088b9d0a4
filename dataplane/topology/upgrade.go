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

// LegacyGateway is a local node whose gateway external side and management
// port udnkit writes (it has a gateway config): what of its old rows
// Layer2Legacy adopts.
type LegacyGateway struct {
	// Node is the node's name; Bridge its gateway bridge (the localnet
	// port's name).
	Node, Bridge string
	// JoinIPs are its gateway router's join IPs (its join SNATs).
	JoinIPs []netip.Addr
}

// Layer2Legacy says which rows of a network, labelled with its network and
// topology but no udnkit piece, are the old Layer2 topology's rows that
// udnkit adopts (takes over, converges to its own values, removes when not
// desired):
//   - the old transit router and layer2 switch by name, the old
//     GR-to-switch ports (rtos-<switch>, stor-...), routes whose nexthop is
//     inside the network's subnets (the old GR route to the management
//     port), SNATs to the management port's masquerade IPs, and every
//     policy;
//   - of each gateway, the rows upstream's gatewayInit writes in both
//     topologies and udnkit now writes: the GR, its rtoe- port, the routes
//     out of it, its SNATs to the GR masquerade IPs of the GR's join IPs and
//     of the network's subnets (the old topology's only towards rtoe-), the
//     external switch with its etor- and localnet ports, and the node's
//     management port k8s-<prefix><node>, which OVN-Kubernetes writes with
//     no external_ids at all (the only such row adopted). Its rtoe- port's
//     static MAC bindings follow the port.
//
// Every other row of the network (another node's gateway, a GR's other
// NATs, pods' ports) stays OVN-Kubernetes'.
func Layer2Legacy(net Layer2Network, gateways ...LegacyGateway) func(any) bool {
	inSubnets := func(a string) bool {
		ip, err := netip.ParseAddr(a)
		return err == nil && slices.ContainsFunc(net.Subnets, func(s netip.Prefix) bool { return s.Contains(ip) })
	}
	names := ovnk.NamesFor(net.Name)
	gw, mgmt, joins := map[string]bool{}, map[string]bool{}, map[netip.Addr]bool{}
	var snatMatches []string
	for _, g := range gateways {
		gr := names.GatewayRouter(g.Node)
		for _, n := range []string{gr, names.GRToExternal(g.Node), names.ExternalSwitch(g.Node), names.ExternalToGR(g.Node),
			names.ExternalLocalnetPort(g.Bridge, g.Node)} {
			gw[n] = true
		}
		mgmt[names.ManagementPort(g.Node)] = true
		for _, j := range g.JoinIPs {
			joins[j] = true
		}
		snatMatches = append(snatMatches, fmt.Sprintf("outport == %q", names.GRToExternal(g.Node)))
	}
	gatewaySNAT := func(r *nbdb.NAT) bool {
		ext, err := netip.ParseAddr(r.ExternalIP)
		if r.Type != nbdb.NATTypeSNAT || err != nil || !slices.Contains(net.GatewayMasqueradeIPs, ext) {
			return false
		}
		if logical, err := netip.ParseAddr(r.LogicalIP); err == nil {
			return joins[logical]
		}
		return slices.ContainsFunc(net.Subnets, func(s netip.Prefix) bool { return s.String() == r.LogicalIP }) &&
			slices.ContainsFunc(snatMatches, func(m string) bool { return r.Match == m || strings.HasPrefix(r.Match, m+" && ") })
	}
	return func(row any) bool {
		switch r := row.(type) {
		case *nbdb.LogicalRouter:
			return len(r.ExternalIDs) > 0 && (strings.HasSuffix(r.Name, "transit_router") || gw[r.Name])
		case *nbdb.LogicalSwitch:
			return len(r.ExternalIDs) > 0 && (strings.HasSuffix(r.Name, "ovn_layer2_switch") || gw[r.Name])
		case *nbdb.LogicalRouterPort:
			return len(r.ExternalIDs) > 0 && (strings.HasPrefix(r.Name, "rtos-") || strings.HasPrefix(r.Name, "trtor-") ||
				strings.HasPrefix(r.Name, "rtotr-") || gw[r.Name])
		case *nbdb.LogicalSwitchPort:
			if len(r.ExternalIDs) == 0 {
				return mgmt[r.Name]
			}
			return strings.HasPrefix(r.Name, "stor-") || gw[r.Name] || mgmt[r.Name]
		case *nbdb.LogicalRouterStaticRoute:
			return len(r.ExternalIDs) > 0 && (inSubnets(r.Nexthop) || r.OutputPort != nil && gw[*r.OutputPort])
		case *nbdb.NAT:
			ext, err := netip.ParseAddr(r.ExternalIP)
			return len(r.ExternalIDs) > 0 && (err == nil && slices.Contains(net.MasqueradeIPs, ext) || gatewaySNAT(r))
		case *nbdb.LogicalRouterPolicy:
			return len(r.ExternalIDs) > 0
		}
		return false
	}
}

// legacyGateways are the local nodes whose external side the topology
// writes, for Layer2Legacy.
func (b *layer2Build) legacyGateways() []LegacyGateway {
	var out []LegacyGateway
	for _, i := range b.locals {
		n := b.all[i]
		if n.Gateway == nil {
			continue
		}
		g := LegacyGateway{Node: n.Name, Bridge: n.Gateway.BridgeID}
		for _, j := range n.joinIPs {
			g.JoinIPs = append(g.JoinIPs, j.Addr())
		}
		out = append(out, g)
	}
	return out
}
