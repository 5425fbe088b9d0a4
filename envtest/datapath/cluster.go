package datapath

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/udnkit/udnkit/dataplane/ovsdbserver"
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
// ovn-controller, and its OVN zone.
type Node struct {
	Name string
	// Netns is the node's network namespace.
	Netns string
	// UnderlayIP is the node's address on breth0: its geneve encap IP.
	UnderlayIP netip.Addr
	// UnderlayIP6 is the node's IPv6 address on breth0.
	UnderlayIP6 netip.Addr
	// Zone is the node's OVN zone: Northbound, Southbound and ovn-northd.
	Zone *ovsdbserver.Local

	dir     string
	procs   []*proc
	chassis string
	// steered are the OpenFlow numbers of the gateway routers' patch
	// ports SteerGateway steers breth0's traffic to.
	steered []string
}

// ChassisID is the name of the chassis the node's ovn-controller registered
// (its Open_vSwitch external_ids:system-id, a UUID), which the node's
// k8s.ovn.org/node-chassis-id annotation carries; "" until Start has seen
// the chassis in the node's zone.
func (n *Node) ChassisID() string { return n.chassis }

// env points Open vSwitch's and OVN's programs at the node's run directory.
func (n *Node) env() []string {
	return []string{"OVS_RUNDIR=" + n.dir, "OVS_LOGDIR=" + n.dir, "OVS_DBDIR=" + n.dir,
		"OVN_RUNDIR=" + n.dir, "OVN_LOGDIR=" + n.dir}
}

// Vsctl runs ovs-vsctl on the node's Open_vSwitch database.
func (n *Node) Vsctl(args ...string) (string, error) {
	return run("", n.env(), append([]string{"ovs-vsctl", "--timeout=30", "--db=unix:" + n.db()}, args...)...)
}

func (n *Node) db() string { return filepath.Join(n.dir, "db.sock") }

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
	External Endpoint

	lock  *os.File
	pods  []*Pod
	netns []string // every namespace created, removed by Stop
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
	if err := ip("netns", "add", name); err != nil {
		return fmt.Errorf("the cluster needs permission to create network namespaces (root, or CAP_SYS_ADMIN and CAP_NET_ADMIN): %w", err)
	}
	return ip("netns", "del", name)
}

// Start sweeps what earlier runs left behind and starts a cluster of nodes
// named names, each its own OVN zone, joined by the underlay; every zone's
// Southbound knows the other nodes' chassis. On error, everything started is
// stopped again.
func Start(ctx context.Context, names ...string) (c *Cluster, err error) {
	if _, err := SetupTools(); err != nil {
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
	if err := ip("-n", c.Underlay, "link", "add", "br0", "type", "bridge"); err != nil {
		return c, err
	}
	if err := ip("-n", c.Underlay, "link", "set", "br0", "up"); err != nil {
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
		if err := n.waitChassis(ctx); err != nil {
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
	if err := ip("netns", "add", name); err != nil {
		return err
	}
	c.netns = append(c.netns, name)
	return ip("-n", name, "link", "set", "lo", "up")
}

// startExternal creates the external host on the underlay.
func (c *Cluster) startExternal() error {
	c.External = Endpoint{Netns: c.name("external"), Label: "the external host"}
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
		if err := ip(args...); err != nil {
			return err
		}
	}
	return txChecksumOff(c.External.Netns, "eth0")
}

// startNode starts node i: its zone, its namespace linked to the underlay,
// its Open_vSwitch database, ovs-vswitchd with breth0 holding the underlay
// address, and ovn-controller configured as ovnkube-node configures it.
func (c *Cluster) startNode(ctx context.Context, i int, name string) (*Node, error) {
	tools, _ := SetupTools()
	n := &Node{Name: name, Netns: c.name(name), dir: filepath.Join(c.Dir, name)}
	n.UnderlayIP = ovnk.MustAddrAt(Underlay, uint64(10+i))
	n.UnderlayIP6 = ovnk.MustAddrAt(Underlay6, uint64(10+i))
	zone, err := ovsdbserver.StartLocal(ctx, filepath.Join(n.dir, "zone"))
	if err != nil {
		return nil, err
	}
	n.Zone = zone
	if err := c.addNetns(n.Netns); err != nil {
		return n, err
	}
	// The node's uplink: eth0 in the node, n<i> on the underlay's bridge.
	peer := fmt.Sprintf("n%d", i)
	if err := ip("link", "add", "eth0", "netns", n.Netns, "type", "veth", "peer", "name", peer, "netns", c.Underlay); err != nil {
		return n, err
	}
	for _, args := range [][]string{
		{"-n", c.Underlay, "link", "set", peer, "master", "br0", "up"},
		{"-n", n.Netns, "link", "set", "eth0", "up"},
	} {
		if err := ip(args...); err != nil {
			return n, err
		}
	}
	conf := filepath.Join(n.dir, "conf.db")
	if _, err := run("", nil, "ovsdb-tool", "create", conf, tools.VSwitchSchema); err != nil {
		return n, err
	}
	p, err := spawn(n.dir, n.Netns, "ovsdb-server", n.env(), "ovsdb-server", conf,
		"--remote=punix:"+n.db(), "--unixctl="+filepath.Join(n.dir, "ovsdb-server.ctl"),
		"--log-file="+filepath.Join(n.dir, "ovsdb-server.log"), "--no-chdir", "-vconsole:off")
	if err != nil {
		return n, err
	}
	n.procs = append(n.procs, p)
	if err := waitFor(ctx, 20*time.Second, "the Open_vSwitch database", p, func() error {
		_, err := run("", nil, "ovs-vsctl", "--db=unix:"+n.db(), "--no-wait", "init")
		return err
	}); err != nil {
		return n, err
	}
	p, err = spawn(n.dir, n.Netns, "ovs-vswitchd", n.env(), "ovs-vswitchd", "unix:"+n.db(), "--disable-system",
		"--unixctl="+filepath.Join(n.dir, "ovs-vswitchd.ctl"),
		"--log-file="+filepath.Join(n.dir, "ovs-vswitchd.log"), "--no-chdir", "-vconsole:off")
	if err != nil {
		return n, err
	}
	n.procs = append(n.procs, p)
	// ovnkube-node's settings (pkg/node/default_node_network_controller.go):
	// geneve from the node's encap IP, the node an interconnect gateway, the
	// tunnel's local IP set; the netdev datapath and the physnet bridge
	// mapping as OVN-Kubernetes' gateway sets them on breth0.
	if _, err := n.Vsctl("--may-exist", "add-br", "breth0", "--", "set", "Bridge", "breth0", "datapath_type=netdev",
		"--", "--may-exist", "add-port", "breth0", "eth0",
		"--", "set", "Open_vSwitch", ".",
		"external_ids:system-id="+ChassisID(n.Name),
		"external_ids:hostname="+n.Name,
		"external_ids:ovn-remote="+n.Zone.SB.Address(),
		"external_ids:ovn-encap-type=geneve",
		"external_ids:ovn-encap-ip="+n.UnderlayIP.String(),
		"external_ids:ovn-is-interconn=true",
		`external_ids:ovn-set-local-ip="true"`,
		"external_ids:ovn-bridge-datapath-type=netdev",
		"external_ids:ovn-bridge-mappings=physnet:breth0"); err != nil {
		return n, err
	}
	for _, args := range [][]string{
		{"-n", n.Netns, "addr", "add", netip.PrefixFrom(n.UnderlayIP, Underlay.Bits()).String(), "dev", "breth0"},
		{"-n", n.Netns, "addr", "add", netip.PrefixFrom(n.UnderlayIP6, Underlay6.Bits()).String(), "dev", "breth0", "nodad"},
		{"-n", n.Netns, "link", "set", "breth0", "up"},
	} {
		if err := ip(args...); err != nil {
			return n, err
		}
	}
	p, err = spawn(n.dir, n.Netns, "ovn-controller", n.env(), "ovn-controller", "unix:"+n.db(),
		"--unixctl="+filepath.Join(n.dir, "ovn-controller.ctl"),
		"--log-file="+filepath.Join(n.dir, "ovn-controller.log"), "--no-chdir", "-vconsole:off")
	if err != nil {
		return n, err
	}
	n.procs = append(n.procs, p)
	return n, nil
}

// waitChassis waits until the node's ovn-controller has registered its
// chassis in its zone and created br-int, and records the chassis' name.
func (n *Node) waitChassis(ctx context.Context) error {
	return waitFor(ctx, 60*time.Second, "ovn-controller's chassis on "+n.Name, n.procs[len(n.procs)-1], func() error {
		id, err := n.readChassisID()
		if err != nil {
			return err
		}
		if _, err = n.Vsctl("br-exists", "br-int"); err != nil {
			return err
		}
		n.chassis = id
		return nil
	})
}

// BridgeMAC is the MAC of the node's breth0: OVN-Kubernetes gives a gateway
// router's external port this MAC (l3-gateway-config's mac-address).
func (n *Node) BridgeMAC() (string, error) {
	out, err := run("", nil, "ip", "-n", n.Netns, "-br", "link", "show", "breth0")
	if err != nil {
		return "", err
	}
	f := strings.Fields(out)
	if len(f) < 3 {
		return "", fmt.Errorf("ip -br link show breth0 in %s: %q", n.Netns, out)
	}
	return f[2], nil
}

// SteerGateway installs on breth0 the flows ovnkube-node's shared gateway
// keeps there (pkg/node/gateway_shared_intf.go) for one gateway router's
// localnet port: the router's external port shares the node's IP and
// breth0's MAC with the host (and with the other networks' gateway
// routers), so connection tracking tells their traffic apart, as upstream
// does with one ct_mark per network. What leaves the router is committed
// with the mark of its patch port (the port's number) and sent out eth0; IP
// arriving on eth0 for a connection of that mark goes back to that router,
// everything else to the host; ARP from eth0 goes to the host and every
// steered router (they answer with one MAC). It waits for ovn-controller to
// create the localnet's patch port.
func (n *Node) SteerGateway(ctx context.Context, localnetPort string) error {
	// OpenFlow names ports with at most 15 characters: the patch port's
	// flows use its number.
	name, patch := "patch-"+localnetPort+"-to-br-int", ""
	if err := waitFor(ctx, 30*time.Second, "patch port "+name, nil, func() error {
		out, err := n.Vsctl("--if-exists", "get", "Interface", name, "ofport")
		if err == nil && (out == "" || out == "-1" || out == "[]") {
			err = errors.New("no patch port yet")
		}
		patch = out
		return err
	}); err != nil {
		return err
	}
	if !slices.Contains(n.steered, patch) {
		n.steered = append(n.steered, patch)
	}
	arp := "priority=10,in_port=eth0,arp,actions=output:LOCAL"
	for _, p := range n.steered {
		arp += ",output:" + p
	}
	// Neighbour discovery from eth0 (solicitations and advertisements)
	// goes where ARP goes.
	nd := strings.Replace(arp, ",arp,", ",icmp6,icmp_type=135,", 1)
	nd = strings.Replace(nd, "priority=10,", "priority=60,", 1)
	flows := []string{arp, nd, strings.Replace(nd, "icmp_type=135", "icmp_type=136", 1),
		"table=1,priority=0,actions=output:LOCAL"}
	for _, proto := range []string{"ip", "ipv6"} {
		flows = append(flows,
			"priority=100,in_port="+patch+","+proto+",actions=ct(commit,zone=64000,exec(set_field:"+patch+"->ct_mark)),output:eth0",
			"priority=50,in_port=eth0,"+proto+",actions=ct(zone=64000,table=1)",
			"table=1,priority=100,ct_state=+trk+est,ct_mark="+patch+","+proto+",actions=output:"+patch,
			"table=1,priority=100,ct_state=+trk+rel,ct_mark="+patch+","+proto+",actions=output:"+patch)
	}
	for _, f := range flows {
		if _, err := run("", n.env(), "ovs-ofctl", "add-flow", "unix:"+filepath.Join(n.dir, "breth0.mgmt"), f); err != nil {
			return err
		}
	}
	return nil
}

// Host is the node's own network stack (its namespace), where the node IP
// and management ports live.
func (n *Node) Host() *Endpoint {
	return &Endpoint{Netns: n.Netns, Label: "node " + n.Name}
}

// AddManagementPort gives the node a management port as ovnkube-node
// creates it: an OVS internal port iface on br-int bound to logical switch
// port port (external_ids:iface-id), kept in the node's namespace with mac
// and addrs, and routes ("DEST via NEXTHOP") through it. It returns once
// ovn-controller has installed the port's flows.
func (n *Node) AddManagementPort(ctx context.Context, iface, port, mac string, addrs []netip.Prefix, routes [][2]string) error {
	if err := n.addPortInto(ctx, iface, port, ""); err != nil {
		return err
	}
	cmds := [][]string{{"-n", n.Netns, "link", "set", iface, "address", mac, "up"}}
	for _, a := range addrs {
		cmds = append(cmds, []string{"-n", n.Netns, "addr", "add", a.String(), "dev", iface})
	}
	for _, r := range routes {
		cmds = append(cmds, []string{"-n", n.Netns, "route", "add", r[0], "via", r[1], "dev", iface})
	}
	for _, args := range cmds {
		if err := ip(args...); err != nil {
			return err
		}
	}
	return n.waitInstalled(ctx, iface, port)
}

// waitInstalled waits until ovn-controller has bound port to iface and
// installed its flows (external_ids:ovn-installed, which OVN-Kubernetes' CNI
// waits for too).
func (n *Node) waitInstalled(ctx context.Context, iface, port string) error {
	err := waitFor(ctx, 30*time.Second, "ovn-installed on "+iface, nil, func() error {
		out, err := n.Vsctl("--if-exists", "get", "Interface", iface, "external_ids:ovn-installed")
		if err != nil {
			return err
		}
		if strings.Trim(out, `"`) != "true" {
			return fmt.Errorf("logical port %s not bound on %s", port, n.Name)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w\n%s", err, n.portDiagnosis(iface, port))
	}
	return nil
}

// portDiagnosis is what tells why a port is not bound: its Interface row,
// its Port_Binding and the node's chassis in the node's zone, and the tail
// of the zone's ovn-northd log.
func (n *Node) portDiagnosis(iface, port string) string {
	var b strings.Builder
	out, err := n.Vsctl("list", "Interface", iface)
	fmt.Fprintf(&b, "== %s: ovs-vsctl list Interface %s\n%s%v\n", n.Name, iface, out, errOrEmpty(err))
	for _, args := range [][]string{
		{"find", "Port_Binding", "logical_port=" + port},
		{"list", "Chassis"},
		{"list", "Chassis_Private"},
	} {
		out, err := n.SB().Run(args...)
		fmt.Fprintf(&b, "== %s's zone: ovn-sbctl %s\n%s%v\n", n.Name, strings.Join(args, " "), out, errOrEmpty(err))
	}
	data, _ := os.ReadFile(filepath.Join(n.dir, "zone", "ovn-northd.log"))
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	fmt.Fprintf(&b, "== %s's zone: ovn-northd.log\n%s\n", n.Name, strings.Join(lines[max(0, len(lines)-15):], "\n"))
	return b.String()
}

func errOrEmpty(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Logs returns the tails of the node's daemon logs, for a failed test's
// report.
func (n *Node) Logs(lines int) string {
	var b strings.Builder
	for _, name := range []string{"ovn-controller.log", "ovs-vswitchd.log"} {
		data, _ := os.ReadFile(filepath.Join(n.dir, name))
		all := strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(all) > lines {
			all = all[len(all)-lines:]
		}
		fmt.Fprintf(&b, "== %s %s\n%s\n", n.Name, name, strings.Join(all, "\n"))
	}
	return b.String()
}

// Stop stops every daemon, removes every namespace and the run directory.
func (c *Cluster) Stop() {
	for _, p := range c.pods {
		_ = ip("netns", "del", p.Netns)
	}
	c.pods = nil
	for _, n := range c.Nodes {
		for i := len(n.procs) - 1; i >= 0; i-- {
			n.procs[i].stop()
		}
		n.procs = nil
		if n.Zone != nil {
			n.Zone.Stop()
		}
	}
	for _, ns := range c.netns {
		_ = ip("netns", "del", ns)
	}
	c.netns = nil
	_ = os.RemoveAll(c.Dir)
	if c.lock != nil {
		_ = c.lock.Close()
	}
}

// waitFor polls ok every 50 ms until it succeeds, p exits or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, what string, p *proc, ok func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := ok()
		if err == nil {
			return nil
		}
		if p != nil {
			if exit := p.exited(); exit != nil {
				return fmt.Errorf("waiting for %s: %w", what, exit)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %v)", what, ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
