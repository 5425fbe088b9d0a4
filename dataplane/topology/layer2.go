package topology

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
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
	// MTU is the network's MTU: the router advertisements' mtu (0: unset);
	// the NAD's mtu, else the cluster's --mtu (zone.ClusterFacts).
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
	// ClusterIPs are routed to the management port (serviceRoutes), in
	// shared gateway mode only.
	Services []UDNEnabledService
	// GatewayMode is the cluster's --gateway-mode ("": shared). In local
	// mode the pods' source routes lead to the management port instead of
	// the gateway router, the transit router commits all traffic
	// (ct-commit-all) and the UDN-enabled services get no routes, as
	// upstream's syncNodeManagementPort, topologyfactory and services
	// controller do.
	GatewayMode ovnk.GatewayMode
	// ExternalPortRange is every SNAT's external_port_range
	// (--external-port-range; "": ovnk.DefaultExternalPortRange).
	ExternalPortRange string
	// GatewayMasqueradeIPs are the gateway routers' masquerade IPs, one per
	// join family (upstream's GetUDNGatewayMasqueradeIPs), and
	// MasqueradeSubnets the cluster's masquerade subnets: a local node with
	// a gateway config gets its external side from them
	// (AddGatewayExternal).
	GatewayMasqueradeIPs []netip.Addr
	MasqueradeSubnets    []netip.Prefix
	// EgressIP is the cluster's --enable-egress-ip: the transit router then
	// gets EgressIP's priority-102 no-reroute policies (the subnet pairs
	// and the reply-traffic mark), which upstream writes only with EgressIP
	// (egressip.go ensureRouterPoliciesForNetwork).
	EgressIP bool
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
	// Gateway is the node's k8s.ovn.org/l3-gateway-config (nil: none yet,
	// or malformed). A local node with one gets its gateway router's
	// external side and its management port; without one, neither: its
	// ovnkube-node has not set the node's gateway and management netdev up.
	Gateway *ovnk.L3GatewayConfig
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
func Layer2Topology(net Layer2Network, nodes []Layer2Node) (*rows.Desired, error) {
	if err := net.validate(); err != nil {
		return nil, err
	}
	b := &layer2Build{net: net, names: ovnk.NamesFor(net.Name), copp: base.DefaultCOPP()}
	for _, step := range []func(*layer2Build, []Layer2Node) error{
		(*layer2Build).resolveNodes,
		(*layer2Build).transitRouter,
		(*layer2Build).transitSwitch,
		(*layer2Build).nodeRows,
		(*layer2Build).policies,
		(*layer2Build).snat,
		(*layer2Build).upgradePair,
	} {
		if err := step(b, nodes); err != nil {
			return nil, err
		}
	}
	return &rows.Desired{
		Owner: rows.Owner{Network: net.Name, Topology: base.TopologyLayer2, Piece: base.PieceTransitRouter, AdoptLegacy: net.AdoptLegacy,
			Legacy: Layer2Legacy(net, b.legacyGateways()...)},
		Routers:            append([]rows.Router{b.tr}, b.grs...),
		Switches:           append([]rows.Switch{b.sw}, b.exts...),
		StaticMACBindings:  b.macs,
		LoadBalancerGroups: loadBalancerGroups(b.names),
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
	tr     rows.Router
	sw     rows.Switch
	grs    []rows.Router           // the local nodes' gateway routers
	exts   []rows.Switch           // their external switches
	macs   []nbdb.StaticMACBinding // and their rtoe- ports' static MAC bindings
	// copp is the zone's COPP every router of the topology names.
	copp *rows.Copp
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
			if err := b.localNode(n); err != nil {
				return err
			}
		}
	}
	return nil
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
			return fmt.Errorf("network.joinSubnets: no join subnet for the %s family of subnet %s", base.IPFamily(s.Addr()), s)
		}
	}
	for _, v6 := range net.JoinFamilies() {
		if _, ok := ovnk.FamilyOf(net.JoinSubnets, v6); !ok {
			return fmt.Errorf("network.joinSubnets: no join subnet for the cluster's %s family (every gateway router has a join IP of each cluster family)", base.FamilyOf(v6))
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
	if err := net.validateGateway(); err != nil {
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
			return fmt.Errorf("%s[%d]: %s is a second %s subnet; one per family is allowed", field, i, p, base.IPFamily(p.Addr()))
		}
		seen[p.Addr().Is6()] = true
	}
	return nil
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
	for _, s := range base.SortedFamilies(net.Subnets) {
		v6 := s.Addr().Is6()
		peer, ok := ovnk.FamilyOf(n.TransitPeerSubnets, v6)
		if !ok {
			transit, found := ovnk.FamilyOf(transits, v6)
			if !found {
				return l2node{}, fmt.Errorf("transitSubnets: no %s transit subnet", base.IPFamily(s.Addr()))
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
