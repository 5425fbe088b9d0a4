package datapath

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/udnkit/udnkit/dataplane/ovsdbserver"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
)

// This file is OVN-Kubernetes' share of the cluster: what ovnkube-node,
// ovnkube-controller and its zone-interconnect handlers write, named and
// filled as upstream does, for the packet tests and `make run ZONES=n`
// alike. It writes nothing udnkit is meant to write.

// chassisNamespace is the name space of ChassisID's name-based UUIDs.
var chassisNamespace = [16]byte{0x5e, 0x1f, 0x0c, 0x1a, 0x75, 0x64, 0x4e, 0x6b, 0x8a, 0x69, 0x74, 0x63, 0x68, 0x61, 0x73, 0x73}

// ChassisID is the system-id a node's Open vSwitch is given, which
// ovn-controller registers as its chassis name and ovnkube-node publishes in
// k8s.ovn.org/node-chassis-id: a UUID, never the node's name (as on a real
// node, where it is random). It is the name-based (version 5) UUID of the
// node's name, so a restarted `make run` finds the chassis it registered.
func ChassisID(node string) string {
	h := sha1.New()
	h.Write(chassisNamespace[:])
	h.Write([]byte(node))
	u := h.Sum(nil)[:16]
	u[6] = u[6]&0x0f | 0x50 // version 5
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// readChassisID reads the node's system-id from its Open_vSwitch database, as
// ovnkube-node does (util.GetNodeChassisID), and checks that ovn-controller
// registered a chassis of that name in the node's zone.
func (n *Node) readChassisID() (string, error) {
	id, err := n.Vsctl("get", "Open_vSwitch", ".", "external_ids:system-id")
	if err != nil {
		return "", err
	}
	id = strings.Trim(id, `"`)
	out, err := run("", nil, "ovn-sbctl", "--db="+n.Zone.SB.Address(), "--bare", "--columns=encaps", "find", "Chassis", "name="+id)
	if err != nil {
		return "", err
	}
	if out == "" {
		return "", fmt.Errorf("no chassis %s in %s's zone yet", id, n.Name)
	}
	return id, nil
}

// registerRemoteChassis makes every zone know the other nodes' chassis as
// OVN-Kubernetes' zone-interconnect chassis handler registers them
// (pkg/ovn/zone_interconnect/chassis_handler.go): remote
// (other_config:is-remote=true), named by the node's chassis ID, with its
// geneve encap and the node's name as hostname.
func (c *Cluster) registerRemoteChassis() error {
	for _, z := range c.Nodes {
		for _, m := range c.Nodes {
			if m == z {
				continue
			}
			if err := ovsdbserver.AddChassis(z.Zone.SB, m.ChassisID(), m.Name, true, m.UnderlayIP.String()); err != nil {
				return err
			}
		}
	}
	return nil
}

// What ovnkube-node publishes that udnkit does not read
// (go-controller/pkg/util/node_annotations.go: OvnNodeIfAddr,
// OVNNodeHostCIDRs).
const (
	annotationNodePrimaryIfAddr = "k8s.ovn.org/node-primary-ifaddr"
	annotationNodeHostCIDRs     = "k8s.ovn.org/host-cidrs"
)

// OVNKNode is the node as ovnkube-node publishes it
// (go-controller/pkg/util/node_annotations.go): k8s.ovn.org/node-chassis-id
// (the chassis its ovn-controller registered), k8s.ovn.org/node-encap-ips,
// k8s.ovn.org/node-primary-ifaddr and k8s.ovn.org/host-cidrs (its underlay
// address on breth0), and its underlay IP as InternalIP.
func OVNKNode(n *Node) *corev1.Node {
	ifAddr := netip.PrefixFrom(n.UnderlayIP, Underlay.Bits()).String()
	return testobj.MakeNode(n.Name).Annotations(map[string]string{
		ovnk.AnnotationNodeChassisID: n.ChassisID(),
		ovnk.AnnotationNodeEncapIPs:  `["` + n.UnderlayIP.String() + `"]`,
		annotationNodePrimaryIfAddr:  `{"ipv4":"` + ifAddr + `"}`,
		annotationNodeHostCIDRs:      `["` + ifAddr + `"]`,
	}).InternalIPs(n.UnderlayIP).Obj()
}

// Nbctl runs ovn-nbctl on the node's zone's Northbound.
func (n *Node) Nbctl(args ...string) (string, error) {
	return run("", nil, append([]string{"ovn-nbctl", "--db=" + n.Zone.NB.Address()}, args...)...)
}

// Network is what OVN-Kubernetes' controllers read of a network for the
// rows they own.
type Network struct {
	// Name is the OVN network name (external_ids:k8s.ovn.org/network).
	Name string
	// NAD is the key ("namespace/name") of the network's NAD in the
	// namespace of the pods.
	NAD string
	// Topology is "layer2" or "layer3".
	Topology string
	// Subnets are the network's subnets.
	Subnets []netip.Prefix
}

// ids are the external IDs OVN-Kubernetes puts on the network's rows, as
// ovn-nbctl arguments.
func (net Network) ids() []string {
	return []string{`external_ids:"k8s.ovn.org/network"="` + net.Name + `"`, `external_ids:"k8s.ovn.org/topology"=` + net.Topology}
}

// Gateway is the network's default gateway of a family (the subnet's first
// address).
func (net Network) Gateway(v6 bool) netip.Addr {
	s, _ := ovnk.FamilyOf(net.Subnets, v6)
	return ovnk.MustAddrAt(s, 1)
}

// ManagementIP is the network's management port address of a family on
// every node (the subnet's second address).
func (net Network) ManagementIP(v6 bool) netip.Prefix {
	s, _ := ovnk.FamilyOf(net.Subnets, v6)
	return netip.PrefixFrom(ovnk.MustAddrAt(s, 2), s.Bits())
}

// LocalnetPort is the localnet port of the network's external switch on a
// node (upstream's GetNetworkScopedExtPortName: breth0_<prefix><node>).
func (net Network) LocalnetPort(node *Node) string {
	return "breth0_" + ovnk.NetworkPrefix(net.Name) + node.Name
}

// PodPort is a pod's logical switch port as OVN-Kubernetes' pod controller
// writes it.
type PodPort struct {
	Network *Network
	// Switch is the logical switch the port is on in every zone.
	Switch string
	// Namespace and Pod name the pod.
	Namespace, Pod string
	// Node is the pod's node.
	Node *Node
	// Addresses is "MAC IP..." from the pod's k8s.ovn.org/pod-networks.
	Addresses string
	// TunnelID is the pod's tunnel ID (requested-tnl-key; 0: none).
	TunnelID int
	// LocalOnly writes the port in the pod's own zone only (Layer3: the
	// node switch exists there only).
	LocalOnly bool
	// Disabled writes the port with enabled=false, as OVN-Kubernetes
	// writes a live migration's target pod until its domain is ready.
	Disabled bool
}

// Name is the port's name (upstream's GetLogicalPortName for the NAD).
func (p PodPort) Name() string { return ovnk.PodPortName(p.Network.NAD, p.Namespace, p.Pod) }

// PodPortOf is the port of a pod whose k8s.ovn.org/pod-networks entry for
// the network is pn, on the network's layer2 switch.
func PodPortOf(net *Network, namespace, pod string, node *Node, pn *ovnk.PodNetwork) (PodPort, error) {
	a, err := pn.Parse()
	if err != nil {
		return PodPort{}, fmt.Errorf("pod %s/%s: %s: %w", namespace, pod, ovnk.PodNetworkField(net.NAD), err)
	}
	addrs := a.MAC.String()
	for _, ip := range a.IPs {
		addrs += " " + ip.Addr().String()
	}
	return PodPort{Network: net, Switch: ovnk.NamesFor(net.Name).Switch(), Namespace: namespace, Pod: pod, Node: node,
		Addresses: addrs, TunnelID: pn.TunnelID}, nil
}

// WritePodPort adds the pod's logical switch port in every zone as
// OVN-Kubernetes' pod controller writes it
// (pkg/ovn/base_network_controller_pods.go addLogicalPortToNetwork, and
// zone_interconnect's AddTransitPortConfig for Layer2): addresses and port
// security "MAC IP...", requested-chassis the node's chassis ID,
// requested-tnl-key the pod's tunnel ID, the network's external IDs; in
// zones other than the pod's own, type remote.
func (c *Cluster) WritePodPort(p PodPort) error {
	port := p.Name()
	for _, zone := range c.Nodes {
		if p.LocalOnly && zone != p.Node {
			continue
		}
		opts := []string{"requested-chassis=" + p.Node.ChassisID()}
		if p.TunnelID > 0 {
			opts = append(opts, "requested-tnl-key="+strconv.Itoa(p.TunnelID))
		}
		// Addresses are set as columns: lsp-set-addresses refuses an
		// address another port holds, which a live migration's source and
		// target ports share (OVN-Kubernetes writes with libovsdb).
		args := []string{"--may-exist", "lsp-add", p.Switch, port,
			"--", "lsp-set-options", port}
		args = append(args, opts...)
		args = append(args, "--", "set", "Logical_Switch_Port", port,
			`addresses="`+p.Addresses+`"`, `port_security="`+p.Addresses+`"`,
			`external_ids:namespace="`+p.Namespace+`"`, `external_ids:pod="true"`,
			`external_ids:"k8s.ovn.org/nad"="`+p.Network.NAD+`"`)
		args = append(args, p.Network.ids()...)
		if zone != p.Node {
			args = append(args, "--", "lsp-set-type", port, "remote")
		}
		if p.Disabled {
			args = append(args, "--", "lsp-set-enabled", port, "disabled")
		}
		if _, err := zone.Nbctl(args...); err != nil {
			return err
		}
	}
	return nil
}

// WriteGateway writes, in every zone, what OVN-Kubernetes' gateway
// controller owns for the zone's node on the network
// (pkg/ovn/gateway.go GatewayInit, updateGWRouterNAT): the gateway router
// GR_<prefix><node> bound to the node's chassis, its external port
// rtoe-<GR> with the node's IP and breth0's MAC, the external switch
// ext_<prefix><node> with the localnet port onto breth0 (physnet) and the
// etor- router port, the default route via the physical gateway, and the
// SNAT of the network's subnet to the node IP, for IPv6 too when the
// network has an IPv6 subnet (the node's IPv6 address on rtoe-). udnkit's topology then
// adds the router's transit-router port and its route back to the pods.
func (c *Cluster) WriteGateway(net *Network) error {
	for _, n := range c.Nodes {
		mac, err := n.BridgeMAC()
		if err != nil {
			return err
		}
		gr := ovnk.NamesFor(net.Name).GatewayRouter(n.Name)
		rtoe, etor := "rtoe-"+gr, "etor-"+gr
		ext, localnet := "ext_"+ovnk.NetworkPrefix(net.Name)+n.Name, net.LocalnetPort(n)
		nodeIP := netip.PrefixFrom(n.UnderlayIP, Underlay.Bits())
		s, _ := ovnk.FamilyOf(net.Subnets, false)
		rtoeNets := []string{nodeIP.String()}
		s6, dual := ovnk.FamilyOf(net.Subnets, true)
		if dual {
			rtoeNets = append(rtoeNets, netip.PrefixFrom(n.UnderlayIP6, Underlay6.Bits()).String())
		}
		cmds := [][]string{
			append([]string{"--may-exist", "lr-add", gr, "--", "set", "Logical_Router", gr, "options:chassis=" + n.ChassisID(),
				`external_ids:physical_ip="` + n.UnderlayIP.String() + `"`}, net.ids()...),
			append([]string{"--may-exist", "lrp-add", gr, rtoe, mac}, rtoeNets...),
			append([]string{"set", "Logical_Router_Port", rtoe, `external_ids:"gateway-physical-ip"=yes`}, net.ids()...),
			append([]string{"--may-exist", "ls-add", ext, "--", "set", "Logical_Switch", ext}, net.ids()...),
			{"--may-exist", "lsp-add", ext, localnet, "--", "lsp-set-type", localnet, "localnet",
				"--", "lsp-set-addresses", localnet, "unknown", "--", "lsp-set-options", localnet, "network_name=physnet"},
			{"--may-exist", "lsp-add", ext, etor, "--", "lsp-set-type", etor, "router", "--", "lsp-set-addresses", etor, mac,
				"--", "lsp-set-options", etor, "router-port=" + rtoe},
			{"--may-exist", "lr-route-add", gr, "0.0.0.0/0", ExternalGateway.String(), rtoe},
			{"--may-exist", "lr-nat-add", gr, "snat", n.UnderlayIP.String(), s.String()},
		}
		if dual {
			cmds = append(cmds, []string{"--may-exist", "lr-route-add", gr, "::/0", ExternalGateway6.String(), rtoe},
				[]string{"--may-exist", "lr-nat-add", gr, "snat", n.UnderlayIP6.String(), s6.String()})
		}
		for _, args := range cmds {
			if _, err := n.Nbctl(args...); err != nil {
				return err
			}
		}
	}
	return nil
}

// MasqueradeIP is the external IP of udnkit's management-port SNAT for the
// network of ID id, IPv4 (the cluster's masquerade subnet).
func MasqueradeIP(cfg ovnk.ClusterConfig, id int) (netip.Addr, error) {
	masq, ok := ovnk.FamilyOf(cfg.MasqueradeSubnets, false)
	if !ok {
		return netip.Addr{}, errors.New("the cluster has no IPv4 masquerade subnet")
	}
	_, mgmt, err := ovnk.UDNMasqueradeIPs(masq, id)
	return mgmt, err
}

// AddManagementPorts gives every node the network's management port as
// OVN-Kubernetes does: the logical switch port <prefix>k8s-<node> in the
// node's zone at the subnet's second address (IPv4), and on the node the
// interface ovn-k8s-mp<network ID> holding it, with the route back to the
// management-port SNAT's masquerade IP through the network's gateway.
func (c *Cluster) AddManagementPorts(ctx context.Context, cfg ovnk.ClusterConfig, net *Network, id int) error {
	mgmt := net.ManagementIP(false)
	mac := ovnk.MACFromIP(mgmt.Addr()).String()
	masq, err := MasqueradeIP(cfg, id)
	if err != nil {
		return err
	}
	for _, n := range c.Nodes {
		port := ovnk.NetworkPrefix(net.Name) + "k8s-" + n.Name
		if _, err := n.Nbctl("--may-exist", "lsp-add", ovnk.NamesFor(net.Name).Switch(), port,
			"--", "lsp-set-addresses", port, mac+" "+mgmt.Addr().String()); err != nil {
			return err
		}
		routes := [][2]string{{masq.String() + "/32", net.Gateway(false).String()}}
		if err := n.AddManagementPort(ctx, "ovn-k8s-mp"+strconv.Itoa(id), port, mac, []netip.Prefix{mgmt}, routes); err != nil {
			return err
		}
	}
	return nil
}

// Layer3Node is a node's share of a Layer3 network: its node ID and host
// subnet.
type Layer3Node struct {
	Node *Node
	ID   int
	Host netip.Prefix
}

// Layer3TransitSubnet is the transit subnet OVN-Kubernetes gives a Layer3
// network's transit switch (a node's address at offset node ID).
var Layer3TransitSubnet = netip.MustParsePrefix("100.88.0.0/16")

// TransitIP is the node's address on the transit switch.
func (n Layer3Node) TransitIP() netip.Addr { return ovnk.MustAddrAt(Layer3TransitSubnet, uint64(n.ID)) }

// WriteLayer3 writes, in every zone, what OVN-Kubernetes' Layer3 network
// controller owns (pkg/ovn/layer3_user_defined_network_controller.go and
// zone_interconnect/zone_ic_handler.go): the cluster router with the local
// node switch behind rtos-<prefix><node> at its host subnet's first address,
// the transit switch (its tunnel key) with the local router port rtots- at
// the node's transit IP and, per other node, a remote tstor- port
// (requested-chassis, tunnel key = node ID) and a route to its host subnet
// via its transit IP.
func (c *Cluster) WriteLayer3(net *Network, nodes []Layer3Node) error {
	names, prefix := ovnk.NamesFor(net.Name), ovnk.NetworkPrefix(net.Name)
	cr, ts := names.ClusterRouter(), names.TransitSwitch()
	for _, local := range nodes {
		z := local.Node
		sw, rtos := prefix+z.Name, "rtos-"+prefix+z.Name
		gw := ovnk.MustAddrAt(local.Host, 1)
		cmds := [][]string{
			append([]string{"lr-add", cr, "--", "set", "Logical_Router", cr}, net.ids()...),
			{"lrp-add", cr, rtos, ovnk.MACFromIP(gw).String(), netip.PrefixFrom(gw, local.Host.Bits()).String()},
			append([]string{"ls-add", sw, "--", "set", "Logical_Switch", sw}, net.ids()...),
			{"lsp-add", sw, "stor-" + sw, "--", "lsp-set-type", "stor-" + sw, "router",
				"--", "lsp-set-addresses", "stor-" + sw, "router", "--", "lsp-set-options", "stor-" + sw, "router-port=" + rtos},
			append([]string{"ls-add", ts, "--", "set", "Logical_Switch", ts, "other_config:requested-tnl-key=16711685",
				"other_config:interconn-ts=" + ts}, net.ids()...),
		}
		for _, m := range nodes {
			port, tip := names.TransitSwitchToRouter(m.Node.Name), m.TransitIP()
			mac, tnet := ovnk.MACFromIP(tip).String(), netip.PrefixFrom(tip, Layer3TransitSubnet.Bits()).String()
			if m.Node == z {
				rtots := names.RouterToTransitSwitch(z.Name)
				cmds = append(cmds, []string{"lrp-add", cr, rtots, mac, tnet},
					[]string{"lsp-add", ts, port, "--", "lsp-set-type", port, "router", "--", "lsp-set-addresses", port, "router",
						"--", "lsp-set-options", port, "router-port=" + rtots, "requested-tnl-key=" + strconv.Itoa(m.ID)})
				continue
			}
			cmds = append(cmds, []string{"lsp-add", ts, port, "--", "lsp-set-type", port, "remote", "--", "lsp-set-addresses", port, mac + " " + tnet,
				"--", "lsp-set-options", port, "requested-chassis=" + m.Node.ChassisID(), "requested-tnl-key=" + strconv.Itoa(m.ID)},
				[]string{"lr-route-add", cr, m.Host.String(), tip.String()})
		}
		for _, args := range cmds {
			if _, err := z.Nbctl(args...); err != nil {
				return err
			}
		}
	}
	return nil
}

// Settle waits until every zone's ovn-controller has installed the current
// Northbound contents (ovn-nbctl --wait=hv sync).
func (c *Cluster) Settle(ctx context.Context) error {
	for _, n := range c.Nodes {
		timeout := 30 * time.Second
		if d, ok := ctx.Deadline(); ok {
			timeout = max(time.Until(d), time.Second)
		}
		if _, err := n.Nbctl("--timeout="+strconv.Itoa(int(timeout.Seconds())), "--wait=hv", "sync"); err != nil {
			return err
		}
	}
	return nil
}
