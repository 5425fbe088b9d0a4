package dataplane

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/ovnk"
)

// Topology and piece names in the rows' external_ids.
const (
	TopologyLayer2       = "layer2"
	TopologyLayer3       = "layer3"
	PieceTransitRouter   = "transit-router"
	PieceSubnetPolicies  = "subnet-policies"
	PieceLiveMigration   = "live-migration"
	PieceMultiVTEP       = "multi-vtep"
	PolicyPriorityAllow  = 102  // DefaultNoReroutePriority
	PolicyPriorityNodeIP = 1004 // reroute of traffic to a node IP to the management port
	// PktMarkAllow is the pkt.mark of traffic that is always allowed (priority 102).
	PktMarkAllow = 42
)

// Layer2Network is what the Layer2 transit-router topology needs to know about a network.
type Layer2Network struct {
	// Name is the network's k8s.ovn.org/network value, e.g. "ns1_tenant-blue".
	Name string
	// Subnets are the network's subnets, at most one per family.
	Subnets []netip.Prefix
	// JoinSubnets are the join subnets, one per join family (see
	// ClusterIPv4).
	JoinSubnets []netip.Prefix
	// ClusterIPv4 and ClusterIPv6 are the cluster's IP families (upstream's
	// config.IPv4Mode and IPv6Mode). Every gateway router gets a join IP of
	// each family the cluster or the network has, as upstream's
	// GetGWRouterIPs gives one per cluster family whatever the network's: a
	// single-stack network on a dual-stack cluster has dual-stack join IPs
	// (the rtotr- networks, lb_force_snat_ip, an old-topology node's remote
	// port and routes, the upgrade port's dummy join IPs and the trtos-
	// port's masquerade networks during an upgrade), while its transit
	// addresses and the routes through them keep the network's families.
	ClusterIPv4, ClusterIPv6 bool
	// TransitSubnets default to 100.88.0.0/16 and fd97::/64.
	TransitSubnets []netip.Prefix
	// DefaultGatewayIPs and InfrastructureSubnets (the NetConf's, present with
	// preconfigured-udn-addresses-enable) choose the gateway and management
	// addresses by upstream's rule (ovnk.Layer2GatewayAndManagement).
	DefaultGatewayIPs     []netip.Addr
	InfrastructureSubnets []netip.Prefix
	// AdoptLegacy (the dataplane's --adopt-legacy-layer2) lets the
	// topology take over and remove the old topology's rows of this network
	// that OVN-Kubernetes created (Layer2Legacy names exactly which). Off,
	// udnkit never modifies or deletes a row it did not create: an existing
	// foreign switch or router of the network's names is refused, naming it.
	AdoptLegacy bool
	// SwitchTunnelKey and TransitRouterTunnelKey come from the network's tunnel keys.
	SwitchTunnelKey        int
	TransitRouterTunnelKey int
	// MTU is the network's MTU: the router advertisements' mtu (0: unset).
	MTU int
	// GatewayMTU is the cluster's MTU (--mtu): options:gateway_mtu on the
	// trtos- port and the gateway routers' rtotr- ports, as upstream's
	// syncNodeClusterRouterPort and createGWRouterPort set it (0: unset).
	GatewayMTU int
	// MasqueradeIPs are the management port's masquerade IPs, one per join
	// family (optional): the external IPs of its SNAT, one per family of
	// Subnets, and the trtos- port's networks during an upgrade.
	MasqueradeIPs []netip.Addr
	// MasqueradeBits is the masquerade subnets' prefix length per family
	// (4, 6): while a node runs the old topology the trtos- port also holds
	// the MasqueradeIPs with it, as upstream's ensureUpgradeTopology adds
	// GetUDNMgmtPortMasqueradeIPs, so that only it answers ARP and ND for
	// them. A family without one gets no such network.
	MasqueradeBits map[int]int
	// Services are the UDN-enabled services that exist (optional): their
	// ClusterIPs are routed to the management port (serviceRoutes).
	Services []UDNEnabledService
}

// Layer2Node is one node as the Layer2 topology sees it.
type Layer2Node struct {
	Name string
	// ID is the node's cluster-unique k8s.ovn.org/node-id (≥ 1).
	ID int
	// Local marks nodes of this zone (their gateway routers are programmed here);
	// the others get remote ports.
	Local bool
	// Chassis is the node's OVN chassis (its k8s.ovn.org/node-chassis-id):
	// the requested-chassis of its remote ports and its GR's chassis.
	// Required: a node whose chassis is not known yet is left out, never
	// guessed from its name.
	Chassis string
	// TopologyVersion is the node's k8s.ovn.org/layer2-topology-version.
	TopologyVersion string
	// RunningPods counts the node's running pods on any primary Layer2 network
	// (OKEP-5094: a node moves all its networks at once); a local node that is
	// not yet on version 2.0 switches only when it has none.
	RunningPods int
	// JoinIPs default to the join subnets' address at offset ID, with their prefix length.
	JoinIPs []netip.Prefix
	// TransitPeerSubnets default to the /31 and /127 at offset 2·ID of the transit subnets.
	TransitPeerSubnets []netip.Prefix
	// NodeIPs get a priority-1004 reroute to the management port on local nodes.
	NodeIPs []netip.Addr
	// NoGatewayMTU: the node's k8s.ovn.org/gateway-mtu-support is "false",
	// so its ports get no gateway_mtu.
	NoGatewayMTU bool
	// LegacyTunnelKey is the node's tunnel ID for this network from
	// k8s.ovn.org/udn-layer2-node-gateway-router-lrp-tunnel-ids (its node ID
	// when OVN-Kubernetes' cluster manager published none): the key of
	// its remote stor-<switch>_<node> port while it runs the old topology,
	// and of the local upgrade switch port while another node does.
	LegacyTunnelKey int
}

// Layer2NodeCanSwitch says whether a node may move this network to the
// transit-router topology now: it already has, or it runs no pods on it.
func Layer2NodeCanSwitch(n Layer2Node) bool {
	return n.TopologyVersion == ovnk.Layer2TopologyVersionTransitRouter || n.RunningPods == 0
}

// node is a Layer2Node with every address worked out.
type l2node struct {
	Layer2Node
	gr, trtor, rtotr string
	joinIPs          []netip.Prefix
	trSide, grSide   []netip.Prefix // transit router's and GR's peer addresses
	upgraded         bool
}

// Layer2Topology computes the rows of the OKEP-5094 topology of one network
// for one zone: the transit router with its switch-facing port, the layer2
// switch with its router port, per node the trtor-/rtotr- peer ports (remote
// ports carry requested-chassis), the routes, policies and the management-port
// SNAT, and — while some nodes still run the old topology — the temporary
// upgrade ports and /32 join routes. Invalid input yields an error naming the
// field; nothing is computed then.
func Layer2Topology(net Layer2Network, nodes []Layer2Node) (*Desired, error) {
	if err := net.validate(); err != nil {
		return nil, err
	}
	b := &layer2Build{net: net, names: ovnk.NamesFor(net.Name), copp: DefaultCOPP()}
	for _, step := range []func(*layer2Build, []Layer2Node) error{
		(*layer2Build).resolveNodes,
		(*layer2Build).transitRouterAndSwitch,
		(*layer2Build).nodeRows,
		(*layer2Build).policiesAndSNAT,
		(*layer2Build).upgradePair,
	} {
		if err := step(b, nodes); err != nil {
			return nil, err
		}
	}
	return &Desired{
		Owner: Owner{Network: net.Name, Topology: TopologyLayer2, Piece: PieceTransitRouter, AdoptLegacy: net.AdoptLegacy,
			Legacy: Layer2Legacy(net.Subnets, net.MasqueradeIPs)},
		Routers:  append([]Router{b.tr}, b.grs...),
		Switches: []Switch{b.sw},
	}, nil
}

// layer2Build is one Layer2Topology in the making: its steps run in order,
// each filling what the next reads.
type layer2Build struct {
	net   Layer2Network
	names ovnk.Layer2Names
	// all are the nodes with their addresses worked out, in input order;
	// locals index the zone's own; anyOld says some node is on the old
	// topology.
	all    []l2node
	locals []int
	anyOld bool
	tr     Router
	sw     Switch
	grs    []Router // the local nodes' gateway routers
	// copp is the zone's COPP every router of the topology names.
	copp *Copp
	// servicesRouted says the services are routed already: once per zone,
	// whatever its number of local nodes (one in OVN-Kubernetes'
	// interconnect mode, all of them in a single zone).
	servicesRouted bool
}

// resolveNodes works out every node's addresses and refuses duplicate IDs, a
// local node that may not switch yet, and an upgrade with more than one
// local node.
func (b *layer2Build) resolveNodes(nodes []Layer2Node) error {
	transits := b.net.transits()
	seenID := map[int]string{}
	for i, n := range nodes {
		ln, err := b.net.resolve(b.names, transits, n)
		if err != nil {
			return fmt.Errorf("nodes[%d] (%s): %w", i, n.Name, err)
		}
		if other, dup := seenID[n.ID]; dup {
			return fmt.Errorf("nodes[%d].id: node ID %d is used by %s and %s", i, n.ID, other, n.Name)
		}
		seenID[n.ID] = n.Name
		if n.Local {
			if !Layer2NodeCanSwitch(n) {
				return fmt.Errorf("nodes[%d] (%s): the local node still runs %d pods on network %s with topology version %q; it switches to %s only when it has none",
					i, n.Name, n.RunningPods, b.net.Name, n.TopologyVersion, ovnk.Layer2TopologyVersionTransitRouter)
			}
			ln.upgraded = true
			b.locals = append(b.locals, len(b.all))
		}
		b.anyOld = b.anyOld || !ln.upgraded
		b.all = append(b.all, ln)
	}
	if b.anyOld && len(b.locals) > 1 {
		return fmt.Errorf("nodes: the upgrade topology supports one local node per zone, got %d", len(b.locals))
	}
	return nil
}

// transitRouterAndSwitch is the transit router, the layer2 switch and the
// trtos-/stotr- pair between them that holds the pods' gateway.
func (b *layer2Build) transitRouterAndSwitch([]Layer2Node) error {
	net, names := b.net, b.names
	b.tr = Router{Row: nbdb.LogicalRouter{
		Name:        names.TransitRouter(),
		Options:     map[string]string{"requested-tnl-key": strconv.Itoa(net.TransitRouterTunnelKey)},
		ExternalIDs: map[string]string{ExternalIDClusterRouter: "yes"},
	}, Copp: b.copp}
	b.sw = Switch{Row: nbdb.LogicalSwitch{
		Name:        names.Switch(),
		OtherConfig: map[string]string{"requested-tnl-key": strconv.Itoa(net.SwitchTunnelKey)},
	}}
	gws := net.gateways()
	rtos := nbdb.LogicalRouterPort{
		Name: names.RouterToSwitch(), MAC: ovnk.MACFromIP(gws[0].Addr()).String(), Networks: prefixStrings(gws),
		Options:       map[string]string{"requested-tnl-key": strconv.Itoa(ovnk.TransitRouterToSwitchTunnelKey)},
		Ipv6RaConfigs: net.raConfigs(),
	}
	if net.GatewayMTU > 0 && localsSupportGatewayMTU(b.all, b.locals) {
		rtos.Options["gateway_mtu"] = strconv.Itoa(net.GatewayMTU)
	}
	b.tr.Ports = append(b.tr.Ports, rtos)
	b.tr.GatewayChassis = map[string][]nbdb.GatewayChassis{rtos.Name: b.gatewayChassis()}
	b.sw.Ports = append(b.sw.Ports, nbdb.LogicalSwitchPort{
		Name: names.SwitchToRouter(), Type: "router", Addresses: []string{"router"},
		Options: map[string]string{"router-port": names.RouterToSwitch()},
	})
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

// nodeRows adds each node's rows: an old-topology node's remote switch port,
// a moved node's trtor- port and join-IP routes, and a local node's source
// routes, service routes, node-IP policies and gateway router.
func (b *layer2Build) nodeRows([]Layer2Node) error {
	for _, n := range b.all {
		if !n.upgraded {
			b.oldNode(n)
			continue
		}
		b.transitPort(n)
		if n.Local {
			b.localNode(n)
		}
	}
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
		ExternalIDs: map[string]string{ExternalIDNode: n.Name},
	})
	for _, j := range n.joinIPs {
		b.tr.Routes = append(b.tr.Routes, remoteJoinRoute(n, j.Addr().String(), j.Addr().String()))
	}
}

// remoteJoinRoute is the transit router's route to a remote node's GR join
// IP, labelled with the node as upstream's addTransitRouterRoutes labels it.
func remoteJoinRoute(n l2node, prefix, nexthop string) nbdb.LogicalRouterStaticRoute {
	r := staticRoute(prefix, nexthop, "", nil)
	r.ExternalIDs = map[string]string{ExternalIDNode: n.Name}
	return r
}

// transitPort is a moved node's trtor- port (peered with its GR when local,
// bound to its chassis when remote) and the route to its join IPs.
func (b *layer2Build) transitPort(n l2node) {
	port := nbdb.LogicalRouterPort{
		Name: n.trtor, MAC: ovnk.MACFromIP(n.trSide[0].Addr()).String(), Networks: prefixStrings(n.trSide),
		Options: map[string]string{"requested-tnl-key": strconv.Itoa(ovnk.TransitRouterPortTunnelKey(n.ID))},
	}
	if n.Local {
		port.Peer = ptr(n.rtotr)
	} else {
		port.Options["requested-chassis"] = n.Chassis
		port.ExternalIDs = map[string]string{ExternalIDNode: n.Name}
	}
	b.tr.Ports = append(b.tr.Ports, port)
	for _, j := range n.joinIPs {
		gr, ok := ovnk.FamilyOf(n.grSide, j.Addr().Is6())
		if !ok {
			continue // a join IP of a cluster family the network does not have: no transit route
		}
		if n.Local {
			b.tr.Routes = append(b.tr.Routes, staticRoute(j.Addr().String(), gr.Addr().String(), "", nil))
		} else {
			b.tr.Routes = append(b.tr.Routes, remoteJoinRoute(n, j.Addr().String(), gr.Addr().String()))
		}
	}
}

// localNode routes the network's egress to the local GR, the service IPs to
// the management port, reroutes traffic to the node's IPs to the management
// port and adds the GR.
func (b *layer2Build) localNode(n l2node) {
	net, tr := b.net, &b.tr
	for _, s := range net.Subnets {
		gr, _ := ovnk.FamilyOf(n.grSide, s.Addr().Is6())
		tr.Routes = append(tr.Routes, staticRoute(s.String(), gr.Addr().String(), nbdb.LogicalRouterStaticRoutePolicySrcIP, nil))
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
				b.names.RouterToSwitch(), ipFamily(ip), ip, b.names.Switch()),
			Nexthops: []string{mgmt.String()},
		})
	}
	gr := net.gatewayRouter(n)
	gr.Copp = b.copp
	b.grs = append(b.grs, gr)
}

// policiesAndSNAT are the transit router's subnet-pair policies, the
// allow-mark policy and the management port's SNAT to the masquerade IPs.
// The SNAT applies only to packets sent to the management port (its MAC,
// from the first subnet's management IP, as upstream's
// syncNodeManagementPort derives it), as upstream's buildUDNEgressSNAT
// matches them.
func (b *layer2Build) policiesAndSNAT([]Layer2Node) error {
	tr := &b.tr
	tr.Policies = append(tr.Policies, SubnetPairPolicies(b.net.Subnets)...)
	tr.Policies = append(tr.Policies, nbdb.LogicalRouterPolicy{
		Priority: PolicyPriorityAllow, Action: nbdb.LogicalRouterPolicyActionAllow,
		Match: "pkt.mark == " + strconv.Itoa(PktMarkAllow),
	})
	mgmtMAC := ovnk.MACFromIP(b.net.managementIP(b.net.Subnets[0].Addr().Is6()))
	for _, masq := range b.net.MasqueradeIPs {
		s, ok := ovnk.FamilyOf(b.net.Subnets, masq.Is6())
		if !ok {
			continue // a cluster family the network does not have: no pods to SNAT
		}
		tr.NATs = append(tr.NATs, nbdb.NAT{
			Type: nbdb.NATTypeSNAT, LogicalIP: s.String(), ExternalIP: masq.String(),
			LogicalPort: ptr(b.names.RouterToSwitch()), Options: map[string]string{"stateless": "false"},
			Match: "eth.dst == " + mgmtMAC.String(),
		})
	}
	return nil
}

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
		Networks: prefixStrings(dummies),
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

// masqueradeNetworks are the management-port masquerade IPs with their
// subnets' length, for the families MasqueradeBits has.
func (net Layer2Network) masqueradeNetworks() []string {
	var out []string
	for _, ip := range net.MasqueradeIPs {
		family := 4
		if ip.Is6() {
			family = 6
		}
		if bits, ok := net.MasqueradeBits[family]; ok {
			out = append(out, netip.PrefixFrom(ip, bits).String())
		}
	}
	return out
}

// ExternalIDClusterRouter marks the transit router as upstream's
// topologyfactory marks every cluster router it creates.
const ExternalIDClusterRouter = "k8s-cluster-router"

// ExternalIDNode names the node a remote port or route leads to, as
// upstream labels them (types.NodeExternalID).
const ExternalIDNode = "k8s.ovn.org/node"

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
func (net Layer2Network) gatewayRouter(n l2node) Router {
	networks := append(slices.Clone(n.joinIPs), n.grSide...)
	port := nbdb.LogicalRouterPort{
		Name: n.rtotr, MAC: ovnk.MACFromIP(n.joinIPs[0].Addr()).String(), Networks: prefixStrings(networks),
		Peer: ptr(n.trtor),
	}
	if net.GatewayMTU > 0 && !n.NoGatewayMTU {
		port.Options = map[string]string{"gateway_mtu": strconv.Itoa(net.GatewayMTU)}
	}
	// OVN-Kubernetes' gateway controller owns the GR (with its rtoe- port,
	// external switch and default routes): an existing one is referenced and
	// only the rtotr- port and the route back to the network are udnkit's; a
	// missing one (no OVN-Kubernetes, as in `make run`) is created.
	gr := Router{Shared: true, Row: nbdb.LogicalRouter{
		Name:    n.gr,
		Options: gatewayRouterOptions(n),
	}, Ports: []nbdb.LogicalRouterPort{port}}
	for _, s := range net.Subnets {
		trSide, _ := ovnk.FamilyOf(n.trSide, s.Addr().Is6())
		gr.Routes = append(gr.Routes, staticRoute(s.String(), trSide.Addr().String(), "", ptr(n.rtotr)))
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

// transits are the network's transit subnets or OVN-Kubernetes' defaults.
func (net Layer2Network) transits() []netip.Prefix {
	if len(net.TransitSubnets) == 0 {
		return []netip.Prefix{ovnk.DefaultTransitSubnetV4, ovnk.DefaultTransitSubnetV6}
	}
	return net.TransitSubnets
}

func (net Layer2Network) validate() error {
	if net.Name == "" {
		return fmt.Errorf("network.name: must not be empty")
	}
	if len(net.Subnets) == 0 || len(net.Subnets) > 2 {
		return fmt.Errorf("network.subnets: a primary Layer2 network needs one subnet per IP family (1 or 2), got %d", len(net.Subnets))
	}
	if err := onePerFamily("network.subnets", net.Subnets); err != nil {
		return err
	}
	if err := onePerFamily("network.joinSubnets", net.JoinSubnets); err != nil {
		return err
	}
	for _, s := range net.Subnets {
		if _, ok := ovnk.FamilyOf(net.JoinSubnets, s.Addr().Is6()); !ok {
			return fmt.Errorf("network.joinSubnets: no join subnet for the %s family of subnet %s", ipFamily(s.Addr()), s)
		}
	}
	for _, v6 := range net.JoinFamilies() {
		if _, ok := ovnk.FamilyOf(net.JoinSubnets, v6); !ok {
			return fmt.Errorf("network.joinSubnets: no join subnet for the cluster's %s family (every gateway router has a join IP of each cluster family)", familyOf(v6))
		}
	}
	if net.SwitchTunnelKey <= 0 || net.TransitRouterTunnelKey <= 0 {
		return fmt.Errorf("network.tunnelKeys: the switch and transit router tunnel keys must be positive, got %d and %d",
			net.SwitchTunnelKey, net.TransitRouterTunnelKey)
	}
	for i, gw := range net.DefaultGatewayIPs {
		s, ok := ovnk.FamilyOf(net.Subnets, gw.Is6())
		if !ok || !s.Contains(gw) {
			return fmt.Errorf("network.defaultGatewayIPs[%d]: %s is not inside a subnet of its family", i, gw)
		}
	}
	if err := net.validateServices(); err != nil {
		return err
	}
	for i, m := range net.MasqueradeIPs {
		if !slices.Contains(net.JoinFamilies(), m.Is6()) {
			return fmt.Errorf("network.masqueradeIPs[%d]: %s is of a family neither the network's subnets nor the cluster have", i, m)
		}
	}
	return nil
}

func onePerFamily(field string, ps []netip.Prefix) error {
	seen := map[bool]bool{}
	for i, p := range ps {
		if !p.IsValid() {
			return fmt.Errorf("%s[%d]: not a valid CIDR", field, i)
		}
		if seen[p.Addr().Is6()] {
			return fmt.Errorf("%s[%d]: %s is a second %s subnet; one per family is allowed", field, i, p, ipFamily(p.Addr()))
		}
		seen[p.Addr().Is6()] = true
	}
	return nil
}

// gateways returns the switch-facing gateway addresses with the subnets'
// prefix lengths, IPv4 first, by upstream's rule (the one the address
// allocator and the pod webhook use).
func (net Layer2Network) gateways() []netip.Prefix {
	subnets := sortedFamilies(net.Subnets)
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

// managementIP is the management port's address of one family (invalid
// when the network has no subnet of it), by upstream's rule.
func (net Layer2Network) managementIP(v6 bool) netip.Addr {
	s, ok := ovnk.FamilyOf(net.Subnets, v6)
	if !ok {
		return netip.Addr{}
	}
	_, mgmts, err := ovnk.Layer2GatewayAndManagement([]netip.Prefix{s}, net.InfrastructureSubnets, net.DefaultGatewayIPs)
	if err != nil {
		return netip.Addr{}
	}
	return mgmts[0]
}

func (net Layer2Network) resolve(names ovnk.Layer2Names, transits []netip.Prefix, n Layer2Node) (l2node, error) {
	if n.Name == "" {
		return l2node{}, fmt.Errorf("name: must not be empty")
	}
	if n.ID < 1 {
		return l2node{}, fmt.Errorf("id: node ID must be at least 1, got %d", n.ID)
	}
	ln := l2node{Layer2Node: n, gr: names.GatewayRouter(n.Name), trtor: names.TransitToGR(n.Name), rtotr: names.GRToTransit(n.Name)}
	if n.Chassis == "" {
		return l2node{}, fmt.Errorf("chassis: must name the node's OVN chassis (its %s)", ovnk.AnnotationNodeChassisID)
	}
	ln.upgraded = n.TopologyVersion == ovnk.Layer2TopologyVersionTransitRouter
	for _, v6 := range net.JoinFamilies() {
		join, _ := ovnk.FamilyOf(net.JoinSubnets, v6)
		j, ok := ovnk.FamilyOf(n.JoinIPs, v6)
		if !ok {
			a, err := ovnk.AddrAt(join, uint64(n.ID))
			if err != nil {
				return l2node{}, fmt.Errorf("joinIPs: %w", err)
			}
			j = netip.PrefixFrom(a, join.Bits())
		} else if !join.Contains(j.Addr()) {
			return l2node{}, fmt.Errorf("joinIPs: %s is outside join subnet %s", j, join)
		}
		ln.joinIPs = append(ln.joinIPs, j)
	}
	for _, s := range sortedFamilies(net.Subnets) {
		v6 := s.Addr().Is6()
		peer, ok := ovnk.FamilyOf(n.TransitPeerSubnets, v6)
		if !ok {
			transit, found := ovnk.FamilyOf(transits, v6)
			if !found {
				return l2node{}, fmt.Errorf("transitSubnets: no %s transit subnet", ipFamily(s.Addr()))
			}
			p, err := ovnk.TransitPeerSubnet(transit, n.ID)
			if err != nil {
				return l2node{}, fmt.Errorf("transitPeerSubnets: %w", err)
			}
			peer = p
		} else if want := peer.Addr().BitLen() - 1; peer.Bits() != want {
			return l2node{}, fmt.Errorf("transitPeerSubnets: %s must be a /%d", peer, want)
		}
		t, g := ovnk.TransitPeerIPs(peer)
		ln.trSide = append(ln.trSide, t)
		ln.grSide = append(ln.grSide, g)
	}
	if !ln.upgraded && !n.Local && n.LegacyTunnelKey <= 0 {
		return l2node{}, fmt.Errorf("legacyTunnelKey: a node on the old topology needs its tunnel ID for the network (%s)", ovnk.AnnotationLayer2GRLRPTunnelIDs)
	}
	return ln, nil
}

// JoinFamilies are the families of the gateway routers' join IPs, IPv4
// first (true: IPv6): the cluster's and the network's.
func (net Layer2Network) JoinFamilies() []bool {
	var v4, v6 bool
	for _, s := range net.Subnets {
		v4, v6 = v4 || s.Addr().Is4(), v6 || s.Addr().Is6()
	}
	var out []bool
	if v4 || net.ClusterIPv4 {
		out = append(out, false)
	}
	if v6 || net.ClusterIPv6 {
		out = append(out, true)
	}
	return out
}

// sortedFamilies returns the prefixes IPv4 first.
func sortedFamilies(ps []netip.Prefix) []netip.Prefix {
	out := slices.Clone(ps)
	slices.SortStableFunc(out, func(a, b netip.Prefix) int {
		if a.Addr().Is4() == b.Addr().Is4() {
			return 0
		}
		if a.Addr().Is4() {
			return -1
		}
		return 1
	})
	return out
}

func prefixStrings(ps []netip.Prefix) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// macAndIPs is a remote LSP address: the GR MAC and its join IPs.
func macAndIPs(join []netip.Prefix) string {
	parts := []string{ovnk.MACFromIP(join[0].Addr()).String()}
	for _, j := range join {
		parts = append(parts, j.String())
	}
	return strings.Join(parts, " ")
}

// staticRoute is a route; policy "" leaves the column empty, which OVN
// reads as dst-ip, where upstream leaves it empty.
func staticRoute(prefix, nexthop, policy string, out *string) nbdb.LogicalRouterStaticRoute {
	r := nbdb.LogicalRouterStaticRoute{IPPrefix: prefix, Nexthop: nexthop, OutputPort: out}
	if policy != "" {
		r.Policy = ptr(policy)
	}
	return r
}
