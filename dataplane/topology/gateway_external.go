package topology

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// GatewayExternal is what a Primary network's gateway router on one node
// needs for its external side, as upstream's GatewayManager.gatewayInit
// (pkg/ovn/gateway.go) builds it from the node's l3-gateway-config.
type GatewayExternal struct {
	// Network is the network's name; Node the node's.
	Network, Node string
	// Gateway is the node's k8s.ovn.org/l3-gateway-config (shared or local).
	Gateway ovnk.L3GatewayConfig
	// MasqueradeIPs are the network's gateway-router masquerade IPs, one
	// per cluster family (upstream's GetUDNGatewayMasqueradeIPs): host
	// addresses on the rtoe- port and the external IPs of every SNAT.
	MasqueradeIPs []netip.Addr
	// MasqueradeSubnets are the cluster's masquerade subnets, one per
	// cluster family: each gets a route via its dummy next hop out of the
	// rtoe- port (host-bound service replies).
	MasqueradeSubnets []netip.Prefix
	// JoinIPs are the gateway router's join IPs: each SNATed to the
	// masquerade IP of its family.
	JoinIPs []netip.Addr
	// SNATSubnets are the subnets whose traffic leaving the node is SNATed
	// to the masquerade IP of their family (a Layer2 network's subnets, a
	// Layer3 network's cluster subnets).
	SNATSubnets []netip.Prefix
	// ExternalPortRange is every SNAT's external_port_range (--external-port-range).
	ExternalPortRange string
	// PhysicalNetwork is the localnet port's network_name ("": physnet, a
	// Primary network without uplink).
	PhysicalNetwork string
}

// AddGatewayExternal adds a node's external side to its gateway router gr
// (named for g's network and node) and appends its external switch to
// switches: on gr, external_ids physical_ip(s), the rtoe- port with the
// node's external addresses and the masquerade IPs, the masquerade-subnet
// routes and default routes out of it, and the join-IP and subnet SNATs;
// the switch ext_<prefix><node> with its localnet port onto the node's
// bridge and the etor- port. Invalid input changes nothing and yields an
// error naming the field.
func AddGatewayExternal(gr *rows.Router, switches []rows.Switch, g GatewayExternal) ([]rows.Switch, error) {
	names := ovnk.NamesFor(g.Network)
	if err := g.validate(names, gr); err != nil {
		return switches, err
	}
	rtoe := names.GRToExternal(g.Node)
	networks := base.PrefixStrings(g.Gateway.IPAddresses)
	physical := make([]string, 0, len(g.Gateway.IPAddresses)+len(g.MasqueradeIPs))
	for _, p := range g.Gateway.IPAddresses {
		physical = append(physical, p.Addr().String())
	}
	for _, m := range g.MasqueradeIPs {
		networks = append(networks, netip.PrefixFrom(m, m.BitLen()).String())
		physical = append(physical, m.String())
	}
	if gr.Row.ExternalIDs == nil {
		gr.Row.ExternalIDs = map[string]string{}
	}
	gr.Row.ExternalIDs["physical_ip"] = physical[0]
	gr.Row.ExternalIDs["physical_ips"] = strings.Join(physical, ",")
	gr.Ports = append(gr.Ports, nbdb.LogicalRouterPort{Name: rtoe, MAC: g.Gateway.MAC.String(), Networks: networks})
	for _, s := range g.MasqueradeSubnets {
		hop, _ := ovnk.DummyNextHopMasqueradeIP(s)
		gr.Routes = append(gr.Routes, base.StaticRoute(s.String(), hop.String(), "", base.Ptr(rtoe)))
	}
	for _, hop := range g.Gateway.NextHops {
		gr.Routes = append(gr.Routes, base.StaticRoute(defaultRoute(hop), hop.String(), "", base.Ptr(rtoe)))
	}
	for _, j := range g.JoinIPs {
		masq, _ := ovnk.AddrOfFamily(g.MasqueradeIPs, j.Is6())
		gr.NATs = append(gr.NATs, g.snat(j.String(), masq))
	}
	for _, s := range g.SNATSubnets {
		masq, _ := ovnk.AddrOfFamily(g.MasqueradeIPs, s.Addr().Is6())
		gr.NATs = append(gr.NATs, g.snat(s.Masked().String(), masq))
	}
	return append(switches, g.externalSwitch(names, rtoe)), nil
}

// externalSwitch is ext_<prefix><node> with its localnet port (addresses
// unknown, tagged with the gateway's VLAN) and its etor- router port, as
// upstream's addExternalSwitch writes them for a user-defined network (no
// nat-addresses: its GR holds only masquerade IPs, the same on every node).
func (g GatewayExternal) externalSwitch(names ovnk.Layer2Names, rtoe string) rows.Switch {
	physnet := g.PhysicalNetwork
	if physnet == "" {
		physnet = ovnk.PhysicalNetworkName
	}
	localnet := nbdb.LogicalSwitchPort{
		Name: names.ExternalLocalnetPort(g.Gateway.BridgeID, g.Node), Type: "localnet", Addresses: []string{"unknown"},
		Options: map[string]string{"network_name": physnet},
	}
	if g.Gateway.VLANID != 0 {
		localnet.TagRequest = base.Ptr(g.Gateway.VLANID)
	}
	return rows.Switch{
		Row: nbdb.LogicalSwitch{Name: names.ExternalSwitch(g.Node), ExternalIDs: map[string]string{ovnk.ExternalIDNetworkRole: "primary"}},
		Ports: []nbdb.LogicalSwitchPort{localnet, {
			Name: names.ExternalToGR(g.Node), Type: "router", Addresses: []string{g.Gateway.MAC.String()},
			Options: map[string]string{"router-port": rtoe},
		}},
	}
}

// snat is one of the gateway router's SNATs to a masquerade IP, as
// upstream's libovsdbops.BuildSNAT fills it.
func (g GatewayExternal) snat(logical string, external netip.Addr) nbdb.NAT {
	return nbdb.NAT{
		Type: nbdb.NATTypeSNAT, LogicalIP: logical, ExternalIP: external.String(),
		Options: map[string]string{"stateless": "false"}, ExternalPortRange: g.ExternalPortRange,
	}
}

func defaultRoute(hop netip.Addr) string {
	if hop.Is6() {
		return "::/0"
	}
	return "0.0.0.0/0"
}

// validate refuses what upstream's gatewayInit would fail on or write
// wrongly: another router, a gateway that is disabled or has no MAC,
// address or bridge, and an SNAT or route without a masquerade address of
// its family.
func (g GatewayExternal) validate(names ovnk.Layer2Names, gr *rows.Router) error {
	if g.Network == "" || g.Node == "" {
		return fmt.Errorf("gateway external side: network and node must be named, got %q and %q", g.Network, g.Node)
	}
	if want := names.GatewayRouter(g.Node); gr == nil || gr.Row.Name != want {
		return fmt.Errorf("gateway external side of node %s: the router must be %s", g.Node, want)
	}
	field := func(f string) string { return fmt.Sprintf("node %s %s: %s", g.Node, ovnk.AnnotationL3GatewayConfig, f) }
	switch {
	case g.Gateway.Mode != ovnk.GatewayModeShared && g.Gateway.Mode != ovnk.GatewayModeLocal:
		return fmt.Errorf("%s: mode %q has no gateway to program", field("mode"), g.Gateway.Mode)
	case len(g.Gateway.MAC) != 6:
		return fmt.Errorf("%s: the external interface needs a MAC", field("mac-address"))
	case len(g.Gateway.IPAddresses) == 0:
		return fmt.Errorf("%s: the external interface needs an address", field("ip-addresses"))
	case g.Gateway.BridgeID == "":
		return fmt.Errorf("%s: the localnet port is named after the bridge, which is empty", field("bridge-id"))
	case g.Gateway.VLANID < 0 || g.Gateway.VLANID > 4095:
		return fmt.Errorf("%s: %d is outside [0, 4095]", field("vlan-id"), g.Gateway.VLANID)
	}
	for i, p := range g.Gateway.IPAddresses {
		if !p.IsValid() {
			return fmt.Errorf("%s[%d]: not a valid address", field("ip-addresses"), i)
		}
	}
	if err := ovnk.ValidateExternalPortRange(g.ExternalPortRange); err != nil {
		return fmt.Errorf("gateway external side of node %s: %w", g.Node, err)
	}
	for i, s := range g.MasqueradeSubnets {
		if _, err := ovnk.DummyNextHopMasqueradeIP(s); err != nil {
			return fmt.Errorf("gateway external side of node %s: masqueradeSubnets[%d]: %w", g.Node, i, err)
		}
	}
	need := func(what string, a netip.Addr) error {
		if _, ok := ovnk.AddrOfFamily(g.MasqueradeIPs, a.Is6()); !ok {
			return fmt.Errorf("gateway external side of node %s: %s has no %s masquerade IP to SNAT to", g.Node, what, base.IPFamily(a))
		}
		return nil
	}
	for _, j := range g.JoinIPs {
		if err := need("join IP "+j.String(), j); err != nil {
			return err
		}
	}
	for _, s := range g.SNATSubnets {
		if err := need("subnet "+s.String(), s.Addr()); err != nil {
			return err
		}
	}
	return nil
}

// GatewayStaticMACBindings are the static MAC bindings upstream's
// gateway.CreateDummyGWMacBindings writes on a Primary network's rtoe-
// port: per masquerade subnet (cluster family) its dummy next hop, then
// per subnet the host's masquerade IP, each with the MAC derived from the
// address and override_dynamic_mac, so the gateway router never resolves
// these node-local addresses, which every node shares.
func GatewayStaticMACBindings(network, node string, masqueradeSubnets []netip.Prefix) ([]nbdb.StaticMACBinding, error) {
	port := ovnk.NamesFor(network).GRToExternal(node)
	var hops, hosts []netip.Addr
	for i, s := range masqueradeSubnets {
		hop, err := ovnk.DummyNextHopMasqueradeIP(s)
		if err != nil {
			return nil, fmt.Errorf("masqueradeSubnets[%d]: %w", i, err)
		}
		host, _ := ovnk.HostMasqueradeIP(s)
		hops, hosts = append(hops, hop), append(hosts, host)
	}
	var out []nbdb.StaticMACBinding
	for _, ip := range append(hops, hosts...) {
		out = append(out, nbdb.StaticMACBinding{LogicalPort: port, IP: ip.String(), MAC: ovnk.MACFromIP(ip).String(), OverrideDynamicMAC: true})
	}
	return out, nil
}

// ManagementPort is a node's management port on a Primary network's switch
// as upstream's syncNodeManagementPort writes it: k8s-<prefix><node> with
// the MAC derived from its first address and its addresses, one per
// subnet in the network's order.
func ManagementPort(network, node string, ips []netip.Addr) (nbdb.LogicalSwitchPort, error) {
	if len(ips) == 0 || !ips[0].IsValid() {
		return nbdb.LogicalSwitchPort{}, fmt.Errorf("management port of node %s: needs an address per subnet of network %s", node, network)
	}
	parts := []string{ovnk.MACFromIP(ips[0]).String()}
	for i, ip := range ips {
		if !ip.IsValid() {
			return nbdb.LogicalSwitchPort{}, fmt.Errorf("management port of node %s: address %d is not valid", node, i)
		}
		parts = append(parts, ip.String())
	}
	return nbdb.LogicalSwitchPort{Name: ovnk.NamesFor(network).ManagementPort(node), Addresses: []string{strings.Join(parts, " ")}}, nil
}
