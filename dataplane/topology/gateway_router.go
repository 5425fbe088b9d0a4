package topology

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// localNode routes the network's egress to the local GR (shared gateway
// mode) or the management port (local), the service IPs to the management
// port (shared mode), reroutes traffic to the node's IPs to the management
// port and adds the GR; a node with a gateway config also gets its GR's
// external side and its management port.
func (b *layer2Build) localNode(n l2node) error {
	net, tr := b.net, &b.tr
	for _, s := range net.Subnets {
		hop := net.managementIP(s.Addr().Is6())
		if !net.localGateway() {
			gr, _ := ovnk.FamilyOf(n.grSide, s.Addr().Is6())
			hop = gr.Addr()
		}
		tr.Routes = append(tr.Routes, base.StaticRoute(s.String(), hop.String(), nbdb.LogicalRouterStaticRoutePolicySrcIP, nil))
	}
	if !b.servicesRouted && !net.localGateway() {
		b.servicesRouted = true
		tr.Routes = append(tr.Routes, net.serviceRoutes()...)
	}
	for _, ip := range n.NodeIPs {
		mgmt := net.managementIP(ip.Is6())
		if !mgmt.IsValid() {
			continue // a node IP of a family the network does not have
		}
		tr.Policies = append(tr.Policies, nbdb.LogicalRouterPolicy{
			Priority: PolicyPriorityNodeIP, Action: nbdb.LogicalRouterPolicyActionReroute,
			Match: fmt.Sprintf(`inport == %q && %s.dst == %s /* %s */`,
				b.names.RouterToSwitch(), base.IPFamily(ip), ip, b.names.Switch()),
			Nexthops: []string{mgmt.String()},
		})
	}
	gr := net.gatewayRouter(n)
	gr.Copp = b.copp
	gr.LoadBalancerGroups = gatewayRouterLBGroups(b.names, n.Gateway)
	if n.Gateway != nil {
		if err := b.nodeGateway(n, &gr); err != nil {
			return err
		}
	}
	b.grs = append(b.grs, gr)
	return nil
}

// nodeGateway adds a local node's external side to its GR and its
// management port to the switch, from the node's gateway config.
func (b *layer2Build) nodeGateway(n l2node, gr *rows.Router) error {
	net := b.net
	joins := make([]netip.Addr, len(n.joinIPs))
	for i, j := range n.joinIPs {
		joins[i] = j.Addr()
	}
	var err error
	b.exts, err = AddGatewayExternal(gr, b.exts, GatewayExternal{
		Network: net.Name, Node: n.Name, Gateway: *n.Gateway,
		MasqueradeIPs: net.GatewayMasqueradeIPs, MasqueradeSubnets: net.MasqueradeSubnets,
		JoinIPs: joins, SNATSubnets: net.Subnets, ExternalPortRange: net.externalPortRange(),
	})
	if err != nil {
		return err
	}
	macs, err := GatewayStaticMACBindings(net.Name, n.Name, net.MasqueradeSubnets)
	if err != nil {
		return err
	}
	b.macs = append(b.macs, macs...)
	mgmts := make([]netip.Addr, len(net.Subnets))
	for i, s := range net.Subnets {
		mgmts[i] = net.managementIP(s.Addr().Is6())
	}
	port, err := ManagementPort(net.Name, n.Name, mgmts)
	if err != nil {
		return err
	}
	b.sw.Ports = append(b.sw.Ports, port)
	return nil
}

// localsSupportGatewayMTU says whether the zone's local nodes all take
// gateway_mtu: upstream sets the trtos- port's from its (one) local node.
func localsSupportGatewayMTU(all []l2node, locals []int) bool {
	for _, i := range locals {
		if all[i].NoGatewayMTU {
			return false
		}
	}
	return len(locals) > 0
}

// gatewayRouter is a local node's GR with its rtotr- port and its route back
// to the network through the transit router.
func (net Layer2Network) gatewayRouter(n l2node) rows.Router {
	networks := append(slices.Clone(n.joinIPs), n.grSide...)
	port := nbdb.LogicalRouterPort{
		Name: n.rtotr, MAC: ovnk.MACFromIP(n.joinIPs[0].Addr()).String(), Networks: base.PrefixStrings(networks),
		Peer: base.Ptr(n.trtor),
	}
	if net.GatewayMTU > 0 && !n.NoGatewayMTU {
		port.Options = map[string]string{"gateway_mtu": strconv.Itoa(net.GatewayMTU)}
	}
	// OVN-Kubernetes' gateway controller may own the GR (with its rtoe-
	// port, external switch and default routes): an existing one is
	// referenced and only udnkit's ports, routes and NATs on it are
	// managed; a missing one is created. With --adopt-legacy-layer2 the
	// old topology's GR of a node with a gateway config is udnkit's
	// (Layer2Legacy).
	gr := rows.Router{Shared: true, Row: nbdb.LogicalRouter{
		Name:        n.gr,
		Options:     gatewayRouterOptions(n.Chassis, joinAddrs(n.joinIPs)),
		ExternalIDs: map[string]string{ovnk.ExternalIDNetworkRole: "primary"},
	}, Ports: []nbdb.LogicalRouterPort{port}}
	for _, s := range net.Subnets {
		trSide, _ := ovnk.FamilyOf(n.trSide, s.Addr().Is6())
		gr.Routes = append(gr.Routes, base.StaticRoute(s.String(), trSide.Addr().String(), "", base.Ptr(n.rtotr)))
	}
	return gr
}

// gatewayRouterOptions are a GR's options as upstream's createGWRouter
// sets them for a user-defined network: bound to the node's chassis,
// neighbours resolved statically, load-balanced traffic SNATed to
// lbForceSNATIP (a Layer2 network's GR: its join IPs; a Layer3 network's:
// "router_ip"), MAC bindings aged out after 300 s and no GARP/RARP (its
// external port announces nothing). snat-ct-zone is the default network's
// only.
func gatewayRouterOptions(chassis, lbForceSNATIP string) map[string]string {
	return map[string]string{
		"chassis":                       chassis,
		"always_learn_from_arp_request": "false",
		"dynamic_neigh_routers":         "false",
		"lb_force_snat_ip":              lbForceSNATIP,
		"mac_binding_age_threshold":     "300",
		"disable_garp_rarp":             "true",
	}
}

// localGateway says whether the cluster runs OVN-Kubernetes' local
// gateway mode.
func (net Layer2Network) localGateway() bool { return net.GatewayMode == ovnk.GatewayModeLocal }

// externalPortRange is the SNATs' external_port_range.
func (net Layer2Network) externalPortRange() string { return portRangeOrDefault(net.ExternalPortRange) }

// portRangeOrDefault is an --external-port-range value, upstream's default
// when unset.
func portRangeOrDefault(r string) string {
	if r == "" {
		return ovnk.DefaultExternalPortRange
	}
	return r
}

// validateGateway refuses an unknown gateway mode, an invalid external port
// range and gateway masquerade IPs without a masquerade subnet of their
// family.
func (net Layer2Network) validateGateway() error {
	return validateGatewayFacts(net.GatewayMode, net.externalPortRange(), net.MasqueradeSubnets, net.GatewayMasqueradeIPs)
}

// validateGatewayFacts checks a network's gateway facts (the Layer2 and
// Layer3 topologies share them).
func validateGatewayFacts(mode ovnk.GatewayMode, portRange string, masqSubnets []netip.Prefix, masqIPs []netip.Addr) error {
	if mode != "" {
		if _, err := ovnk.ParseGatewayMode(string(mode)); err != nil {
			return fmt.Errorf("network.gatewayMode: %w", err)
		}
	}
	if err := ovnk.ValidateExternalPortRange(portRange); err != nil {
		return fmt.Errorf("network.externalPortRange: %w", err)
	}
	if err := onePerFamily("network.masqueradeSubnets", masqSubnets); err != nil {
		return err
	}
	for i, m := range masqIPs {
		if s, ok := ovnk.FamilyOf(masqSubnets, m.Is6()); !ok || !s.Contains(m) {
			return fmt.Errorf("network.gatewayMasqueradeIPs[%d]: %s is not inside a masquerade subnet of its family", i, m)
		}
	}
	return nil
}

// joinAddrs are the join IPs' addresses, space-separated (a Layer2 GR's
// lb_force_snat_ip).
func joinAddrs(joinIPs []netip.Prefix) string {
	join := make([]string, len(joinIPs))
	for i, j := range joinIPs {
		join[i] = j.Addr().String()
	}
	return strings.Join(join, " ")
}
