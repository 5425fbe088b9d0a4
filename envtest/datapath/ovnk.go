package datapath

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/udnkit/udnkit/dataplane/ovsdbserver"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/internal/testobj/ovnkrows"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
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

// Bridge is the nodes' external bridge, which holds their underlay
// addresses and carries the gateway routers' localnet ports (physnet).
const Bridge = "breth0"

// GatewayConfig is the node's k8s.ovn.org/l3-gateway-config as
// ovnkube-node's shared gateway publishes it (go-controller/pkg/node/gateway.go
// and pkg/util/node_annotations.go SetL3GatewayConfig): breth0 with the
// interface ID breth0_<node>, breth0's MAC, the node's underlay addresses
// with their prefix lengths, the external host as next hop of each family,
// node ports enabled, no VLAN.
func GatewayConfig(n *Node) (ovnk.L3GatewayConfig, error) {
	s, err := n.BridgeMAC()
	if err != nil {
		return ovnk.L3GatewayConfig{}, err
	}
	mac, err := net.ParseMAC(s)
	if err != nil {
		return ovnk.L3GatewayConfig{}, fmt.Errorf("node %s: breth0's MAC: %w", n.Name, err)
	}
	return ovnk.L3GatewayConfig{Mode: ovnk.GatewayModeShared, BridgeID: Bridge, InterfaceID: Bridge + "_" + n.Name, MAC: mac,
		IPAddresses: []netip.Prefix{netip.PrefixFrom(n.UnderlayIP, Underlay.Bits()), netip.PrefixFrom(n.UnderlayIP6, Underlay6.Bits())},
		NextHops:    []netip.Addr{ExternalGateway, ExternalGateway6}, NodePortEnable: true}, nil
}

// OVNKNode is the node as ovnkube-node publishes it
// (go-controller/pkg/util/node_annotations.go): k8s.ovn.org/node-chassis-id
// (the chassis its ovn-controller registered), k8s.ovn.org/node-encap-ips,
// k8s.ovn.org/node-primary-ifaddr and k8s.ovn.org/host-cidrs (its underlay
// address on breth0), k8s.ovn.org/l3-gateway-config (GatewayConfig), and
// its underlay IP as InternalIP.
func OVNKNode(n *Node) (*corev1.Node, error) {
	gw, err := GatewayConfig(n)
	if err != nil {
		return nil, err
	}
	ifAddr := netip.PrefixFrom(n.UnderlayIP, Underlay.Bits()).String()
	return testobj.MakeNode(n.Name).Annotations(map[string]string{
		ovnk.AnnotationNodeChassisID:   n.ChassisID(),
		ovnk.AnnotationNodeEncapIPs:    `["` + n.UnderlayIP.String() + `"]`,
		annotationNodePrimaryIfAddr:    `{"ipv4":"` + ifAddr + `"}`,
		annotationNodeHostCIDRs:        `["` + ifAddr + `"]`,
		ovnk.AnnotationL3GatewayConfig: gw.Encode(),
	}).InternalIPs(n.UnderlayIP).Obj(), nil
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
	// ID is the network ID (k8s.ovn.org/network-id), which picks its
	// masquerade IPs.
	ID int
}

// rows is the network as ovnkrows writes it.
func (net Network) rows() ovnkrows.Network {
	return ovnkrows.Network{Name: net.Name, Topology: net.Topology}
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
	return ovnk.NamesFor(net.Name).ExternalLocalnetPort(Bridge, node.Name)
}

// GatewayMasqueradeIPs are the network's gateway routers' masquerade IPs,
// one per family of its subnets (upstream's GetUDNGatewayMasqueradeIPs):
// what their SNATs leave with and breth0 SNATs to the node's IPs.
func (net Network) GatewayMasqueradeIPs(cfg ovnk.ClusterConfig) ([]netip.Addr, error) {
	var ips []netip.Addr
	for _, v6 := range []bool{false, true} {
		if _, ok := ovnk.FamilyOf(net.Subnets, v6); !ok {
			continue
		}
		masq, ok := ovnk.FamilyOf(cfg.MasqueradeSubnets, v6)
		if !ok {
			return nil, fmt.Errorf("network %s: the cluster has no masquerade subnet of the family of its subnets", net.Name)
		}
		gr, _, err := ovnk.UDNMasqueradeIPs(masq, net.ID)
		if err != nil {
			return nil, fmt.Errorf("network %s: %w", net.Name, err)
		}
		ips = append(ips, gr)
	}
	return ips, nil
}

// SteerGateways installs on every node's breth0 the flows ovnkube-node's
// shared gateway keeps for the network's gateway router (Node.SteerGateway),
// its masquerade IPs SNATed to the node's IPs; again after the localnet
// port was recreated.
func (c *Cluster) SteerGateways(ctx context.Context, cfg ovnk.ClusterConfig, net *Network) error {
	masq, err := net.GatewayMasqueradeIPs(cfg)
	if err != nil {
		return err
	}
	for _, n := range c.Nodes {
		if err := n.SteerGateway(ctx, net.LocalnetPort(n), masq...); err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	return nil
}

// SteerNodePorts installs on every node's breth0 the flows ovnkube-node's
// shared gateway keeps for the node ports of the network's Services
// (Node.SteerNodePorts, ports as "tcp:30080"): they enter the network's
// gateway router. SteerGateways first.
func (c *Cluster) SteerNodePorts(ctx context.Context, net *Network, ports ...string) error {
	for _, n := range c.Nodes {
		if err := n.SteerNodePorts(ctx, net.LocalnetPort(n), ports...); err != nil {
			return err
		}
	}
	return nil
}

// PodPort is a pod's logical switch port on a Layer2 network as
// OVN-Kubernetes' pod controller writes it, for the tests that run
// OVN-Kubernetes' side of a network (an upgrade from its topology);
// udnkit's pod-port reconciler writes every other pod port.
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
}

// Name is the port's name (upstream's GetLogicalPortName for the NAD).
func (p PodPort) Name() string { return ovnk.PodPortName(p.Network.NAD, p.Namespace, p.Pod) }

// PodPortOf is the port of a pod whose k8s.ovn.org/pod-networks entry for
// the network is pn, on the network's layer2 switch.
func PodPortOf(net *Network, namespace, pod string, node *Node, pn *podannotation.PodNetwork) (PodPort, error) {
	a, err := pn.Parse()
	if err != nil {
		return PodPort{}, fmt.Errorf("pod %s/%s: %s: %w", namespace, pod, podannotation.PodNetworkField(net.NAD), err)
	}
	addrs := a.MAC.String()
	for _, ip := range a.IPs {
		addrs += " " + ip.Addr().String()
	}
	return PodPort{Network: net, Switch: ovnk.NamesFor(net.Name).Switch(), Namespace: namespace, Pod: pod, Node: node,
		Addresses: addrs, TunnelID: pn.TunnelID}, nil
}

// WritePodPort adds the pod's logical switch port in every zone as
// OVN-Kubernetes' pod controller writes it (ovnkrows.WritePodPort): in
// zones other than the pod's own, type remote.
func (c *Cluster) WritePodPort(p PodPort) error {
	for _, zone := range c.Nodes {
		row := ovnkrows.PodPort{Network: p.Network.rows(), NAD: p.Network.NAD, Switch: p.Switch, Namespace: p.Namespace, Pod: p.Pod,
			Chassis: p.Node.ChassisID(), Addresses: p.Addresses, TunnelID: p.TunnelID, Remote: zone != p.Node}
		if err := ovnkrows.WritePodPort(zone.NB(), row); err != nil {
			return err
		}
	}
	return nil
}

// WriteLegacyGateway writes, in every zone, the external side of the
// zone's node's gateway router as OVN-Kubernetes writes it for a Layer2
// network's old topology (ovnkrows.WriteGateway): the node's underlay
// addresses (its IPv6 one when the network has an IPv6 subnet) and the
// network's gateway-router masquerade IPs on rtoe-, the default routes via
// the physical gateways, and the SNATs of the GR's join IP (joinIP of the
// node) and of the network's subnets (towards rtoe- only) to the
// masquerade IP of their family, as upstream's gatewayInit and
// updateGWRouterNAT write them in both topologies. breth0 SNATs those to
// the node's IPs (SteerGateways). On the transit-router topology udnkit
// writes the external side itself, from the node's l3-gateway-config
// (with --adopt-legacy-layer2 adopting these rows).
func (c *Cluster) WriteLegacyGateway(cfg ovnk.ClusterConfig, net *Network, joinIP func(*Node) netip.Addr) error {
	masq, err := net.GatewayMasqueradeIPs(cfg)
	if err != nil {
		return err
	}
	for _, n := range c.Nodes {
		mac, err := n.BridgeMAC()
		if err != nil {
			return err
		}
		s, _ := ovnk.FamilyOf(net.Subnets, false)
		g := ovnkrows.Gateway{Network: net.rows(), Node: n.Name, Chassis: n.ChassisID(), MAC: mac,
			IPs: []netip.Prefix{netip.PrefixFrom(n.UnderlayIP, Underlay.Bits())}, NextHops: []netip.Addr{ExternalGateway},
			MasqueradeIPs: masq, SNAT: []netip.Prefix{s}, JoinIPs: []netip.Addr{joinIP(n)}}
		if s6, dual := ovnk.FamilyOf(net.Subnets, true); dual {
			g.IPs = append(g.IPs, netip.PrefixFrom(n.UnderlayIP6, Underlay6.Bits()))
			g.NextHops = append(g.NextHops, ExternalGateway6)
			g.SNAT = append(g.SNAT, s6)
		}
		if err := ovnkrows.WriteGateway(n.NB(), g); err != nil {
			return err
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
// ovnkube-node does, bound to the logical switch port k8s-<prefix><node>
// that udnkit writes in the node's zone from its l3-gateway-config: on the
// node the interface ovn-k8s-mp<network ID> holding the subnets' second
// addresses, with the route back to the management-port SNAT's masquerade
// IP through the network's gateway (IPv4). It returns once ovn-controller
// has bound every port, so udnkit must have written them.
func (c *Cluster) AddManagementPorts(ctx context.Context, cfg ovnk.ClusterConfig, net *Network) error {
	var addrs []netip.Prefix
	for _, v6 := range []bool{false, true} {
		if _, ok := ovnk.FamilyOf(net.Subnets, v6); ok {
			addrs = append(addrs, net.ManagementIP(v6))
		}
	}
	mac := ovnk.MACFromIP(addrs[0].Addr()).String()
	masq, err := MasqueradeIP(cfg, net.ID)
	if err != nil {
		return err
	}
	for _, n := range c.Nodes {
		port := ovnk.NamesFor(net.Name).ManagementPort(n.Name)
		routes := [][2]string{{masq.String() + "/32", net.Gateway(false).String()}}
		if err := n.AddManagementPort(ctx, "ovn-k8s-mp"+strconv.Itoa(net.ID), port, mac, addrs, routes); err != nil {
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
var Layer3TransitSubnet = ovnkrows.Layer3TransitSubnet

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
