package datapath

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"github.com/udnkit/udnkit/envtest/datapath/netns"
	"strconv"

	"github.com/udnkit/udnkit/ovnk/podannotation"
)

// launcherBridge is the bridge KubeVirt's bridge binding builds in a
// virt-launcher pod: the pod's interface and the VM's tap on one bridge.
const launcherBridge = "k6t-eth0"

// Launcher is a KubeVirt virt-launcher pod: a network namespace whose
// interface, bound to the pod's logical switch port, holds no address (the
// VM holds the pod's address: OVN-Kubernetes' CNI skips the IP
// configuration of live-migratable VM pods) and sits on the bridge
// k6t-eth0, where the tap of the VM running in the pod joins it.
type Launcher struct {
	Namespace, Name string
	Node            *Node
	// Netns is the pod's network namespace.
	Netns string
	// Iface is the pod's interface (an OVS internal port of the node's
	// br-int) and Port the logical switch port it binds to.
	Iface, Port string
}

// AddLauncher creates a virt-launcher pod on node whose interface binds to
// logical switch port port (and pod UID uid: ifaceIDVer), with MTU mtu
// (0: 1400). It does not wait for
// ovn-controller to claim the port: a migration target's port is created
// disabled (see Launcher.WaitInstalled).
func (c *Cluster) AddLauncher(ctx context.Context, node *Node, namespace, name, port, uid string, mtu int) (*Launcher, error) {
	sum := sha256.Sum256([]byte("launcher/" + namespace + "/" + name))
	l := &Launcher{Namespace: namespace, Name: name, Node: node, Port: port,
		Netns: c.name("virt-" + hex.EncodeToString(sum[:4])), Iface: "l" + hex.EncodeToString(sum[:6])}
	if mtu == 0 {
		mtu = 1400
	}
	if err := c.addNetns(l.Netns); err != nil {
		return nil, err
	}
	if err := node.AddPortInto(ctx, l.Iface, port, l.Netns, ifaceIDVer(uid)...); err != nil {
		return nil, err
	}
	for _, args := range [][]string{
		{"-n", l.Netns, "link", "add", launcherBridge, "mtu", strconv.Itoa(mtu), "type", "bridge"},
		{"-n", l.Netns, "link", "set", l.Iface, "mtu", strconv.Itoa(mtu), "master", launcherBridge, "up"},
		{"-n", l.Netns, "link", "set", launcherBridge, "up"},
	} {
		if err := netns.IP(args...); err != nil {
			return nil, fmt.Errorf("virt-launcher pod %s/%s: %w", namespace, name, err)
		}
	}
	return l, nil
}

// WaitInstalled waits until ovn-controller has claimed the pod's port and
// installed its flows (external_ids:ovn-installed).
func (l *Launcher) WaitInstalled(ctx context.Context) error {
	return l.Node.WaitInstalled(ctx, l.Iface, l.Port)
}

// Remove deletes the pod: its interface from the node's br-int and its
// namespace (a VM still attached loses its tap with it).
func (l *Launcher) Remove() error {
	if _, err := l.Node.Vsctl("--if-exists", "del-port", "br-int", l.Iface); err != nil {
		return err
	}
	return netns.IP("netns", "del", l.Netns)
}

// VM is the guest of a KubeVirt VM: a network namespace (its kernel keeps
// the VM's sockets across a migration) whose eth0 is configured from the
// VM pod's k8s.ovn.org/pod-networks entry, as the guest receives it over
// DHCP from OVN. eth0 is a bridge whose one port, the tap, is a veth into
// the virt-launcher pod the VM runs in: a migration swaps the tap for one
// into the target pod while eth0 keeps its carrier, so the guest, like a
// migrated VM, notices nothing (its neighbour entries stay).
type VM struct {
	netns.Endpoint
	// Addresses are what eth0 was configured with.
	Addresses podannotation.PodAddresses
	name      string
	taps      int // taps made so far: names the next
	tap       string
	launcher  *Launcher
}

// vmIface is the guest's interface.
const vmIface = "eth0"

// StartVM starts a VM in launcher l, configured from spec's annotation.
func (c *Cluster) StartVM(l *Launcher, spec PodSpec) (*VM, error) {
	pn, addrs, err := spec.parse()
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte("vm/" + spec.Namespace + "/" + spec.Name))
	vm := &VM{Addresses: addrs, name: hex.EncodeToString(sum[:5])}
	vm.Netns = c.name("vm-" + hex.EncodeToString(sum[:4]))
	vm.Label = fmt.Sprintf("VM %s/%s (%s)", spec.Namespace, spec.Name, addrs.IPs[0].Addr())
	if err := c.addNetns(vm.Netns); err != nil {
		return nil, err
	}
	if err := netns.IP("-n", vm.Netns, "link", "add", vmIface, "type", "bridge"); err != nil {
		return nil, err
	}
	for _, args := range configure(vm.Netns, vmIface, addrs, pn.Routes, spec.MTU) {
		if err := netns.IP(args...); err != nil {
			return nil, fmt.Errorf("VM %s/%s: %w", spec.Namespace, spec.Name, err)
		}
	}
	if err := vm.plug(l); err != nil {
		return nil, err
	}
	return vm, nil
}

// plug adds a tap from eth0 into launcher l's bridge and makes it the VM's.
func (vm *VM) plug(l *Launcher) error {
	vm.taps++
	tap := fmt.Sprintf("t%s%d", vm.name, vm.taps)
	for _, args := range [][]string{
		{"-n", vm.Netns, "link", "add", tap, "type", "veth", "peer", "name", tap, "netns", l.Netns},
		{"-n", vm.Netns, "link", "set", tap, "master", vmIface, "up"},
		{"-n", l.Netns, "link", "set", tap, "master", launcherBridge, "up"},
	} {
		if err := netns.IP(args...); err != nil {
			return err
		}
	}
	vm.tap, vm.launcher = tap, l
	return nil
}

// Remove stops the VM: its namespace goes, with its tap.
func (vm *VM) Remove() error { return netns.IP("netns", "del", vm.Netns) }

// Launcher is the virt-launcher pod the VM runs in.
func (vm *VM) Launcher() *Launcher { return vm.launcher }

// MigrateTo moves the VM into launcher l, as a live migration's switch-over
// does: the guest (its addresses, neighbours and connections) is unchanged,
// its traffic leaves the source pod's bridge for the target pod's.
func (vm *VM) MigrateTo(l *Launcher) error {
	old := vm.tap
	if err := vm.plug(l); err != nil {
		return err
	}
	return netns.IP("-n", vm.Netns, "link", "del", old)
}

// Neighbor is the MAC the guest's neighbour table holds for addr ("" for
// none).
func (vm *VM) Neighbor(addr string) (string, error) { return netns.Neighbor(vm.Netns, vmIface, addr) }

// FlushNeighbors empties the guest's neighbour table, so its next packet
// resolves the gateway again.
func (vm *VM) FlushNeighbors() error {
	return netns.IP("-n", vm.Netns, "neigh", "flush", "dev", vmIface)
}
