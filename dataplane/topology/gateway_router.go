package topology

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// localNode routes the network's egress to the local GR, the service IPs to
// the management port, reroutes traffic to the node's IPs to the management
// port and adds the GR.
func (b *layer2Build) localNode(n l2node) {
	net, tr := b.net, &b.tr
	for _, s := range net.Subnets {
		gr, _ := ovnk.FamilyOf(n.grSide, s.Addr().Is6())
		tr.Routes = append(tr.Routes, base.StaticRoute(s.String(), gr.Addr().String(), nbdb.LogicalRouterStaticRoutePolicySrcIP, nil))
	}
	if !b.servicesRouted {
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
	b.grs = append(b.grs, gr)
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
	// OVN-Kubernetes' gateway controller owns the GR (with its rtoe- port,
	// external switch and default routes): an existing one is referenced and
	// only the rtotr- port and the route back to the network are udnkit's; a
	// missing one (no OVN-Kubernetes, as in `make run`) is created.
	gr := rows.Router{Shared: true, Row: nbdb.LogicalRouter{
		Name:    n.gr,
		Options: gatewayRouterOptions(n),
	}, Ports: []nbdb.LogicalRouterPort{port}}
	for _, s := range net.Subnets {
		trSide, _ := ovnk.FamilyOf(n.trSide, s.Addr().Is6())
		gr.Routes = append(gr.Routes, base.StaticRoute(s.String(), trSide.Addr().String(), "", base.Ptr(n.rtotr)))
	}
	return gr
}

// gatewayRouterOptions are a GR's options as upstream's createGWRouter
// sets them for a Layer2 user-defined network: bound to the node's chassis,
// neighbours resolved statically, load-balanced traffic SNATed to the GR's
// join IPs, MAC bindings aged out after 300 s and no GARP/RARP (its external
// port announces nothing). snat-ct-zone is the default network's only.
func gatewayRouterOptions(n l2node) map[string]string {
	join := make([]string, len(n.joinIPs))
	for i, j := range n.joinIPs {
		join[i] = j.Addr().String()
	}
	return map[string]string{
		"chassis":                       n.Chassis,
		"always_learn_from_arp_request": "false",
		"dynamic_neigh_routers":         "false",
		"lb_force_snat_ip":              strings.Join(join, " "),
		"mac_binding_age_threshold":     "300",
		"disable_garp_rarp":             "true",
	}
}
