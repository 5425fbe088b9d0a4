// Package node runs one node of the real-datapath cluster: in the node's
// network namespace its own Open_vSwitch database, ovs-vswitchd on the
// userspace datapath (datapath_type=netdev) with breth0 holding the node's
// underlay addresses, and ovn-controller bound to the node's own OVN zone
// (a Northbound, a Southbound and ovn-northd), configured as ovnkube-node
// configures it; and a switch outside the nodes (StartSwitch), an Open
// vSwitch of its own for the physical network's VLANs. The package
// envtest/datapath joins the nodes into a cluster.
package node

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/udnkit/udnkit/dataplane/ovsdbserver"
	"github.com/udnkit/udnkit/envtest/datapath/netns"
	"github.com/udnkit/udnkit/internal/testobj/ovnkrows"
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
	cfg     Config
	procs   []*netns.Proc
	chassis string
	// steered are the gateway routers' localnet ports SteerGateway
	// steers breth0's traffic to, in the order steered.
	steered []steered
	// mac is breth0's MAC once pinned.
	mac string
}

// ChassisID is the name of the chassis the node's ovn-controller registered
// (its Open_vSwitch external_ids:system-id, a UUID), which the node's
// k8s.ovn.org/node-chassis-id annotation carries; "" until WaitChassis has seen
// the chassis in the node's zone.
func (n *Node) ChassisID() string { return n.chassis }

// env points Open vSwitch's and OVN's programs at the node's run directory.
func (n *Node) env() []string {
	return []string{"OVS_RUNDIR=" + n.dir, "OVS_LOGDIR=" + n.dir, "OVS_DBDIR=" + n.dir,
		"OVN_RUNDIR=" + n.dir, "OVN_LOGDIR=" + n.dir}
}

// Vsctl runs ovs-vsctl on the node's Open_vSwitch database.
func (n *Node) Vsctl(args ...string) (string, error) {
	return netns.Run("", n.env(), append([]string{"ovs-vsctl", "--timeout=30", "--db=unix:" + n.db()}, args...)...)
}

func (n *Node) db() string { return filepath.Join(n.dir, "db.sock") }

// Config is where a node runs and what it is called.
type Config struct {
	Name string
	// Netns is the node's network namespace, which New does not create.
	Netns string
	// Dir holds the node's sockets, logs and databases.
	Dir string
	// SystemID is the node's Open vSwitch system-id: the name of the
	// chassis its ovn-controller registers.
	SystemID string
	// Underlay and Underlay6 are breth0's addresses with the underlay's
	// prefix length.
	Underlay, Underlay6 netip.Prefix
}

// New is the node cfg describes; StartZone and StartDaemons start it.
func New(cfg Config) *Node {
	return &Node{Name: cfg.Name, Netns: cfg.Netns, UnderlayIP: cfg.Underlay.Addr(), UnderlayIP6: cfg.Underlay6.Addr(),
		dir: cfg.Dir, cfg: cfg}
}

// StartZone starts the node's OVN zone: Northbound, Southbound and
// ovn-northd.
func (n *Node) StartZone(ctx context.Context) error {
	zone, err := ovsdbserver.StartLocal(ctx, filepath.Join(n.dir, "zone"))
	if err != nil {
		return err
	}
	n.Zone = zone
	return nil
}

// StartDaemons starts, in the node's namespace (whose eth0 is its uplink),
// its Open_vSwitch database, ovs-vswitchd with breth0 holding the underlay
// addresses, and ovn-controller configured as ovnkube-node configures it.
func (n *Node) StartDaemons(ctx context.Context) error {
	procs, err := startOVS(ctx, n.dir, n.Netns, n.env())
	n.procs = append(n.procs, procs...)
	if err != nil {
		return err
	}
	// ovnkube-node's settings (pkg/node/default_node_network_controller.go,
	// defaults from pkg/config/config.go): geneve from the node's encap IP,
	// the node an interconnect gateway, the whole Southbound monitored
	// (MonitorAll: no condition round trip when a datapath becomes local),
	// the logical-flow cache on, the tunnel's local IP set; the netdev
	// datapath and the physnet bridge mapping as OVN-Kubernetes' gateway
	// sets them on breth0.
	if _, err := n.Vsctl("--may-exist", "add-br", "breth0", "--", "set", "Bridge", "breth0", "datapath_type=netdev",
		"--", "--may-exist", "add-port", "breth0", "eth0",
		"--", "set", "Open_vSwitch", ".",
		"external_ids:system-id="+n.cfg.SystemID,
		"external_ids:hostname="+n.Name,
		"external_ids:ovn-remote="+n.Zone.SB.Address(),
		"external_ids:ovn-encap-type=geneve",
		"external_ids:ovn-encap-ip="+n.UnderlayIP.String(),
		"external_ids:ovn-is-interconn=true",
		"external_ids:ovn-monitor-all=true",
		"external_ids:ovn-ofctrl-wait-before-clear=0",
		"external_ids:ovn-enable-lflow-cache=true",
		`external_ids:ovn-set-local-ip="true"`,
		"external_ids:ovn-bridge-datapath-type=netdev",
		"external_ids:ovn-bridge-mappings=physnet:breth0"); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"-n", n.Netns, "addr", "add", n.cfg.Underlay.String(), "dev", "breth0"},
		{"-n", n.Netns, "addr", "add", n.cfg.Underlay6.String(), "dev", "breth0", "nodad"},
		{"-n", n.Netns, "link", "set", "breth0", "up"},
	} {
		if err := netns.IP(args...); err != nil {
			return err
		}
	}
	if err := n.pinBridgeMAC(); err != nil {
		return err
	}
	if err := n.installBaseFlows(); err != nil {
		return err
	}
	p, err := netns.Spawn(n.dir, n.Netns, "ovn-controller", n.env(), "ovn-controller", "unix:"+n.db(),
		"--unixctl="+filepath.Join(n.dir, "ovn-controller.ctl"),
		"--log-file="+filepath.Join(n.dir, "ovn-controller.log"), "--no-chdir", "-vconsole:off")
	if err != nil {
		return err
	}
	n.procs = append(n.procs, p)
	return nil
}

// Stop stops the node's daemons, the last started first, and its zone.
func (n *Node) Stop() {
	for i := len(n.procs) - 1; i >= 0; i-- {
		n.procs[i].Stop()
	}
	n.procs = nil
	if n.Zone != nil {
		n.Zone.Stop()
	}
}

// WaitChassis waits until the node's ovn-controller has registered its
// chassis in its zone and created br-int, and records the chassis' name.
func (n *Node) WaitChassis(ctx context.Context) error {
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

// Host is the node's own network stack (its namespace), where the node IP
// and management ports live.
func (n *Node) Host() *netns.Endpoint {
	return &netns.Endpoint{Netns: n.Netns, Label: "node " + n.Name}
}

// AddManagementPort gives the node a management port as ovnkube-node
// creates it: an OVS internal port iface on br-int bound to logical switch
// port port (external_ids:iface-id), kept in the node's namespace with mac
// and addrs, and routes ("DEST via NEXTHOP") through it. It returns once
// ovn-controller has installed the port's flows.
func (n *Node) AddManagementPort(ctx context.Context, iface, port, mac string, addrs []netip.Prefix, routes [][2]string) error {
	if err := n.AddPortInto(ctx, iface, port, ""); err != nil {
		return err
	}
	cmds := [][]string{{"-n", n.Netns, "link", "set", iface, "address", mac, "up"}}
	for _, a := range addrs {
		add := []string{"-n", n.Netns, "addr", "add", a.String(), "dev", iface}
		if a.Addr().Is6() {
			add = append(add, "nodad")
		}
		cmds = append(cmds, add)
	}
	for _, r := range routes {
		cmds = append(cmds, []string{"-n", n.Netns, "route", "add", r[0], "via", r[1], "dev", iface})
	}
	for _, args := range cmds {
		if err := netns.IP(args...); err != nil {
			return err
		}
	}
	return n.WaitInstalled(ctx, iface, port)
}

// WaitInstalled waits until ovn-controller has bound port to iface and
// installed its flows (external_ids:ovn-installed, which OVN-Kubernetes' CNI
// waits for too).
func (n *Node) WaitInstalled(ctx context.Context, iface, port string) error {
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

// waitFor polls ok every 50 ms until it succeeds, p exits or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, what string, p *netns.Proc, ok func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := ok()
		if err == nil {
			return nil
		}
		if p != nil {
			if exit := p.Exited(); exit != nil {
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

// AddPortInto adds an internal port iface to the node's br-int bound to
// logical switch port port (external_ids:iface-id, and the further column
// settings ids) and moves it into network namespace ns ("": it stays in
// the node's).
func (n *Node) AddPortInto(ctx context.Context, iface, port, ns string, ids ...string) error {
	if _, err := n.Vsctl(append([]string{"add-port", "br-int", iface, "--", "set", "Interface", iface, "type=internal",
		"external_ids:iface-id=" + port}, ids...)...); err != nil {
		return err
	}
	if err := waitFor(ctx, 10*time.Second, "interface "+iface, nil, func() error {
		return netns.IP("-n", n.Netns, "link", "show", iface)
	}); err != nil || ns == "" {
		return err
	}
	return netns.IP("-n", n.Netns, "link", "set", iface, "netns", ns)
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
	out, err := n.SB().Run("--bare", "--columns=encaps", "find", "Chassis", "name="+id)
	if err != nil {
		return "", err
	}
	if out == "" {
		return "", fmt.Errorf("no chassis %s in %s's zone yet", id, n.Name)
	}
	return id, nil
}

// NB is ovn-nbctl on the node's zone's Northbound.
func (n *Node) NB() ovnkrows.Ctl { return ovnkrows.NB(n.Zone.NB.Address()) }

// SB is ovn-sbctl on the node's zone's Southbound.
func (n *Node) SB() ovnkrows.Ctl { return ovnkrows.SB(n.Zone.SB.Address()) }

// Nbctl runs ovn-nbctl on the node's zone's Northbound.
func (n *Node) Nbctl(args ...string) (string, error) { return n.NB().Run(args...) }
