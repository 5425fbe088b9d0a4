package topology

import (
	"fmt"
	"net/netip"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// gateway adds a local node's gateway router with its join side (gateway.go:
// createGWRouter, createGWRouterPeerSwitchPort, createGWRouterPort, the
// cluster subnets via the cluster router in updateGWRouterStaticRoutes), the
// cluster router's routes through it (updateClusterRouterStaticRoutes in
// shared gateway mode; EgressIP's catch-all), the service routes (shared
// gateway mode), the 1004 policies (SyncGateway) and its external side from
// the node's l3-gateway-config.
func (b *layer3Build) gateway(n Layer3LocalNode) error {
	gr := rows.Router{Row: nbdb.LogicalRouter{Name: n.GatewayRouter, ExternalIDs: primaryRole(),
		Options: gatewayRouterOptions(n.Chassis, "router_ip")}, Copp: b.copp, LoadBalancerGroups: gatewayRouterLBGroups(b.names, n.Gateway)}
	b.joinPort(n.GatewayRouter, n.JoinIPs, &gr, !n.NoGatewayMTU)
	crJoin := b.clusterJoinIPs()
	for _, s := range b.net.Subnets {
		if hop, ok := ovnk.FamilyOf(crJoin, s.Addr().Is6()); ok {
			gr.Routes = append(gr.Routes, base.StaticRoute(s.Masked().String(), hop.Addr().String(), "", nil))
		}
	}
	for _, j := range n.JoinIPs {
		b.cr.Routes = append(b.cr.Routes, base.StaticRoute(j.Addr().String(), j.Addr().String(), "", nil))
	}
	srcRoute := func(s netip.Prefix) {
		if hop, ok := ovnk.FamilyOf(n.JoinIPs, s.Addr().Is6()); ok {
			b.cr.Routes = append(b.cr.Routes, base.StaticRoute(s.Masked().String(), hop.Addr().String(), nbdb.LogicalRouterStaticRoutePolicySrcIP, nil))
		}
	}
	if !b.net.localGateway() {
		for _, s := range n.HostSubnets {
			srcRoute(s)
		}
	}
	if b.net.EgressIP {
		for _, s := range b.net.Subnets {
			if !containsPrefix(n.HostSubnets, s) {
				srcRoute(s)
			}
		}
	}
	if !b.servicesRouted && !b.net.localGateway() {
		b.servicesRouted = true
		b.cr.Routes = append(b.cr.Routes, serviceRoutesVia(b.net.Services, n.managementIP)...)
	}
	b.nodeIPPolicies(n)
	if err := b.externalSide(n, &gr); err != nil {
		return err
	}
	b.grs = append(b.grs, gr)
	return nil
}

// nodeIPPolicies reroute what the node's pods send to its gateway IPs and
// to the gateway router's masquerade IPs to its management port
// (gatewayrouter/policybasedroutes.go: AddSameNodeIPPolicy from
// gateway.go: SyncGateway, one per host subnet family).
func (b *layer3Build) nodeIPPolicies(n Layer3LocalNode) {
	sw := b.names.NodeSwitch(n.Name)
	rtos := b.names.RouterToNodeSwitch(n.Name)
	for _, s := range n.HostSubnets {
		v6 := s.Addr().Is6()
		var dsts []netip.Addr
		if n.Gateway != nil {
			if ip, ok := ovnk.FamilyOf(n.Gateway.IPAddresses, v6); ok {
				dsts = append(dsts, ip.Addr())
			}
		}
		if ip, ok := ovnk.AddrOfFamily(b.net.GatewayMasqueradeIPs, v6); ok {
			dsts = append(dsts, ip)
		}
		for _, ip := range dsts {
			b.cr.Policies = append(b.cr.Policies, nbdb.LogicalRouterPolicy{
				Priority: PolicyPriorityNodeIP, Action: nbdb.LogicalRouterPolicyActionReroute,
				Match:    fmt.Sprintf(`inport == %q && %s.dst == %s /* %s */`, rtos, base.FamilyOf(v6), ip, sw),
				Nexthops: []string{n.managementIP(v6).String()},
			})
		}
	}
}

// containsPrefix says whether ps holds p (masked).
func containsPrefix(ps []netip.Prefix, p netip.Prefix) bool {
	for _, q := range ps {
		if q.Masked() == p.Masked() {
			return true
		}
	}
	return false
}

// externalSide adds, from the node's l3-gateway-config, the gateway
// router's external side (gateway.go: gatewayInit with the
// GatewayConfig of layer3_user_defined_network_controller.go:
// nodeGatewayConfig: the cluster subnets SNATed to the GR's masquerade IP)
// and its rtoe- port's static MAC bindings; a node without one gets
// neither.
func (b *layer3Build) externalSide(n Layer3LocalNode, gr *rows.Router) error {
	if n.Gateway == nil {
		return nil
	}
	joins := make([]netip.Addr, len(n.JoinIPs))
	for i, j := range n.JoinIPs {
		joins[i] = j.Addr()
	}
	var err error
	b.switches, err = AddGatewayExternal(gr, b.switches, GatewayExternal{
		Network: b.net.Name, Node: n.Name, Gateway: *n.Gateway,
		MasqueradeIPs: b.net.GatewayMasqueradeIPs, MasqueradeSubnets: b.net.MasqueradeSubnets,
		JoinIPs: joins, SNATSubnets: b.net.Subnets, ExternalPortRange: b.net.externalPortRange(),
	})
	if err != nil {
		return err
	}
	macs, err := GatewayStaticMACBindings(b.net.Name, n.Name, b.net.MasqueradeSubnets)
	if err != nil {
		return err
	}
	b.macs = append(b.macs, macs...)
	return nil
}
