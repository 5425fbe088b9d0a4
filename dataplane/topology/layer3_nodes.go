package topology

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// Layer3UsableNodes splits nodes into those Layer3Topology can program and
// those it cannot, so one node without its annotations never stops the
// others: a node without a node ID, its chassis or its host subnets of the
// network (its ovnkube-node or cluster manager has not published them
// yet), one whose ID an older node already has (callers list nodes oldest
// first), and one whose addresses do not fit the network's join or transit
// subnets. Upstream's ovnkube-controller leaves such a node out as well
// (addNode, syncNodeClusterRouterPort and AddRemoteZoneNode fail or are
// suppressed until it has them). An invalid network keeps every node:
// Layer3Topology reports it.
func Layer3UsableNodes(net Layer3Network, nodes []Layer3Node) (kept []Layer3Node, skipped []SkippedNode) {
	if net.validate() != nil {
		return nodes, nil
	}
	seen := map[int]string{}
	for _, n := range nodes {
		var reason string
		var err error
		switch other, dup := seen[n.ID]; {
		case n.ID < ovnk.FirstNodeID:
			reason, err = SkipNoNodeID, fmt.Errorf("node %s has no %s yet", n.Name, ovnk.AnnotationNodeID)
		case n.Chassis == "":
			reason, err = SkipNoChassis, fmt.Errorf("node %s has no %s yet", n.Name, ovnk.AnnotationNodeChassisID)
		case len(n.HostSubnets) == 0:
			reason, err = SkipNoHostSubnets, fmt.Errorf("node %s has no host subnet of the network in %s yet", n.Name, ovnk.AnnotationNodeSubnets)
		case dup:
			reason, err = SkipDuplicateNodeID, fmt.Errorf("node %s: node ID %d is also older node %s's", n.Name, n.ID, other)
		default:
			if _, rerr := net.resolveNode(n); rerr != nil {
				reason, err = SkipNodeOutOfRange, fmt.Errorf("node %s: %w", n.Name, rerr)
			}
		}
		if err != nil {
			skipped = append(skipped, SkippedNode{n.Name, reason, fmt.Errorf("%w; left out of network %s until it is fixed", err, net.Name)})
			continue
		}
		seen[n.ID] = n.Name
		kept = append(kept, n)
	}
	return kept, skipped
}

// Reasons a Layer3 node is left out (SkippedNode.Reason), beside those of
// Layer2UsableNodes.
const (
	// SkipNoNodeID: the node has no k8s.ovn.org/node-id yet.
	SkipNoNodeID = "NoNodeID"
	// SkipNoHostSubnets: k8s.ovn.org/node-subnets has no subnet of the
	// network for the node yet.
	SkipNoHostSubnets = "NoHostSubnets"
)

// resolveNode works out a node's addresses: its transit switch port
// addresses (given or at offset ID of the transit subnets), one per family
// of its host subnets or of the transit subnets, and its gateway router's
// join IPs.
func (net Layer3Network) resolveNode(n Layer3Node) (Layer3LocalNode, error) {
	ln := Layer3LocalNode{Layer3Node: n, Network: net.Name, Subnets: net.Subnets,
		GatewayRouter:        ovnk.NamesFor(net.Name).GatewayRouter(n.Name),
		GatewayMasqueradeIPs: net.GatewayMasqueradeIPs, ManagementMasqueradeIPs: net.ManagementMasqueradeIPs}
	if n.Name == "" {
		return ln, fmt.Errorf("name: must not be empty")
	}
	if err := onePerFamily("hostSubnets", n.HostSubnets); err != nil {
		return ln, err
	}
	ln.HostSubnets = base.SortedFamilies(n.HostSubnets)
	for _, s := range ln.HostSubnets {
		ln.Gateways = append(ln.Gateways, hostAddr(s, 1))
		ln.Managements = append(ln.Managements, hostAddr(s, 2))
	}
	if len(n.TransitIPs) == 0 {
		for _, t := range base.SortedFamilies(net.TransitSubnets) {
			a, err := ovnk.TransitSwitchPortAddr(t, n.ID)
			if err != nil {
				return ln, fmt.Errorf("transitIPs: %w", err)
			}
			ln.TransitIPs = append(ln.TransitIPs, a)
		}
	} else if err := onePerFamily("transitIPs", n.TransitIPs); err != nil {
		return ln, err
	} else {
		ln.TransitIPs = base.SortedFamilies(n.TransitIPs)
	}
	for _, s := range ln.HostSubnets {
		if _, ok := ovnk.FamilyOf(ln.TransitIPs, s.Addr().Is6()); !ok {
			return ln, fmt.Errorf("transitIPs: no %s transit address for host subnet %s", base.IPFamily(s.Addr()), s)
		}
	}
	join, err := net.joinIPs(n.ID)
	if err != nil {
		return ln, err
	}
	ln.JoinIPs = join
	return ln, nil
}

// node adds one node's rows: a local node's switch, router ports, gateway
// router and its routes, NATs and policies; a remote node's transit port and
// routes.
func (b *layer3Build) node(n Layer3Node) error {
	ln, err := b.net.resolveNode(n)
	if err != nil {
		return err
	}
	if !n.Local {
		b.remoteNode(ln)
		return nil
	}
	if err := b.nodeSwitch(ln); err != nil {
		return err
	}
	b.transitRouterPort(ln)
	b.managementSNAT(ln)
	if n.NoGateway {
		return nil
	}
	return b.gateway(ln)
}

// nodeSwitch adds a local node's switch (upstream's createNodeLogicalSwitch)
// with its router port and management port, the cluster router's rtos- port
// bound to the node's chassis (syncNodeClusterRouterPort).
func (b *layer3Build) nodeSwitch(n Layer3LocalNode) error {
	// other_config as upstream leaves it once the management port exists
	// (libovsdb/util: UpdateNodeSwitchExcludeIPs drops exclude_ips then);
	// multicast is off (no mcast_* keys).
	sw := rows.Switch{Row: nbdb.LogicalSwitch{Name: b.names.NodeSwitch(n.Name), ExternalIDs: primaryRole(), OtherConfig: map[string]string{}},
		LoadBalancerGroups: switchLBGroups(b.names)}
	for _, s := range n.HostSubnets {
		if s.Addr().Is4() {
			sw.Row.OtherConfig["subnet"] = s.Masked().String()
		} else {
			sw.Row.OtherConfig["ipv6_prefix"] = s.Masked().Addr().String()
		}
	}
	rtos := b.names.RouterToNodeSwitch(n.Name)
	sw.Ports = append(sw.Ports, nbdb.LogicalSwitchPort{
		Name: b.names.NodeSwitchToRouter(n.Name), Type: "router", Addresses: []string{"router"},
		Options: map[string]string{"router-port": rtos},
	})
	port := nbdb.LogicalRouterPort{Name: rtos, MAC: ovnk.MACFromIP(n.Gateways[0].Addr()).String(), Networks: base.PrefixStrings(n.Gateways)}
	if b.net.GatewayMTU > 0 && !n.NoGatewayMTU {
		port.Options = map[string]string{"gateway_mtu": strconv.Itoa(b.net.GatewayMTU)}
	}
	b.cr.Ports = append(b.cr.Ports, port)
	if b.cr.GatewayChassis == nil {
		b.cr.GatewayChassis = map[string][]nbdb.GatewayChassis{}
	}
	b.cr.GatewayChassis[rtos] = []nbdb.GatewayChassis{{Name: ovnk.GatewayChassisName(rtos, n.Chassis), ChassisName: n.Chassis, Priority: 1}}
	if err := b.managementPort(n, &sw); err != nil {
		return err
	}
	b.switches = append(b.switches, sw)
	return nil
}

// transitRouterPort adds a local node's rtots- port and its tstor- router
// port on the transit switch (zone_ic_handler.go:
// createLocalZoneNodeResources); a multi-VTEP node's are the multi-VTEP
// piece's.
func (b *layer3Build) transitRouterPort(n Layer3LocalNode) {
	if n.MultiVTEP {
		return
	}
	rtots := b.names.RouterToTransitSwitch(n.Name)
	b.cr.Ports = append(b.cr.Ports, nbdb.LogicalRouterPort{
		Name: rtots, MAC: ovnk.MACFromIP(n.TransitIPs[0].Addr()).String(), Networks: base.PrefixStrings(n.TransitIPs),
		Options: map[string]string{"mcast_flood": "true"},
	})
	b.ts.Ports = append(b.ts.Ports, nbdb.LogicalSwitchPort{
		Name: b.names.TransitSwitchToRouter(n.Name), Type: "router", Addresses: []string{"router"},
		Options:     map[string]string{"router-port": rtots, "requested-tnl-key": strconv.Itoa(n.ID)},
		ExternalIDs: map[string]string{"node": n.Name},
	})
}

// remoteNode adds another zone's node: its remote port on the transit
// switch bound to its chassis, and routes to its host subnets and its
// gateway router's join IPs through it (zone_ic_handler.go:
// createRemoteZoneNodeResources, addRemoteNodeStaticRoutes); a multi-VTEP
// node's are the multi-VTEP piece's.
func (b *layer3Build) remoteNode(n Layer3LocalNode) {
	if n.MultiVTEP {
		return
	}
	addrs := append([]string{ovnk.MACFromIP(n.TransitIPs[0].Addr()).String()}, base.PrefixStrings(n.TransitIPs)...)
	b.ts.Ports = append(b.ts.Ports, nbdb.LogicalSwitchPort{
		Name: b.names.TransitSwitchToRouter(n.Name), Type: "remote", Addresses: []string{strings.Join(addrs, " ")},
		Options:     map[string]string{"requested-tnl-key": strconv.Itoa(n.ID), "requested-chassis": n.Chassis},
		ExternalIDs: map[string]string{"node": n.Name},
	})
	route := func(prefix string, v6 bool) {
		hop, ok := ovnk.FamilyOf(n.TransitIPs, v6)
		if !ok {
			return
		}
		r := base.StaticRoute(prefix, hop.Addr().String(), "", nil)
		r.ExternalIDs = map[string]string{ovnk.ExternalIDInterconnectNode: n.Name}
		b.cr.Routes = append(b.cr.Routes, r)
	}
	for _, s := range n.HostSubnets {
		route(s.Masked().String(), s.Addr().Is6())
	}
	for _, j := range n.JoinIPs {
		route(netip.PrefixFrom(j.Addr(), j.Addr().BitLen()).String(), j.Addr().Is6())
	}
}

// managementSNAT SNATs what a local node's pods send to its management port
// to the network's management masquerade IP of each host subnet's family
// (base_network_controller_user_defined.go: buildUDNEgressSNAT via
// addOrUpdateUDNNodeSubnetEgressSNAT), matched on the management port's MAC
// (from the first host subnet's management IP).
func (b *layer3Build) managementSNAT(n Layer3LocalNode) {
	mac := ovnk.MACFromIP(n.Managements[0].Addr())
	for _, s := range n.HostSubnets {
		masq, ok := ovnk.AddrOfFamily(b.net.ManagementMasqueradeIPs, s.Addr().Is6())
		if !ok {
			continue
		}
		b.cr.NATs = append(b.cr.NATs, nbdb.NAT{
			Type: nbdb.NATTypeSNAT, LogicalIP: s.Masked().String(), ExternalIP: masq.String(),
			LogicalPort: base.Ptr(b.names.RouterToNodeSwitch(n.Name)), Options: map[string]string{"stateless": "false"},
			Match: "eth.dst == " + mac.String(), ExternalPortRange: b.net.externalPortRange(),
		})
	}
}

// managementIP is a local node's management address of a family (invalid
// without a host subnet of it).
func (n Layer3LocalNode) managementIP(v6 bool) netip.Addr {
	m, ok := ovnk.FamilyOf(n.Managements, v6)
	if !ok {
		return netip.Addr{}
	}
	return m.Addr()
}

// managementPort adds a local node's management port k8s-<prefix><node>
// to its switch, whether or not the node has a gateway (upstream's
// syncNodeManagementPort runs apart from the gateway's sync), and in local
// gateway mode routes what its host subnets send out through it.
func (b *layer3Build) managementPort(n Layer3LocalNode, sw *rows.Switch) error {
	ips := make([]netip.Addr, len(n.Managements))
	for i, m := range n.Managements {
		ips[i] = m.Addr()
	}
	port, err := ManagementPort(b.net.Name, n.Name, ips)
	if err != nil {
		return err
	}
	sw.Ports = append(sw.Ports, port)
	if b.net.localGateway() {
		for _, s := range n.HostSubnets {
			b.cr.Routes = append(b.cr.Routes, base.StaticRoute(s.Masked().String(), n.managementIP(s.Addr().Is6()).String(),
				nbdb.LogicalRouterStaticRoutePolicySrcIP, nil))
		}
	}
	return nil
}
