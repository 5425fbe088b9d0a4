package datapath

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/udnkit/udnkit/envtest/datapath/netns"
	"github.com/udnkit/udnkit/envtest/datapath/node"
)

// This file is the physical network Localnet networks bridge to: on each
// node what an admin configures for them (an OVS bridge and its bridge
// mapping, as an NNCP writes them) and, outside the nodes, the top-of-rack
// switch the nodes' bridges and outside hosts plug into. The nodes' kernel
// has no VLAN devices, so the switch, on the userspace datapath, does the
// VLANs: the nodes' uplinks are trunks, a host's port is an access port.

// LocalnetBridge is the nodes' bridge of the physical network, eth1 its
// uplink to the top-of-rack switch.
const LocalnetBridge = "brlocalnet"

// torBridge is the top-of-rack switch's bridge.
const torBridge = "tor"

// physnet is the cluster's physical network: its name, its switch and how
// many hosts were plugged in (naming their switch ports).
type physnet struct {
	name    string
	tor     *node.Switch
	plugged int
}

// AddPhysicalNetwork wires physical network name on every node: the
// bridge brlocalnet (userspace datapath) with its uplink eth1 on a trunk
// port of the top-of-rack switch, which starts in the underlay namespace,
// and name:brlocalnet in ovn-controller's ovn-bridge-mappings beside
// physnet:breth0. Called again with the same name it does nothing; the
// cluster has one physical network besides breth0's.
func (c *Cluster) AddPhysicalNetwork(ctx context.Context, name string) error {
	c.physMu.Lock()
	defer c.physMu.Unlock()
	if c.phys != nil {
		if c.phys.name != name {
			return fmt.Errorf("the cluster's physical network is %s already, not %s", c.phys.name, name)
		}
		return nil
	}
	tor, err := node.StartSwitch(ctx, filepath.Join(c.Dir, "tor"), c.Underlay, torBridge)
	if err != nil {
		return err
	}
	c.phys = &physnet{name: name, tor: tor}
	for i, n := range c.Nodes {
		if err := c.trunk(n, "t"+strconv.Itoa(i), name); err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	return nil
}

// trunk plugs node n's brlocalnet into the switch's trunk port port and
// maps physical network name to it.
func (c *Cluster) trunk(n *Node, port, name string) error {
	if err := netns.IP("link", "add", "eth1", "netns", n.Netns, "type", "veth", "peer", "name", port, "netns", c.Underlay); err != nil {
		return err
	}
	for _, args := range [][]string{{"-n", n.Netns, "link", "set", "eth1", "up"}, {"-n", c.Underlay, "link", "set", port, "up"}} {
		if err := netns.IP(args...); err != nil {
			return err
		}
	}
	if _, err := c.phys.tor.Vsctl("add-port", torBridge, port); err != nil {
		return err
	}
	mappings, err := n.Vsctl("get", "Open_vSwitch", ".", "external_ids:ovn-bridge-mappings")
	if err != nil {
		return err
	}
	list := strings.Split(strings.Trim(mappings, `"`), ",")
	if m := name + ":" + LocalnetBridge; !slices.Contains(list, m) {
		list = append(list, m)
	}
	_, err = n.Vsctl("--may-exist", "add-br", LocalnetBridge, "--", "set", "Bridge", LocalnetBridge, "datapath_type=netdev",
		"--", "--may-exist", "add-port", LocalnetBridge, "eth1",
		"--", "set", "Open_vSwitch", ".", `external_ids:ovn-bridge-mappings="`+strings.Join(list, ",")+`"`)
	return err
}

// NewHost creates a host outside the cluster: a namespace with its
// loopback up, which remove (or Stop) deletes.
func (c *Cluster) NewHost(name, label string) (e *netns.Endpoint, remove func(), err error) {
	e = &netns.Endpoint{Netns: c.name(name), Label: label}
	if err := c.addNetns(e.Netns); err != nil {
		return nil, nil, err
	}
	return e, func() { _ = netns.IP("netns", "del", e.Netns) }, nil
}

// PlugHost plugs host e into the physical network's switch: its interface
// phys0 holding addr on an access port of VLAN vlan (0: untagged frames
// only), with transmit checksum offload off (the switch reads the frames
// on the userspace datapath). unplug takes it out again.
func (c *Cluster) PlugHost(e *netns.Endpoint, vlan int, addr netip.Prefix) (unplug func(), err error) {
	c.physMu.Lock()
	defer c.physMu.Unlock()
	if c.phys == nil {
		return nil, fmt.Errorf("the cluster has no physical network (AddPhysicalNetwork first)")
	}
	c.phys.plugged++
	port := "h" + strconv.Itoa(c.phys.plugged)
	add := []string{"-n", e.Netns, "addr", "add", addr.String(), "dev", "phys0"}
	if addr.Addr().Is6() {
		add = append(add, "nodad")
	}
	for _, args := range [][]string{
		{"link", "add", "phys0", "netns", e.Netns, "type", "veth", "peer", "name", port, "netns", c.Underlay},
		add,
		{"-n", e.Netns, "link", "set", "phys0", "up"},
		{"-n", c.Underlay, "link", "set", port, "up"},
	} {
		if err := netns.IP(args...); err != nil {
			return nil, err
		}
	}
	if err := netns.TxChecksumOff(e.Netns, "phys0"); err != nil {
		return nil, err
	}
	tor := c.phys.tor
	if _, err := tor.Vsctl("add-port", torBridge, port, "vlan_mode=access", "tag="+strconv.Itoa(vlan)); err != nil {
		return nil, err
	}
	return func() {
		_, _ = tor.Vsctl("--if-exists", "del-port", torBridge, port)
		_ = netns.IP("-n", e.Netns, "link", "del", "phys0")
	}, nil
}
