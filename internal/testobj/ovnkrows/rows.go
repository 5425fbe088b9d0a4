package ovnkrows

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/udnkit/udnkit/ovnk"
)

// PodPort is a pod's logical switch port in one zone.
type PodPort struct {
	Network Network
	// NAD is the key ("namespace/name") of the network's NAD in the pod's
	// namespace; Switch the logical switch the port is on.
	NAD, Switch string
	// Namespace and Pod name the pod.
	Namespace, Pod string
	// Chassis is the chassis ID of the pod's node (requested-chassis).
	Chassis string
	// Addresses is "MAC IP..." from the pod's k8s.ovn.org/pod-networks.
	Addresses string
	// TunnelID is the pod's tunnel ID (requested-tnl-key; 0: none).
	TunnelID int
	// Remote writes the port as a zone other than the pod's node's sees
	// it: type remote.
	Remote bool
	// Disabled writes enabled=false, as OVN-Kubernetes writes a live
	// migration's target pod until its domain is ready.
	Disabled bool
}

// Name is the port's name (upstream's GetLogicalPortName for the NAD).
func (p PodPort) Name() string { return ovnk.PodPortName(p.NAD, p.Namespace, p.Pod) }

// WritePodPort adds the pod's port in nb's zone as OVN-Kubernetes' pod
// controller writes it (pkg/ovn/base_network_controller_pods.go
// addLogicalPortToNetwork, and zone_interconnect's AddTransitPortConfig for
// Layer2): addresses and port security "MAC IP...", requested-chassis the
// node's chassis ID, requested-tnl-key the pod's tunnel ID, the network's
// external IDs; type remote in zones other than the pod's own. Addresses
// are set as columns: lsp-set-addresses refuses an address another port
// holds, which a live migration's source and target ports share
// (OVN-Kubernetes writes with libovsdb).
func WritePodPort(nb Ctl, p PodPort) error {
	port := p.Name()
	args := []string{"--may-exist", "lsp-add", p.Switch, port, "--", "lsp-set-options", port, "requested-chassis=" + p.Chassis}
	if p.TunnelID > 0 {
		args = append(args, "requested-tnl-key="+strconv.Itoa(p.TunnelID))
	}
	args = append(args, "--", "set", "Logical_Switch_Port", port,
		`addresses="`+p.Addresses+`"`, `port_security="`+p.Addresses+`"`,
		`external_ids:namespace="`+p.Namespace+`"`, `external_ids:pod="true"`,
		`external_ids:"k8s.ovn.org/nad"="`+p.NAD+`"`)
	args = append(args, p.Network.IDs()...)
	if p.Remote {
		args = append(args, "--", "lsp-set-type", port, "remote")
	}
	if p.Disabled {
		args = append(args, "--", "lsp-set-enabled", port, "disabled")
	}
	_, err := nb.Run(args...)
	return err
}

// Gateway is what OVN-Kubernetes' gateway controller owns for one node on
// a network.
type Gateway struct {
	Network Network
	// Node names the node; Chassis is its chassis ID.
	Node, Chassis string
	// MAC is breth0's MAC, on the external router port and its peer.
	MAC string
	// IPs are the node's addresses on breth0, one per family (the external
	// router port's networks); the first is external_ids:physical_ip.
	IPs []netip.Prefix
	// NextHops are the physical gateways the default routes point at, one
	// per family.
	NextHops []netip.Addr
	// MasqueradeIPs are the network's gateway-router masquerade IPs, one
	// per family (upstream's GetUDNGatewayMasqueradeIPs): host addresses on
	// the external router port, in physical_ips, and the external IPs of
	// the SNATs.
	MasqueradeIPs []netip.Addr
	// SNAT adds the SNAT of each of these subnets to the masquerade IP of
	// its family, only towards the external router port (the old Layer2
	// topology's match, GetNetworkScopedClusterSubnetSNATMatch), and of
	// each of JoinIPs, the gateway router's join IPs (none: ovn-trace has no
	// connection tracking to un-NAT a reply).
	SNAT    []netip.Prefix
	JoinIPs []netip.Addr
}

// WriteGateway writes, in nb's zone, the node's gateway router on the
// network as OVN-Kubernetes writes it where udnkit does not (a zone's
// node without l3-gateway-config in the ovn-trace suite; the old Layer2
// topology of the upgrade packet test) (pkg/ovn/gateway.go GatewayInit,
// updateGWRouterNAT): the gateway
// router GR_<prefix><node> bound to the node's chassis, its external port
// rtoe-<GR> with the node's IPs and breth0's MAC, the external switch
// ext_<prefix><node> with the localnet port onto breth0 (physnet) and the
// etor- router port, the default routes via the physical gateways, and the
// SNATs, every row labelled with the network (addExternalSwitch for a
// user-defined network). udnkit's topology then adds the router's
// transit-router port and its route back to the pods.
func WriteGateway(nb Ctl, g Gateway) error {
	gr := ovnk.NamesFor(g.Network.Name).GatewayRouter(g.Node)
	names := ovnk.NamesFor(g.Network.Name)
	rtoe, etor := names.GRToExternal(g.Node), names.ExternalToGR(g.Node)
	ext, localnet := names.ExternalSwitch(g.Node), LocalnetPort(g.Network.Name, g.Node)
	lrp := []string{"--may-exist", "lrp-add", gr, rtoe, g.MAC}
	physical := make([]string, 0, len(g.IPs)+len(g.MasqueradeIPs))
	for _, ip := range g.IPs {
		lrp, physical = append(lrp, ip.String()), append(physical, ip.Addr().String())
	}
	for _, m := range g.MasqueradeIPs {
		lrp, physical = append(lrp, netip.PrefixFrom(m, m.BitLen()).String()), append(physical, m.String())
	}
	cmds := [][]string{
		append([]string{"--may-exist", "lr-add", gr, "--", "set", "Logical_Router", gr, "options:chassis=" + g.Chassis,
			`external_ids:physical_ip="` + physical[0] + `"`, `external_ids:physical_ips="` + strings.Join(physical, ",") + `"`},
			g.Network.IDs()...),
		lrp,
		append([]string{"set", "Logical_Router_Port", rtoe, `external_ids:"gateway-physical-ip"=yes`}, g.Network.IDs()...),
		append([]string{"--may-exist", "ls-add", ext, "--", "set", "Logical_Switch", ext}, g.Network.IDs()...),
		append([]string{"--may-exist", "lsp-add", ext, localnet, "--", "lsp-set-type", localnet, "localnet",
			"--", "lsp-set-addresses", localnet, "unknown", "--", "lsp-set-options", localnet, "network_name=physnet",
			"--", "set", "Logical_Switch_Port", localnet}, g.Network.IDs()...),
		append([]string{"--may-exist", "lsp-add", ext, etor, "--", "lsp-set-type", etor, "router", "--", "lsp-set-addresses", etor, g.MAC,
			"--", "lsp-set-options", etor, "router-port=" + rtoe, "--", "set", "Logical_Switch_Port", etor}, g.Network.IDs()...),
	}
	for _, gw := range g.NextHops {
		def := "0.0.0.0/0"
		if gw.Is6() {
			def = "::/0"
		}
		cmds = append(cmds, append([]string{"--", "--id=@r", "create", "Logical_Router_Static_Route", `ip_prefix="` + def + `"`,
			`nexthop="` + gw.String() + `"`, "output_port=" + rtoe}, append(g.Network.IDs(), "--", "add", "Logical_Router", gr, "static_routes", "@r")...))
	}
	snat := func(logical, match string) {
		for _, m := range g.MasqueradeIPs {
			if m.Is6() == strings.Contains(logical, ":") {
				cmds = append(cmds, append([]string{"--", "--id=@n", "create", "NAT", "type=snat", `logical_ip="` + logical + `"`,
					`external_ip="` + m.String() + `"`, `match=` + strconv.Quote(match), "options:stateless=false",
					`external_port_range="` + ovnk.DefaultExternalPortRange + `"`}, append(g.Network.IDs(), "--", "add", "Logical_Router", gr, "nat", "@n")...))
			}
		}
	}
	for _, j := range g.JoinIPs {
		snat(j.String(), "")
	}
	for _, s := range g.SNAT {
		snat(s.String(), fmt.Sprintf("outport == %q", rtoe))
	}
	return nb.runAll(cmds)
}

// LocalnetPort is the localnet port of the network's external switch on a
// node (upstream's GetNetworkScopedExtPortName: breth0_<prefix><node>).
func LocalnetPort(network, node string) string {
	return ovnk.NamesFor(network).ExternalLocalnetPort("breth0", node)
}

// WriteManagementPort adds the node's management port k8s-<prefix><node>
// (upstream's GetK8sMgmtIntfName over the network-scoped node name) to the
// network's Layer2 switch in nb's zone at ips (the subnets' second
// addresses), as OVN-Kubernetes writes it where udnkit does not (a node
// without l3-gateway-config), and returns its name.
func WriteManagementPort(nb Ctl, network, node string, ips ...netip.Addr) (string, error) {
	port := ovnk.NamesFor(network).ManagementPort(node)
	_, err := nb.Run("--may-exist", "lsp-add", ovnk.NamesFor(network).Switch(), port, "--", "lsp-set-addresses", port, Addresses(ips...))
	return port, err
}

// Layer3TransitSubnet is the transit subnet OVN-Kubernetes gives a Layer3
// network's transit switch (a node's address at offset node ID).
var Layer3TransitSubnet = netip.MustParsePrefix("100.88.0.0/16")
