package datapath

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"github.com/udnkit/udnkit/envtest/datapath/netns"
	"net/netip"
	"slices"
	"strconv"

	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

// Pod is a pod's network namespace with its interface on a node's br-int.
type Pod struct {
	netns.Endpoint
	Namespace, Name string
	Node            *Node
	// Iface is the pod's interface: an OVS internal port of the node's
	// br-int moved into Netns.
	Iface string
	// Port is the logical switch port the interface binds to
	// (external_ids:iface-id).
	Port string
	// Addresses are what the interface was configured with.
	Addresses podannotation.PodAddresses
}

// PodSpec is what a pod's interface is made from: the pod's
// k8s.ovn.org/pod-networks annotation (the only source of its addresses,
// MAC, gateways and routes, as OVN-Kubernetes' CNI reads it) and the entry
// of its primary network there.
type PodSpec struct {
	Namespace, Name string
	// Annotations are the pod's annotations.
	Annotations map[string]string
	// NAD is the key of the pod's primary network in the annotation
	// ("namespace/name" of its NetworkAttachmentDefinition).
	NAD string
	// Port is the pod's logical switch port name (iface-id).
	Port string
	// UID is the pod's UID, the port's iface-id-ver, which OVN binds
	// the interface by as well ("": none).
	UID string
	// MTU is the network's MTU (the NAD's "mtu"; 0: 1400).
	MTU int
}

// AddPod creates the pod on node: its namespace, an internal port on br-int
// with external_ids:iface-id set to the logical switch port, moved into the
// namespace and configured from the annotation: MAC, addresses, MTU, a
// default route via each gateway, and the annotation's routes. It returns
// once ovn-controller has installed the port's flows
// (external_ids:ovn-installed, which OVN-Kubernetes' CNI waits for too).
func (c *Cluster) AddPod(ctx context.Context, node *Node, spec PodSpec) (*Pod, error) {
	pn, addrs, err := spec.parse()
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(spec.Namespace + "/" + spec.Name + "/" + spec.NAD))
	p := &Pod{Namespace: spec.Namespace, Name: spec.Name, Node: node, Port: spec.Port, Addresses: addrs,
		Iface: "p" + hex.EncodeToString(sum[:6])}
	p.Netns = c.name("pod-" + hex.EncodeToString(sum[:4]))
	p.Label = fmt.Sprintf("%s/%s (%s on %s)", spec.Namespace, spec.Name, addrs.IPs[0].Addr(), node.Name)
	if err := netns.IP("netns", "add", p.Netns); err != nil {
		return nil, err
	}
	c.podsMu.Lock()
	c.pods = append(c.pods, p)
	c.podsMu.Unlock()
	ids := ifaceIDVer(spec.UID)
	if addrs.EncapIP.IsValid() {
		// OKEP-5535: the VTEP the pod's interface is behind, for
		// ovn-controller to bind the port to that Encap.
		ids = append(ids, "external_ids:encap-ip="+addrs.EncapIP.String())
	}
	if err := node.AddPortInto(ctx, p.Iface, spec.Port, p.Netns, ids...); err != nil {
		return nil, err
	}
	for _, args := range configure(p.Netns, p.Iface, addrs, pn.Routes, spec.MTU) {
		if err := netns.IP(args...); err != nil {
			return nil, fmt.Errorf("pod %s/%s: %w", spec.Namespace, spec.Name, err)
		}
	}
	if err := node.WaitInstalled(ctx, p.Iface, spec.Port); err != nil {
		return nil, err
	}
	return p, nil
}

// ifaceIDVer is the interface's external_ids:iface-id-ver, as
// OVN-Kubernetes' CNI sets it: the pod's UID, which its logical switch
// port's options:iface-id-ver names (ovn-controller binds only a match).
func ifaceIDVer(uid string) []string {
	if uid == "" {
		return nil
	}
	return []string{"external_ids:iface-id-ver=" + uid}
}

// RemovePod removes the pod's interface from its node's br-int and its
// namespace.
func (c *Cluster) RemovePod(p *Pod) error {
	c.podsMu.Lock()
	c.pods = slices.DeleteFunc(c.pods, func(q *Pod) bool { return q == p })
	c.podsMu.Unlock()
	if _, err := p.Node.Vsctl("--if-exists", "del-port", "br-int", p.Iface); err != nil {
		return err
	}
	return netns.IP("netns", "del", p.Netns)
}

// parse reads the pod's entry of its primary network from its
// k8s.ovn.org/pod-networks annotation.
func (spec PodSpec) parse() (*podannotation.PodNetwork, podannotation.PodAddresses, error) {
	pn, err := podannotation.DecodePodNetwork(spec.Annotations, spec.NAD)
	if err != nil {
		return nil, podannotation.PodAddresses{}, fmt.Errorf("pod %s/%s: %w", spec.Namespace, spec.Name, err)
	}
	if pn == nil {
		return nil, podannotation.PodAddresses{}, fmt.Errorf("pod %s/%s: annotation %s has no entry for network %s", spec.Namespace, spec.Name, ovnk.AnnotationPodNetworks, spec.NAD)
	}
	addrs, err := pn.Parse()
	if err != nil {
		return nil, podannotation.PodAddresses{}, fmt.Errorf("pod %s/%s: %s: %w", spec.Namespace, spec.Name, podannotation.PodNetworkField(spec.NAD), err)
	}
	return pn, addrs, nil
}

// configure are the ip(8) commands that configure interface iface in
// namespace netns as OVN-Kubernetes' CNI does from a pod-networks entry:
// MAC, MTU (0: 1400), addresses, a default route via each gateway, the
// entry's routes.
func configure(netns, iface string, addrs podannotation.PodAddresses, routes []podannotation.PodRoute, mtu int) [][]string {
	if mtu == 0 {
		mtu = 1400
	}
	cmds := [][]string{
		{"-n", netns, "link", "set", "lo", "up"},
		{"-n", netns, "link", "set", iface, "address", addrs.MAC.String(), "mtu", strconv.Itoa(mtu)},
	}
	for _, a := range addrs.IPs {
		add := []string{"-n", netns, "addr", "add", a.String(), "dev", iface}
		if a.Addr().Is6() {
			add = append(add, "nodad")
		}
		cmds = append(cmds, add)
	}
	cmds = append(cmds, []string{"-n", netns, "link", "set", iface, "up"})
	for _, gw := range addrs.Gateways {
		cmds = append(cmds, []string{"-n", netns, family(gw), "route", "add", "default", "via", gw.String(), "dev", iface})
	}
	for _, r := range routes {
		add := []string{"-n", netns, "route", "add", r.Dest, "dev", iface}
		if r.NextHop != "" {
			add = []string{"-n", netns, "route", "add", r.Dest, "via", r.NextHop, "dev", iface}
		}
		cmds = append(cmds, add)
	}
	return cmds
}

// IP is the pod's address of dst's family.
func (p *Pod) IP(v6 bool) netip.Addr {
	for _, a := range p.Addresses.IPs {
		if a.Addr().Is6() == v6 {
			return a.Addr()
		}
	}
	return netip.Addr{}
}

// Neighbor is the MAC the pod's neighbour table holds for ip ("" for none).
func (p *Pod) Neighbor(ip netip.Addr) (string, error) {
	return netns.Neighbor(p.Netns, p.Iface, ip.String())
}

// FlushNeighbors empties the pod's neighbour table, so its next packet
// resolves its destination again.
func (p *Pod) FlushNeighbors() error {
	return netns.IP("-n", p.Netns, "neigh", "flush", "dev", p.Iface)
}

func family(a netip.Addr) string {
	if a.Is6() {
		return "-6"
	}
	return "-4"
}
