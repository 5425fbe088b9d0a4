package topology

import (
	"fmt"
	"net/netip"
	"strconv"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// Layer3Network is what the Layer3 topology needs to know about a Primary
// Layer3 network.
type Layer3Network struct {
	// Name is the network's k8s.ovn.org/network value, e.g. "tenant-green_green".
	Name string
	// Subnets are the network's cluster subnets (the NAD's subnets without
	// their host subnet length).
	Subnets []netip.Prefix
	// JoinSubnets are the network's join subnets, one per join family.
	JoinSubnets []netip.Prefix
	// ClusterIPv4 and ClusterIPv6 are the cluster's IP families: the
	// cluster router and every gateway router get a join IP of each, as
	// upstream's getOVNClusterRouterPortToJoinSwitchIfAddrs and
	// GetGWRouterIPs follow config.IPv4Mode and IPv6Mode.
	ClusterIPv4, ClusterIPv6 bool
	// TransitSubnets are the cluster's transit subnets (--transit-subnets):
	// a node without k8s.ovn.org/node-transit-switch-port-ifaddr gets the
	// address its cluster manager would allocate in them.
	TransitSubnets []netip.Prefix
	// TransitSwitchTunnelKey is the transit switch's tunnel key
	// (ovnk.LegacyTransitSwitchKey of the network ID).
	TransitSwitchTunnelKey int
	// GatewayMTU is the cluster's MTU (--mtu): options:gateway_mtu on the
	// rtos- and the gateway routers' rtoj- ports (0: unset).
	GatewayMTU int
	// GatewayMasqueradeIPs and ManagementMasqueradeIPs are the network's
	// masquerade IPs, at most one per family (ovnk.UDNMasqueradeIPs): a
	// local node's 1004 policies reroute traffic to the gateway router's to
	// the management port; the management port's are the external IPs of
	// its SNAT on the cluster router.
	GatewayMasqueradeIPs, ManagementMasqueradeIPs []netip.Addr
	// Services are the UDN-enabled services that exist: their ClusterIPs
	// are routed to a local node's management port.
	Services []UDNEnabledService
	// EgressIP is the cluster's --enable-egress-ip: a local node's gateway
	// router then also gets EgressIP's catch-all src-ip route of each
	// cluster subnet (libovsdb/util/router.go: CreateDefaultRouteToExternal).
	EgressIP bool
	// GatewayMode is the cluster's --gateway-mode ("": shared). In local
	// mode a local node's host subnets leave through its management port
	// (src-ip routes to it, no UDN-enabled service routes) and the cluster
	// router commits all traffic to conntrack (ct-commit-all).
	GatewayMode ovnk.GatewayMode
	// ExternalPortRange is every SNAT's external_port_range
	// (--external-port-range; "": ovnk.DefaultExternalPortRange).
	ExternalPortRange string
	// MasqueradeSubnets are the cluster's masquerade subnets, one per
	// family: a gateway router's routes to them and its static MAC
	// bindings (GatewayExternal.MasqueradeSubnets).
	MasqueradeSubnets []netip.Prefix
}

// Layer3Node is one node as the Layer3 topology sees it.
type Layer3Node struct {
	Name string
	// ID is the node's k8s.ovn.org/node-id (≥ 2): its transit switch port's
	// tunnel key and the offset of its join and transit addresses.
	ID int
	// Local marks the nodes of this zone.
	Local bool
	// Chassis is the node's k8s.ovn.org/node-chassis-id. Required.
	Chassis string
	// HostSubnets are the node's subnets of this network
	// (k8s.ovn.org/node-subnets). Required.
	HostSubnets []netip.Prefix
	// TransitIPs are its k8s.ovn.org/node-transit-switch-port-ifaddr
	// (default: the address at offset ID of each transit subnet).
	TransitIPs []netip.Prefix
	// Gateway is the node's k8s.ovn.org/l3-gateway-config (nil: none): a
	// local node's gateway router gets its external side from it, and the
	// first address of each family is a destination of its 1004 policies
	// besides the gateway router's masquerade IPs.
	Gateway *ovnk.L3GatewayConfig
	// NoGateway: the node has no gateway (no l3-gateway-config, or its mode
	// is disabled): no gateway router, join port, source routes nor 1004
	// policies of it, as upstream's nodeGatewayConfig fails without one.
	NoGateway bool
	// NoGatewayMTU: the node's k8s.ovn.org/gateway-mtu-support is "false".
	NoGatewayMTU bool
	// MultiVTEP: the node has several encap IPs; its transit switch ports
	// and the routes through them are the multi-VTEP piece's.
	MultiVTEP bool
}

// Layer3LocalNode is a node with its addresses worked out.
type Layer3LocalNode struct {
	Layer3Node
	// Network is the network's name, Subnets its cluster subnets.
	Network string
	Subnets []netip.Prefix
	// Gateways and Managements are the node's gateway (.1) and management
	// (.2) addresses of each host subnet, with the host subnet's length.
	Gateways, Managements []netip.Prefix
	// JoinIPs are the gateway router's join addresses with the join
	// subnets' length; GatewayRouter its name.
	JoinIPs       []netip.Prefix
	GatewayRouter string
	// GatewayMasqueradeIPs and ManagementMasqueradeIPs are the network's.
	GatewayMasqueradeIPs, ManagementMasqueradeIPs []netip.Addr
}

// Layer3Topology computes the rows upstream's ovnkube-controller writes for
// a Primary Layer3 network in one zone (layer3_user_defined_network_controller.go):
// the cluster router with its join port, the join switch, the transit
// switch with a router port per local node and a remote port per other
// node, per local node its switch with the router port, management port and
// Gateway_Chassis, its rtots- port, its gateway router (join side, external
// side from its l3-gateway-config, static MAC bindings), routes,
// management-port SNAT and 1004 policies, and the routes to every remote
// node's subnets and gateway router. nodes must be Layer3UsableNodes'; invalid input yields an
// error naming the field. The priority-102 subnet policies are
// Layer3SubnetPoliciesForm's piece.
func Layer3Topology(net Layer3Network, nodes []Layer3Node) (*rows.Desired, error) {
	if err := net.validate(); err != nil {
		return nil, err
	}
	b := &layer3Build{net: net, names: ovnk.NamesFor(net.Name), copp: base.DefaultCOPP()}
	b.cr = rows.Router{Row: base.Layer3ClusterRouter(net.Name), Shared: true, Copp: b.copp}
	b.ts = rows.Switch{Row: nbdb.LogicalSwitch{Name: b.names.TransitSwitch(), ExternalIDs: primaryRole(), OtherConfig: base.TransitSwitchOtherConfig(b.names.TransitSwitch(), net.TransitSwitchTunnelKey)},
		Shared: true}
	b.join = rows.Switch{Row: nbdb.LogicalSwitch{Name: b.names.JoinSwitch()}}
	b.joinPort(b.cr.Row.Name, b.clusterJoinIPs(), nil, false)
	b.switches = []rows.Switch{b.join, b.ts}
	for i, n := range nodes {
		if err := b.node(n); err != nil {
			return nil, fmt.Errorf("nodes[%d] (%s): %w", i, n.Name, err)
		}
	}
	b.switches[0], b.switches[1] = b.join, b.ts
	d := &rows.Desired{
		Owner:              rows.Owner{Network: net.Name, Topology: base.TopologyLayer3, Piece: base.PieceTopology},
		Routers:            append([]rows.Router{b.cr}, b.grs...),
		Switches:           b.switches,
		StaticMACBindings:  b.macs,
		LoadBalancerGroups: loadBalancerGroups(b.names),
	}
	SetLayer3GatewayMode(d, net.GatewayMode)
	return d, nil
}

// layer3Build is one Layer3Topology in the making.
type layer3Build struct {
	net      Layer3Network
	names    ovnk.Layer2Names
	copp     *rows.Copp
	cr       rows.Router
	ts, join rows.Switch
	// switches are the join switch, the transit switch (both refreshed at
	// the end), then every local node's switch and the external sides'.
	switches []rows.Switch
	grs      []rows.Router
	// macs are the gateway routers' rtoe- ports' static MAC bindings.
	macs []nbdb.StaticMACBinding
	// servicesRouted says the services are routed already (once per zone).
	servicesRouted bool
}

func (net Layer3Network) validate() error {
	if net.Name == "" {
		return fmt.Errorf("network.name: must not be empty")
	}
	if len(net.Subnets) == 0 {
		return fmt.Errorf("network.subnets: a Layer3 network needs at least one subnet")
	}
	for i, s := range net.Subnets {
		if !s.IsValid() {
			return fmt.Errorf("network.subnets[%d]: not a valid CIDR", i)
		}
	}
	if err := onePerFamily("network.joinSubnets", net.JoinSubnets); err != nil {
		return err
	}
	for _, v6 := range net.joinFamilies() {
		if _, ok := ovnk.FamilyOf(net.JoinSubnets, v6); !ok {
			return fmt.Errorf("network.joinSubnets: no join subnet for the %s family (every router on the join switch has a join IP of each cluster family)", base.FamilyOf(v6))
		}
	}
	if err := onePerFamily("network.transitSubnets", net.TransitSubnets); err != nil {
		return err
	}
	if net.TransitSwitchTunnelKey <= 0 {
		return fmt.Errorf("network.transitSwitchTunnelKey: must be positive, got %d", net.TransitSwitchTunnelKey)
	}
	if err := validateGatewayFacts(net.GatewayMode, net.externalPortRange(), net.MasqueradeSubnets, net.GatewayMasqueradeIPs); err != nil {
		return err
	}
	return validateServiceList(net.Services)
}

// externalPortRange is the SNATs' external_port_range.
func (net Layer3Network) externalPortRange() string { return portRangeOrDefault(net.ExternalPortRange) }

// localGateway says whether the cluster runs OVN-Kubernetes' local
// gateway mode.
func (net Layer3Network) localGateway() bool { return net.GatewayMode == ovnk.GatewayModeLocal }

// SetLayer3GatewayMode sets what the gateway mode changes on the cluster
// router in d (the subnet-policies piece may create it): in local mode,
// options:ct-commit-all, so replies do not enter the SNAT zone as new
// flows before service reverse NAT (topology/topologyfactory.go:
// newClusterRouter).
func SetLayer3GatewayMode(d *rows.Desired, mode ovnk.GatewayMode) {
	if mode != ovnk.GatewayModeLocal {
		return
	}
	for i := range d.Routers {
		r := &d.Routers[i].Row
		if r.ExternalIDs[ovnk.ExternalIDClusterRouter] != "yes" {
			continue
		}
		if r.Options == nil {
			r.Options = map[string]string{}
		}
		r.Options["ct-commit-all"] = "true"
	}
}

// joinFamilies are the families of the join IPs (true: IPv6), IPv4 first:
// the cluster's and the network's.
func (net Layer3Network) joinFamilies() []bool {
	v4, v6 := net.ClusterIPv4, net.ClusterIPv6
	for _, s := range net.Subnets {
		v4, v6 = v4 || s.Addr().Is4(), v6 || s.Addr().Is6()
	}
	var out []bool
	if v4 {
		out = append(out, false)
	}
	if v6 {
		out = append(out, true)
	}
	return out
}

// joinIPs are the join subnets' addresses at offset n, with their length.
func (net Layer3Network) joinIPs(n int) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v6 := range net.joinFamilies() {
		join, _ := ovnk.FamilyOf(net.JoinSubnets, v6)
		a, err := ovnk.AddrAt(join.Masked(), uint64(n))
		if err != nil {
			return nil, fmt.Errorf("join IP: %w", err)
		}
		out = append(out, netip.PrefixFrom(a, join.Bits()))
	}
	return out, nil
}

// clusterJoinIPs are the cluster router's join addresses (the join
// subnets' first; validate made sure they exist).
func (b *layer3Build) clusterJoinIPs() []netip.Prefix {
	ips, _ := b.net.joinIPs(1)
	return ips
}

// joinPort adds a router's rtoj- port (to the cluster router when gr is
// nil) and its jtor- peer on the join switch; a gateway router's carries
// gateway_mtu when its node supports it (gateway.go: createGWRouterPort).
func (b *layer3Build) joinPort(router string, ips []netip.Prefix, gr *rows.Router, gatewayMTU bool) {
	port := nbdb.LogicalRouterPort{Name: ovnk.RouterToJoin(router), MAC: ovnk.MACFromIP(ips[0].Addr()).String(), Networks: base.PrefixStrings(ips)}
	if gr == nil {
		b.cr.Ports = append(b.cr.Ports, port)
	} else {
		if gatewayMTU && b.net.GatewayMTU > 0 {
			port.Options = map[string]string{"gateway_mtu": strconv.Itoa(b.net.GatewayMTU)}
		}
		gr.Ports = append(gr.Ports, port)
	}
	b.join.Ports = append(b.join.Ports, nbdb.LogicalSwitchPort{
		Name: ovnk.JoinToRouter(router), Type: "router", Addresses: []string{"router"},
		Options: map[string]string{"router-port": port.Name},
	})
}

// primaryRole is the external ID upstream's
// GenerateExternalIDsForSwitchOrRouter adds to a Primary network's node and
// transit switches and gateway routers.
func primaryRole() map[string]string {
	return map[string]string{ovnk.ExternalIDNetworkRole: "primary"}
}

// hostAddr is the address at offset off of a host subnet, with its length
// (1: the gateway, 2: the management port).
func hostAddr(s netip.Prefix, off uint64) netip.Prefix {
	return netip.PrefixFrom(ovnk.MustAddrAt(s.Masked(), off), s.Bits())
}
