package topology

import (
	"net/netip"
	"strconv"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// transitRouter is the transit router with its trtos- port, which holds the
// pods' gateway and is pinned to the zone's chassis.
func (b *layer2Build) transitRouter([]Layer2Node) error {
	net, names := b.net, b.names
	b.tr = rows.Router{Row: nbdb.LogicalRouter{
		Name:        names.TransitRouter(),
		Options:     map[string]string{"requested-tnl-key": strconv.Itoa(net.TransitRouterTunnelKey)},
		ExternalIDs: map[string]string{ovnk.ExternalIDClusterRouter: "yes"},
	}, Copp: b.copp}
	if net.localGateway() {
		// upstream's topologyfactory: in local gateway mode the transit
		// router holds the management-port SNAT's conntrack state for
		// replies too, before service reverse NAT.
		b.tr.Row.Options["ct-commit-all"] = "true"
	}
	gws := net.gateways()
	rtos := nbdb.LogicalRouterPort{
		Name: names.RouterToSwitch(), MAC: ovnk.MACFromIP(gws[0].Addr()).String(), Networks: base.PrefixStrings(gws),
		Options:       map[string]string{"requested-tnl-key": strconv.Itoa(ovnk.TransitRouterToSwitchTunnelKey)},
		Ipv6RaConfigs: net.raConfigs(),
	}
	if net.GatewayMTU > 0 && localsSupportGatewayMTU(b.all, b.locals) {
		rtos.Options["gateway_mtu"] = strconv.Itoa(net.GatewayMTU)
	}
	b.tr.Ports = append(b.tr.Ports, rtos)
	b.tr.GatewayChassis = map[string][]nbdb.GatewayChassis{rtos.Name: b.gatewayChassis()}
	return nil
}

// gatewayChassis are the trtos- port's gateway chassis: each local node's
// chassis at priority 1, as upstream's syncNodeClusterRouterPort pins the
// port to its zone's node. It makes the port a distributed gateway port,
// on which ovn-northd applies the management-port SNAT (a NAT with a
// logical_port). In a zone of one node (upstream's interconnect layout) it
// is upstream's one row; in a zone of several, each node has its row and
// OVN makes the one chassis it picks the port's gateway.
func (b *layer2Build) gatewayChassis() []nbdb.GatewayChassis {
	var out []nbdb.GatewayChassis
	for _, i := range b.locals {
		chassis := b.all[i].Chassis
		out = append(out, nbdb.GatewayChassis{
			Name: b.names.RouterToSwitchGatewayChassis(chassis), ChassisName: chassis, Priority: 1,
		})
	}
	return out
}

// transitPort is a moved node's trtor- port (peered with its GR when local,
// bound to its chassis when remote) and the route to its join IPs.
func (b *layer2Build) transitPort(n l2node) {
	port := nbdb.LogicalRouterPort{
		Name: n.trtor, MAC: ovnk.MACFromIP(n.trSide[0].Addr()).String(), Networks: base.PrefixStrings(n.trSide),
		Options: map[string]string{"requested-tnl-key": strconv.Itoa(ovnk.TransitRouterPortTunnelKey(n.ID))},
	}
	if n.Local {
		port.Peer = base.Ptr(n.rtotr)
	} else {
		port.Options["requested-chassis"] = n.Chassis
		port.ExternalIDs = map[string]string{ovnk.ExternalIDNode: n.Name}
	}
	b.tr.Ports = append(b.tr.Ports, port)
	for _, j := range n.joinIPs {
		gr, ok := ovnk.FamilyOf(n.grSide, j.Addr().Is6())
		if !ok {
			continue // a join IP of a cluster family the network does not have: no transit route
		}
		if n.Local {
			b.tr.Routes = append(b.tr.Routes, base.StaticRoute(j.Addr().String(), gr.Addr().String(), "", nil))
		} else {
			b.tr.Routes = append(b.tr.Routes, remoteJoinRoute(n, j.Addr().String(), gr.Addr().String()))
		}
	}
}

// remoteJoinRoute is the transit router's route to a remote node's GR join
// IP, labelled with the node as upstream's addTransitRouterRoutes labels it.
func remoteJoinRoute(n l2node, prefix, nexthop string) nbdb.LogicalRouterStaticRoute {
	r := base.StaticRoute(prefix, nexthop, "", nil)
	r.ExternalIDs = map[string]string{ovnk.ExternalIDNode: n.Name}
	return r
}

// gateways returns the switch-facing gateway addresses with the subnets'
// prefix lengths, IPv4 first, by upstream's rule (the one the address
// allocator and the pod webhook use).
func (net Layer2Network) gateways() []netip.Prefix {
	subnets := base.SortedFamilies(net.Subnets)
	gws, _, err := ovnk.Layer2GatewayAndManagement(subnets, net.InfrastructureSubnets, net.DefaultGatewayIPs)
	if err != nil {
		return nil // validate refuses such subnets first
	}
	out := make([]netip.Prefix, len(gws))
	for i, gw := range gws {
		out[i] = netip.PrefixFrom(gw, subnets[i].Bits())
	}
	return out
}

// raConfigs are the rtos- port's ipv6_ra_configs on a network with an IPv6
// subnet, as upstream's syncNodeClusterRouterPort sets them for primary
// Layer2 networks: guests learn their default route from the router
// advertisements (stateful DHCPv6 addresses), at a low preference so a
// static gateway wins.
func (net Layer2Network) raConfigs() map[string]string {
	if _, ok := ovnk.FamilyOf(net.Subnets, true); !ok {
		return nil
	}
	ra := map[string]string{
		"address_mode": "dhcpv6_stateful", "send_periodic": "true",
		"max_interval": "900", "min_interval": "300", "router_preference": "LOW",
	}
	if net.MTU > 0 {
		ra["mtu"] = strconv.Itoa(net.MTU)
	}
	return ra
}
