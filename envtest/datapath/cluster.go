package datapath

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"github.com/udnkit/udnkit/envtest/datapath/netns"
	"github.com/udnkit/udnkit/envtest/datapath/node"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/udnkit/udnkit/ovnk"
)

// Prefix starts the name of everything a cluster creates: directories under
// the temporary directory and network namespaces.
const Prefix = "udnk-"

// Underlay is the nodes' underlay subnet (RFC 5737 TEST-NET-1): node i holds
// its address at offset 10+i, the external host (the nodes' physical
// gateway) at ExternalGateway.
var Underlay = netip.MustParsePrefix("192.0.2.0/24")

// ExternalGateway is the external host's address on the underlay: the
// default gateway of the nodes' gateway routers.
var ExternalGateway = netip.MustParseAddr("192.0.2.1")

// ExternalIP is an address beyond the external host (RFC 5737 TEST-NET-3),
// held on its loopback: traffic to it leaves the cluster through a gateway
// router.
var ExternalIP = netip.MustParseAddr("203.0.113.1")

// Underlay6, ExternalGateway6 and ExternalIP6 are the IPv6 counterparts
// (RFC 3849 documentation prefix): node i holds offset 10+i of Underlay6
// on breth0 beside its IPv4 address.
var (
	Underlay6        = netip.MustParsePrefix("2001:db8::/64")
	ExternalGateway6 = netip.MustParseAddr("2001:db8::1")
	ExternalIP6      = netip.MustParseAddr("2001:db8:ffff::1")
)

// Node is one cluster node: its network namespace with ovs-vswitchd and
// ovn-controller, and its OVN zone (package node runs them).
type Node = node.Node

// Cluster is a running real-datapath cluster.
type Cluster struct {
	// Run is the run ID in every name the cluster creates.
	Run   string
	Dir   string
	Nodes []*Node
	// Underlay is the namespace whose bridge joins the nodes' breth0.
	Underlay string
	// External is the host outside the cluster: on the underlay at
	// ExternalGateway, holding ExternalIP; it has no route to any pod
	// network, so it answers only what a gateway router SNATed to a node IP.
	External netns.Endpoint

	lock *os.File
	// podsMu guards pods: AddPod and RemovePod may run concurrently, as
	// two nodes' CNIs do.
	podsMu sync.Mutex
	pods   []*Pod
	netns  []string // every namespace created, removed by Stop
	// physMu guards phys, the physical network of Localnet networks
	// (AddPhysicalNetwork).
	physMu sync.Mutex
	phys   *physnet
}

// Node returns the node of that name (nil when there is none).
func (c *Cluster) Node(name string) *Node {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// Preflight checks what the cluster needs from the machine: /dev/net/tun
// (the userspace datapath's internal ports are tap devices) and permission to
// create network namespaces; the error says what is missing.
func Preflight() error {
	f, err := os.OpenFile("/dev/net/tun", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("the userspace datapath needs /dev/net/tun (its internal ports are tap devices): %w", err)
	}
	_ = f.Close()
	name := fmt.Sprintf("%spreflight-%d", Prefix, os.Getpid())
	if err := netns.IP("netns", "add", name); err != nil {
		return fmt.Errorf("the cluster needs permission to create network namespaces (root, or CAP_SYS_ADMIN and CAP_NET_ADMIN): %w", err)
	}
	return netns.IP("netns", "del", name)
}

// Start sweeps what earlier runs left behind and starts a cluster of nodes
// named names, each its own OVN zone, joined by the underlay; every zone's
// Southbound knows the other nodes' chassis. On error, everything started is
// stopped again.
func Start(ctx context.Context, names ...string) (c *Cluster, err error) {
	if _, err := node.SetupTools(); err != nil {
		return nil, err
	}
	if err := Preflight(); err != nil {
		return nil, err
	}
	if err := Sweep(); err != nil {
		return nil, err
	}
	id := make([]byte, 3)
	_, _ = rand.Read(id)
	c = &Cluster{Run: hex.EncodeToString(id)}
	// The run directory appears under its run- name already locked: a
	// concurrent Sweep never sees it unlocked.
	c.Dir = filepath.Join(os.TempDir(), Prefix+"run-"+c.Run)
	staging, err := os.MkdirTemp("", Prefix+"new-")
	if err != nil {
		return nil, err
	}
	if c.lock, err = os.Create(filepath.Join(staging, "lock")); err == nil {
		err = syscall.Flock(int(c.lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	if err == nil {
		err = os.Chmod(staging, 0o755)
	}
	if err == nil {
		err = os.Rename(staging, c.Dir)
	}
	if err != nil {
		_ = os.RemoveAll(staging)
		return nil, fmt.Errorf("lock the run directory %s: %w", c.Dir, err)
	}
	defer func() {
		if err != nil {
			c.Stop()
			c = nil
		}
	}()
	c.Underlay = c.name("underlay")
	if err := c.addNetns(c.Underlay); err != nil {
		return c, err
	}
	if err := netns.IP("-n", c.Underlay, "link", "add", "br0", "type", "bridge"); err != nil {
		return c, err
	}
	if err := netns.IP("-n", c.Underlay, "link", "set", "br0", "up"); err != nil {
		return c, err
	}
	if err := c.startExternal(); err != nil {
		return c, err
	}
	for i, name := range names {
		n, err := c.startNode(ctx, i, name)
		if n != nil {
			c.Nodes = append(c.Nodes, n)
		}
		if err != nil {
			return c, fmt.Errorf("node %s: %w", name, err)
		}
	}
	for _, n := range c.Nodes {
		if err := n.WaitChassis(ctx); err != nil {
			return c, err
		}
	}
	if err := c.registerRemoteChassis(); err != nil {
		return c, err
	}
	return c, nil
}

// name is a namespace name of this run.
func (c *Cluster) name(s string) string { return Prefix + c.Run + "-" + s }

func (c *Cluster) addNetns(name string) error {
	if err := netns.IP("netns", "add", name); err != nil {
		return err
	}
	c.netns = append(c.netns, name)
	return netns.IP("-n", name, "link", "set", "lo", "up")
}

// startExternal creates the external host on the underlay.
func (c *Cluster) startExternal() error {
	c.External = netns.Endpoint{Netns: c.name("external"), Label: "the external host"}
	if err := c.addNetns(c.External.Netns); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"link", "add", "eth0", "netns", c.External.Netns, "type", "veth", "peer", "name", "ext", "netns", c.Underlay},
		{"-n", c.Underlay, "link", "set", "ext", "master", "br0", "up"},
		{"-n", c.External.Netns, "addr", "add", netip.PrefixFrom(ExternalGateway, Underlay.Bits()).String(), "dev", "eth0"},
		{"-n", c.External.Netns, "link", "set", "eth0", "up"},
		{"-n", c.External.Netns, "addr", "add", netip.PrefixFrom(ExternalIP, 32).String(), "dev", "lo"},
		{"-n", c.External.Netns, "addr", "add", netip.PrefixFrom(ExternalGateway6, Underlay6.Bits()).String(), "dev", "eth0", "nodad"},
		{"-n", c.External.Netns, "addr", "add", netip.PrefixFrom(ExternalIP6, 128).String(), "dev", "lo"},
	} {
		if err := netns.IP(args...); err != nil {
			return err
		}
	}
	return netns.TxChecksumOff(c.External.Netns, "eth0")
}

// startNode starts node i: its zone, its namespace linked to the underlay,
// and its daemons.
func (c *Cluster) startNode(ctx context.Context, i int, name string) (*Node, error) {
	n := node.New(node.Config{Name: name, Netns: c.name(name), Dir: filepath.Join(c.Dir, name), SystemID: ChassisID(name),
		Underlay:  netip.PrefixFrom(ovnk.MustAddrAt(Underlay, uint64(10+i)), Underlay.Bits()),
		Underlay6: netip.PrefixFrom(ovnk.MustAddrAt(Underlay6, uint64(10+i)), Underlay6.Bits())})
	if err := n.StartZone(ctx); err != nil {
		return nil, err
	}
	if err := c.addNetns(n.Netns); err != nil {
		return n, err
	}
	// The node's uplink: eth0 in the node, n<i> on the underlay's bridge.
	peer := fmt.Sprintf("n%d", i)
	if err := netns.IP("link", "add", "eth0", "netns", n.Netns, "type", "veth", "peer", "name", peer, "netns", c.Underlay); err != nil {
		return n, err
	}
	for _, args := range [][]string{
		{"-n", c.Underlay, "link", "set", peer, "master", "br0", "up"},
		{"-n", n.Netns, "link", "set", "eth0", "up"},
	} {
		if err := netns.IP(args...); err != nil {
			return n, err
		}
	}
	return n, n.StartDaemons(ctx)
}

// Stop stops every daemon, removes every namespace and the run directory.
func (c *Cluster) Stop() {
	c.podsMu.Lock()
	for _, p := range c.pods {
		_ = netns.IP("netns", "del", p.Netns)
	}
	c.pods = nil
	c.podsMu.Unlock()
	for _, n := range c.Nodes {
		n.Stop()
	}
	if c.phys != nil {
		c.phys.tor.Stop()
	}
	for _, ns := range c.netns {
		_ = netns.IP("netns", "del", ns)
	}
	c.netns = nil
	_ = os.RemoveAll(c.Dir)
	if c.lock != nil {
		_ = c.lock.Close()
	}
}
