package dataplane

import (
	"strings"
	"testing"
	"time"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// OKEP-5094 "Rolling upgrade": while node2 still runs the old topology the
// upgraded zone keeps node2's remote switch port, adds the temporary
// stotr-/trtos- upgrade pair and the per-join-IP route; once every node
// reports 2.0, exactly those rows go and the result equals a fresh install.
func TestLayer2UpgradeMixedNodesThenFinal(t *testing.T) {
	e := newEnv(t)
	net, nodes := exampleV4()
	nodes[1].TopologyVersion = ""
	d, err := topology.Layer2Topology(net, nodes)
	if err != nil {
		t.Fatal(err)
	}
	e.apply(d)

	upgradeSwitchPort := "stotr-" + sw + "-upgrade"
	upgradeRouterPort := "trtos-" + sw + "-upgrade"
	wantRows(t, "Logical_Switch_Port", e.rows("Logical_Switch_Port", "type", "addresses", "options"), map[string]string{
		"stotr-" + sw:           "router,router,router-port=" + rtos,
		"stor-" + sw + "_node2": "remote,0a:58:64:41:00:03 100.65.0.3/16,requested-chassis=5e1f0c1a-node2 requested-tnl-key=5",
		upgradeSwitchPort:       "router,router,requested-tnl-key=4 router-port=" + upgradeRouterPort,
	})
	wantRows(t, "Logical_Router_Port", e.rows("Logical_Router_Port", "mac", "networks", "peer", "options"), map[string]string{
		rtos:              "0a:58:cb:cb:00:01,203.203.0.1/24,,gateway_mtu=1400 requested-tnl-key=1",
		"trtor-" + gr1:    "0a:58:64:58:00:04,100.88.0.4/31,rtotr-" + gr1 + ",requested-tnl-key=12",
		"trtor-" + gr3:    "0a:58:64:58:00:08,100.88.0.8/31,,requested-chassis=5e1f0c1a-node3 requested-tnl-key=14",
		"rtotr-" + gr1:    "0a:58:64:41:00:02,100.65.0.2/16 100.88.0.5/31,trtor-" + gr1 + ",gateway_mtu=1400",
		upgradeRouterPort: "0a:58:64:41:00:02,100.65.255.254/16,,",
	})
	wantLines(t, "transit router routes during the upgrade", e.nbctl("lr-route-list", tr),
		"IPv4 Routes", "Route Table <main>:",
		"100.65.0.2 100.88.0.5 dst-ip",
		"100.65.0.3 100.65.0.3 dst-ip",
		"100.65.0.4 100.88.0.9 dst-ip",
		"203.203.0.0/24 100.88.0.5 src-ip",
	)
	if ops := e.apply(d); ops != 0 {
		t.Errorf("second apply during the upgrade sent %d operations, want 0", ops)
	}

	// node2 reports 2.0: the temporary rows go, node2 gets its transit router port.
	nodes[1].TopologyVersion = ovnk.Layer2TopologyVersionTransitRouter
	d, err = topology.Layer2Topology(net, nodes)
	if err != nil {
		t.Fatal(err)
	}
	e.apply(d)
	ports := e.rows("Logical_Router_Port", "mac", "networks", "peer", "options")
	switchPorts := e.rows("Logical_Switch_Port", "type", "addresses", "options")
	routes := e.nbctl("lr-route-list", tr)

	fresh := newEnv(t)
	fresh.apply(d)
	wantRows(t, "Logical_Router_Port after the upgrade", ports, fresh.rows("Logical_Router_Port", "mac", "networks", "peer", "options"))
	wantRows(t, "Logical_Switch_Port after the upgrade", switchPorts, fresh.rows("Logical_Switch_Port", "type", "addresses", "options"))
	wantLines(t, "transit router routes after the upgrade", routes, lines(fresh.nbctl("lr-route-list", tr))...)
	if _, ok := ports["trtor-"+gr2]; !ok {
		t.Error("node2 has no transit router port after reporting 2.0")
	}
	if ops := e.apply(d); ops != 0 {
		t.Errorf("second apply after the upgrade sent %d operations, want 0", ops)
	}
}

// A local node that still runs pods keeps the old topology: nothing is computed,
// so nothing is written.
func TestLayer2LocalNodeWithPodsDoesNotSwitch(t *testing.T) {
	net, nodes := exampleV4()
	nodes[0].TopologyVersion, nodes[0].RunningPods = "", 1
	if _, err := topology.Layer2Topology(net, nodes); err == nil {
		t.Fatal("a local node with running pods switched topology")
	}
	if !topology.Layer2NodeCanSwitch(topology.Layer2Node{RunningPods: 0}) || topology.Layer2NodeCanSwitch(topology.Layer2Node{RunningPods: 2}) ||
		!topology.Layer2NodeCanSwitch(topology.Layer2Node{RunningPods: 2, TopologyVersion: "2.0"}) {
		t.Error("Layer2NodeCanSwitch: a node switches exactly when it has no running pods or already runs 2.0")
	}
}

// Dual stack during the upgrade: the upgrade port carries the dummy join IP of
// both families (the join subnets' last usable addresses) and the old node's
// join IPs of both families are routed to themselves; ovn-northd accepts it.
func TestLayer2UpgradeDualStackAcceptedByNorthd(t *testing.T) {
	e := newEnv(t)
	e.startNorthd()
	net, nodes := exampleV4()
	net.Subnets = append(net.Subnets, pfx("2010:100:200::/60"))
	net.JoinSubnets = append(net.JoinSubnets, pfx("fd99::/64"))
	net.MasqueradeIPs = append(net.MasqueradeIPs, addr("fd69::c"))
	net.MasqueradeBits = map[int]int{4: 17, 6: 112}
	nodes[2].TopologyVersion = ""
	e.apply(mustLayer2(t, net, nodes))
	ports := e.rows("Logical_Router_Port", "mac", "networks")
	if got := ports["trtos-"+sw]; got != "0a:58:cb:cb:00:01,169.254.0.12/17 2010:100:200::1/60 203.203.0.1/24 fd69::c/112" {
		t.Errorf("trtos- port during the upgrade = %q, want the gateway IPs and the management masquerade IPs", got)
	}
	if got := ports["trtos-"+sw+"-upgrade"]; got != "0a:58:64:41:00:02,100.65.255.254/16 fd99::ffff:ffff:ffff:fffe/64" {
		t.Errorf("upgrade port = %q", got)
	}
	if got := e.rows("Logical_Switch_Port", "addresses")["stor-"+sw+"_node3"]; got != "0a:58:64:41:00:04 100.65.0.4/16 fd99::4/64" {
		t.Errorf("old node's remote port addresses = %q", got)
	}
	wantLines(t, "IPv6 transit router routes", e.nbctl("lr-route-list", tr),
		"IPv4 Routes", "Route Table <main>:",
		"100.65.0.2 100.88.0.5 dst-ip", "100.65.0.3 100.88.0.7 dst-ip", "100.65.0.4 100.65.0.4 dst-ip",
		"203.203.0.0/24 100.88.0.5 src-ip",
		"IPv6 Routes", "Route Table <main>:",
		"fd99::2 fd97::5 dst-ip", "fd99::3 fd97::7 dst-ip", "fd99::4 fd99::4 dst-ip",
		"2010:100:200::/60 fd97::5 src-ip",
	)
	e.nbctl("--timeout=60", "--wait=sb", "sync")
	bindings := e.sbctl("--columns=logical_port,type", "--format=csv", "--data=bare", "--no-headings", "list", "Port_Binding")
	for _, want := range []string{"stotr-" + sw + "-upgrade,patch", "trtos-" + sw + "-upgrade,patch", "stor-" + sw + "_node3,remote"} {
		if !strings.Contains(bindings, want) {
			t.Errorf("no Port_Binding %q; have:\n%s", want, bindings)
		}
	}
}

// A row with no external_ids that the piece adopts (OVN-Kubernetes writes a
// node's management port so) is adopted when another client writes it
// after the client connected, as when it was in the monitor's initial
// dump: the Apply takes the same row over (its UUID kept) instead of
// inserting a second port of its name, which the server refuses.
func TestAdoptsLegacyRowWrittenAfterConnect(t *testing.T) {
	e := newEnv(t)
	const mgmt = "k8s-node1"
	owner := rows.Owner{Network: "adopt", Topology: base.TopologyLayer2, Piece: base.PieceTransitRouter, AdoptLegacy: true,
		Legacy: func(row any) bool { p, ok := row.(*nbdb.LogicalSwitchPort); return ok && p.Name == mgmt }}
	d := func(ports ...nbdb.LogicalSwitchPort) *rows.Desired {
		return &rows.Desired{Owner: owner, Switches: []rows.Switch{{Row: nbdb.LogicalSwitch{Name: "adopt_sw"}, Ports: ports}}}
	}
	e.apply(d())
	e.nbctl("lsp-add", "adopt_sw", mgmt, "--", "lsp-set-addresses", mgmt, "0a:58:0a:00:00:02 10.0.0.2")
	legacy := e.nbctl("--bare", "--columns=_uuid", "find", "Logical_Switch_Port", "name="+mgmt)
	if legacy == "" {
		t.Fatal("fixture: no legacy management port")
	}
	// Not e.apply: its settle looks every unlinked row up, as no plan does.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, m, _ := e.c.eng.NB.Cache().Table(nbdb.LogicalSwitchPortTable).RowByModel(&nbdb.LogicalSwitchPort{Name: mgmt}); m != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the client's cache never showed the legacy port")
		}
	}
	if _, err := e.c.Apply(e.ctx, d(nbdb.LogicalSwitchPort{Name: mgmt, Addresses: []string{"0a:58:0a:00:00:03 10.0.0.3"}})); err != nil {
		t.Fatalf("Apply over the legacy port written after connect: %v", err)
	}
	if got := e.nbctl("--bare", "--columns=_uuid", "find", "Logical_Switch_Port", "name="+mgmt); got != legacy {
		t.Fatalf("the management port is row %q, want the legacy row %s adopted", got, legacy)
	}
	if got := e.nbctl("get", "Logical_Switch_Port", mgmt, "addresses", "external_ids:"+ovnk.ExternalIDPiece); got != "[\"0a:58:0a:00:00:03 10.0.0.3\"]\n"+base.PieceTransitRouter {
		t.Errorf("the adopted port's addresses and piece: %q", got)
	}
	if n := e.apply(d(nbdb.LogicalSwitchPort{Name: mgmt, Addresses: []string{"0a:58:0a:00:00:03 10.0.0.3"}})); n != 0 {
		t.Errorf("a second Apply sent %d operations, want 0", n)
	}
}
