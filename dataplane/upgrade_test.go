package dataplane

import (
	"strings"
	"testing"

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
	d, err := Layer2Topology(net, nodes)
	if err != nil {
		t.Fatal(err)
	}
	e.apply(d)

	upgradeSwitchPort := "stotr-" + sw + "-upgrade"
	upgradeRouterPort := "trtos-" + sw + "-upgrade"
	wantRows(t, "Logical_Switch_Port", e.rows("Logical_Switch_Port", "type", "addresses", "options"), map[string]string{
		"stor-" + tr:      "router,router,router-port=" + rtos,
		"stor-" + gr2:     "remote,0a:58:64:41:00:03 100.65.0.3/16,requested-chassis=node2 requested-tnl-key=5",
		upgradeSwitchPort: "router,router,requested-tnl-key=4 router-port=" + upgradeRouterPort,
	})
	wantRows(t, "Logical_Router_Port", e.rows("Logical_Router_Port", "mac", "networks", "peer", "options"), map[string]string{
		rtos:              "0a:58:cb:cb:00:01,203.203.0.1/24,,",
		"trtor-" + gr1:    "0a:58:64:58:00:04,100.88.0.4/31,rtotr-" + gr1 + ",requested-tnl-key=2",
		"trtor-" + gr3:    "0a:58:64:58:00:08,100.88.0.8/31,,requested-chassis=node3 requested-tnl-key=4",
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
	d, err = Layer2Topology(net, nodes)
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

// A local node that still runs pods keeps the old topology. In its own zone
// (OVN-Kubernetes' zone per node) nothing is written: its old gateway router
// holds the gateway address on the switch. In a zone that also has an
// upgraded local node, that node gets the upgrade pair and the old node's
// join IP is routed to itself, with no remote port (its switch port is its
// GR's); once it drains and reports 2.0 the upgrade rows go.
func TestLayer2LocalNodeWithPodsKeepsOldTopology(t *testing.T) {
	if !Layer2NodeCanSwitch(Layer2Node{RunningPods: 0}) || Layer2NodeCanSwitch(Layer2Node{RunningPods: 2}) ||
		!Layer2NodeCanSwitch(Layer2Node{RunningPods: 2, TopologyVersion: "2.0"}) {
		t.Error("Layer2NodeCanSwitch: a node switches exactly when it has no running pods or already runs 2.0")
	}
	e := newEnv(t)
	net, nodes := exampleV4()
	nodes[0].TopologyVersion, nodes[0].RunningPods = "", 1
	if ops := e.apply(mustLayer2(t, net, nodes)); ops != 0 || e.nbctl("show") != "" {
		t.Fatalf("the zone of an undrained node got rows (%d operations):\n%s", ops, e.nbctl("show"))
	}

	// node2 joins this zone (a centralized zone of two) and has drained.
	nodes[1].Local = true
	e.apply(mustLayer2(t, net, nodes))
	upgradeSwitchPort, upgradeRouterPort := "stotr-"+sw+"-upgrade", "trtos-"+sw+"-upgrade"
	wantRows(t, "Logical_Switch_Port", e.rows("Logical_Switch_Port", "type", "addresses", "options"), map[string]string{
		"stor-" + tr:      "router,router,router-port=" + rtos,
		upgradeSwitchPort: "router,router,requested-tnl-key=5 router-port=" + upgradeRouterPort,
	})
	ports := e.rows("Logical_Router_Port", "mac", "networks", "peer")
	if got, want := ports[upgradeRouterPort], "0a:58:64:41:00:03,100.65.255.254/16,"; got != want {
		t.Errorf("upgrade router port = %q, want %q (node2's GR MAC)", got, want)
	}
	if _, ok := ports["trtor-"+gr1]; ok {
		t.Error("the undrained node1 got a transit router port")
	}
	if _, ok := ports["rtotr-"+gr1]; ok {
		t.Error("the undrained node1's gateway router was programmed")
	}
	wantLines(t, "transit router routes", e.nbctl("lr-route-list", tr),
		"IPv4 Routes", "Route Table <main>:",
		"100.65.0.2 100.65.0.2 dst-ip",
		"100.65.0.3 100.88.0.7 dst-ip",
		"100.65.0.4 100.88.0.9 dst-ip",
		"203.203.0.0/24 100.88.0.7 src-ip",
	)

	// node1 drains: the upgrade rows go.
	nodes[0].RunningPods = 0
	e.apply(mustLayer2(t, net, nodes))
	ports = e.rows("Logical_Router_Port", "mac")
	if _, ok := ports[upgradeRouterPort]; ok {
		t.Error("the upgrade router port stayed after every node moved")
	}
	if _, ok := e.rows("Logical_Switch_Port", "type")[upgradeSwitchPort]; ok {
		t.Error("the upgrade switch port stayed after every node moved")
	}
	if _, ok := ports["trtor-"+gr1]; !ok {
		t.Error("node1 has no transit router port after draining")
	}

	// Two upgraded local nodes cannot share one upgrade pair while a node is old.
	nodes[2].TopologyVersion = ""
	if _, err := Layer2Topology(net, nodes); err == nil || !strings.Contains(err.Error(),
		"the upgrade topology supports one upgraded local node per zone (OVN-Kubernetes runs a zone per node), got 2 while 1 nodes still run the old topology") {
		t.Errorf("err = %v", err)
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
	nodes[2].TopologyVersion = ""
	e.apply(mustLayer2(t, net, nodes))
	ports := e.rows("Logical_Router_Port", "mac", "networks")
	if got := ports["trtos-"+sw+"-upgrade"]; got != "0a:58:64:41:00:02,100.65.255.254/16 fd99::ffff:ffff:ffff:fffe/64" {
		t.Errorf("upgrade port = %q", got)
	}
	if got := e.rows("Logical_Switch_Port", "addresses")["stor-"+gr3]; got != "0a:58:64:41:00:04 100.65.0.4/16 fd99::4/64" {
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
	for _, want := range []string{"stotr-" + sw + "-upgrade,patch", "trtos-" + sw + "-upgrade,patch", "stor-" + gr3 + ",remote"} {
		if !strings.Contains(bindings, want) {
			t.Errorf("no Port_Binding %q; have:\n%s", want, bindings)
		}
	}
}
