package dataplane

import (
	"net/netip"
	"strings"
	"testing"
)

var (
	pfx  = netip.MustParsePrefix
	addr = netip.MustParseAddr
)

// The OKEP-5094 example network: "test12_namespace-scoped" with subnet
// 203.203.0.0/24 and join subnet 100.65.0.0/16, three nodes with node IDs 2, 3
// and 4 (join IPs .2, .3, .4, as in the document). Transit peer subnets follow
// the document's chosen rule, offset 2·nodeID: node1 100.88.0.4/31 (as in the
// document); node2 .6/31 and node3 .8/31 (the document's table lists those two
// swapped, which contradicts both its rule and its join IPs).
func exampleV4() (Layer2Network, []Layer2Node) {
	net := Layer2Network{
		Name:                   "test12_namespace-scoped",
		Subnets:                []netip.Prefix{pfx("203.203.0.0/24")},
		JoinSubnets:            []netip.Prefix{pfx("100.65.0.0/16")},
		SwitchTunnelKey:        16711685,
		TransitRouterTunnelKey: 16715780,
		MTU:                    1400,
		MasqueradeIPs:          []netip.Addr{addr("169.254.0.12")},
	}
	return net, threeNodes()
}

func threeNodes() []Layer2Node {
	return []Layer2Node{
		{Name: "node1", ID: 2, Local: true, TopologyVersion: "2.0", NodeIPs: nil, LegacyTunnelKey: 4},
		{Name: "node2", ID: 3, TopologyVersion: "2.0", LegacyTunnelKey: 5},
		{Name: "node3", ID: 4, TopologyVersion: "2.0", LegacyTunnelKey: 6},
	}
}

const (
	sw   = "test12_namespace.scoped_ovn_layer2_switch"
	tr   = "test12_namespace.scoped_transit_router"
	gr1  = "GR_test12_namespace.scoped_node1"
	gr2  = "GR_test12_namespace.scoped_node2"
	gr3  = "GR_test12_namespace.scoped_node3"
	rtos = "rtos-" + sw
)

func TestLayer2TopologyIPv4ThreeNodes(t *testing.T) {
	e := newEnv(t)
	net, nodes := exampleV4()
	nodes[0].NodeIPs = []netip.Addr{addr("172.18.0.3")}
	d, err := Layer2Topology(net, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if ops := e.apply(d); ops == 0 {
		t.Fatal("first apply sent no operations")
	}

	wantRows(t, "Logical_Router", e.rows("Logical_Router", "options"), map[string]string{
		tr:  "requested-tnl-key=16715780",
		gr1: "always_learn_from_arp_request=false chassis=node1 dynamic_neigh_routers=true",
	})
	wantRows(t, "Logical_Router_Port", e.rows("Logical_Router_Port", "mac", "networks", "peer", "options"), map[string]string{
		rtos:           "0a:58:cb:cb:00:01,203.203.0.1/24,,",
		"trtor-" + gr1: "0a:58:64:58:00:04,100.88.0.4/31,rtotr-" + gr1 + ",requested-tnl-key=2",
		"trtor-" + gr2: "0a:58:64:58:00:06,100.88.0.6/31,,requested-chassis=node2 requested-tnl-key=3",
		"trtor-" + gr3: "0a:58:64:58:00:08,100.88.0.8/31,,requested-chassis=node3 requested-tnl-key=4",
		"rtotr-" + gr1: "0a:58:64:41:00:02,100.65.0.2/16 100.88.0.5/31,trtor-" + gr1 + ",gateway_mtu=1400",
	})
	wantRows(t, "Logical_Switch", e.rows("Logical_Switch", "other_config"), map[string]string{
		sw: "requested-tnl-key=16711685",
	})
	wantRows(t, "Logical_Switch_Port", e.rows("Logical_Switch_Port", "type", "addresses", "options"), map[string]string{
		"stor-" + tr: "router,router,router-port=" + rtos,
	})
	wantLines(t, "transit router routes", e.nbctl("lr-route-list", tr),
		"IPv4 Routes",
		"Route Table <main>:",
		"100.65.0.2 100.88.0.5 dst-ip",
		"100.65.0.3 100.88.0.7 dst-ip",
		"100.65.0.4 100.88.0.9 dst-ip",
		"203.203.0.0/24 100.88.0.5 src-ip",
	)
	wantLines(t, "gateway router routes", e.nbctl("lr-route-list", gr1),
		"IPv4 Routes",
		"Route Table <main>:",
		"203.203.0.0/24 100.88.0.4 dst-ip rtotr-"+gr1,
	)
	wantLines(t, "transit router policies", e.nbctl("lr-policy-list", tr),
		"Routing Policies",
		`1004 inport == "`+rtos+`" && ip4.dst == 172.18.0.3 /* `+sw+` */ reroute 203.203.0.2`,
		"102 ip4.src == 203.203.0.0/24 && ip4.dst == 203.203.0.0/24 allow",
		"102 pkt.mark == 42 allow",
	)
	wantLines(t, "transit router NAT", e.nbctl("--columns=type,logical_ip,external_ip,logical_port,options",
		"--format=csv", "--data=bare", "--no-headings", "list", "NAT"),
		"snat,203.203.0.0/24,169.254.0.12,"+rtos+",stateless=false")
	if got := e.nbctl("lr-nat-list", gr1); got != "" {
		t.Errorf("the management-port SNAT belongs to the transit router, GR has: %s", got)
	}
	for _, row := range []string{"Logical_Router", "Logical_Router_Port", "Logical_Switch_Port", "Logical_Router_Static_Route", "Logical_Router_Policy", "NAT"} {
		out := e.nbctl("--columns=external_ids", "--format=csv", "--data=bare", "--no-headings", "list", row)
		for _, l := range strings.Split(out, "\n") {
			if !strings.Contains(l, "k8s.ovn.org/network=test12_namespace-scoped") || !strings.Contains(l, "k8s.ovn.org/topology=layer2") {
				t.Errorf("%s row without udnkit ownership external_ids: %q", row, l)
			}
		}
	}

	// Running it twice changes nothing.
	if ops := e.apply(d); ops != 0 {
		t.Errorf("second apply sent %d operations, want 0", ops)
	}
}
