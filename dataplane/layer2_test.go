package dataplane

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/ovnk"
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
func exampleV4() (topology.Layer2Network, []topology.Layer2Node) {
	net := topology.Layer2Network{
		Name:                   "test12_namespace-scoped",
		EgressIP:               true, // its 102 no-reroute policies are checked
		Subnets:                []netip.Prefix{pfx("203.203.0.0/24")},
		JoinSubnets:            []netip.Prefix{pfx("100.65.0.0/16")},
		SwitchTunnelKey:        16711685,
		TransitRouterTunnelKey: 16715780,
		MTU:                    1400,
		GatewayMTU:             1400,
		MasqueradeIPs:          []netip.Addr{addr("169.254.0.12")},
	}
	return net, threeNodes()
}

func threeNodes() []topology.Layer2Node {
	return []topology.Layer2Node{
		{Name: "node1", ID: 2, Chassis: chassisOf("node1"), Local: true, TopologyVersion: "2.0", NodeIPs: nil, LegacyTunnelKey: 4},
		{Name: "node2", ID: 3, Chassis: chassisOf("node2"), TopologyVersion: "2.0", LegacyTunnelKey: 5},
		{Name: "node3", ID: 4, Chassis: chassisOf("node3"), TopologyVersion: "2.0", LegacyTunnelKey: 6},
	}
}

// chassisOf is a node's OVN chassis (its k8s.ovn.org/node-chassis-id) in
// these tests: not the node's name, as on a real cluster.
func chassisOf(node string) string { return "5e1f0c1a-" + node }

const (
	sw   = "test12_namespace.scoped_ovn_layer2_switch"
	tr   = "test12_namespace.scoped_transit_router"
	gr1  = "GR_test12_namespace.scoped_node1"
	gr2  = "GR_test12_namespace.scoped_node2"
	gr3  = "GR_test12_namespace.scoped_node3"
	rtos = "trtos-" + sw
)

func TestLayer2TopologyIPv4ThreeNodes(t *testing.T) {
	e := newEnv(t)
	net, nodes := exampleV4()
	nodes[0].NodeIPs = []netip.Addr{addr("172.18.0.3")}
	net.Services = apiAndDNS()
	d, err := topology.Layer2Topology(net, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if ops := e.apply(d); ops == 0 {
		t.Fatal("first apply sent no operations")
	}

	wantRows(t, "Logical_Router", e.rows("Logical_Router", "options"), map[string]string{
		tr:  "requested-tnl-key=16715780",
		gr1: "always_learn_from_arp_request=false chassis=5e1f0c1a-node1 disable_garp_rarp=true dynamic_neigh_routers=false lb_force_snat_ip=100.65.0.2 mac_binding_age_threshold=300",
	})
	wantRows(t, "Logical_Router_Port", e.rows("Logical_Router_Port", "mac", "networks", "peer", "options"), map[string]string{
		rtos:           "0a:58:cb:cb:00:01,203.203.0.1/24,,gateway_mtu=1400 requested-tnl-key=1",
		"trtor-" + gr1: "0a:58:64:58:00:04,100.88.0.4/31,rtotr-" + gr1 + ",requested-tnl-key=12",
		"trtor-" + gr2: "0a:58:64:58:00:06,100.88.0.6/31,,requested-chassis=5e1f0c1a-node2 requested-tnl-key=13",
		"trtor-" + gr3: "0a:58:64:58:00:08,100.88.0.8/31,,requested-chassis=5e1f0c1a-node3 requested-tnl-key=14",
		"rtotr-" + gr1: "0a:58:64:41:00:02,100.65.0.2/16 100.88.0.5/31,trtor-" + gr1 + ",gateway_mtu=1400",
	})
	wantRows(t, "Logical_Switch", e.rows("Logical_Switch", "other_config"), map[string]string{
		sw: "interconn-ts=" + sw + " mcast_flood_unregistered=true mcast_querier=false mcast_snoop=true requested-tnl-key=16711685 subnet=203.203.0.0/24",
	})
	wantRows(t, "Logical_Switch_Port", e.rows("Logical_Switch_Port", "type", "addresses", "options"), map[string]string{
		"stotr-" + sw: "router,router,router-port=" + rtos,
	})
	wantLines(t, "transit router routes", e.nbctl("lr-route-list", tr),
		"IPv4 Routes",
		"Route Table <main>:",
		"10.96.0.1 203.203.0.2 dst-ip",
		"10.96.0.10 203.203.0.2 dst-ip",
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
	wantLines(t, "transit router NAT", e.nbctl("--columns=type,logical_ip,external_ip,logical_port,match,options",
		"--format=csv", "--data=bare", "--no-headings", "list", "NAT"),
		"snat,203.203.0.0/24,169.254.0.12,"+rtos+",eth.dst == 0a:58:cb:cb:00:02,stateless=false")
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

// The OKEP-5094 IPv6 example: subnet 2010:100:200::/60, join fd99::/64,
// transit fd97::/64. The gateway port's MAC comes from 2010:100:200::1 and the
// link-local address the VMs learn is derived from that MAC. IPv6 MACs are
// OVN-Kubernetes' util.IPAddrToHWAddr: 0a:58 + the first four bytes of the
// SHA-256 of the address text (sha256("2010:100:200::1") starts d7eb905e).
func TestLayer2TopologyIPv6ThreeNodes(t *testing.T) {
	e := newEnv(t)
	net := topology.Layer2Network{
		Name:                   "test12_namespace-scoped",
		EgressIP:               true, // its 102 no-reroute policies are checked
		Subnets:                []netip.Prefix{pfx("2010:100:200::/60")},
		JoinSubnets:            []netip.Prefix{pfx("fd99::/64")},
		SwitchTunnelKey:        16711685,
		TransitRouterTunnelKey: 16715780,
		MasqueradeIPs:          []netip.Addr{addr("fd69::c")},
	}
	d, err := topology.Layer2Topology(net, threeNodes())
	if err != nil {
		t.Fatal(err)
	}
	e.apply(d)
	wantRows(t, "Logical_Router_Port", e.rows("Logical_Router_Port", "mac", "networks", "peer"), map[string]string{
		rtos:           "0a:58:d7:eb:90:5e,2010:100:200::1/60,",
		"trtor-" + gr1: "0a:58:2b:22:eb:86,fd97::4/127,rtotr-" + gr1,
		"trtor-" + gr2: "0a:58:c3:f8:4b:ae,fd97::6/127,",
		"trtor-" + gr3: "0a:58:31:e2:6c:9b,fd97::8/127,",
		"rtotr-" + gr1: "0a:58:4d:58:9e:f6,fd97::5/127 fd99::2/64,trtor-" + gr1,
	})
	if got := ovnk.LinkLocalFromMAC(ovnk.MACFromIP(addr("2010:100:200::1"))); got != addr("fe80::858:d7ff:feeb:905e") {
		t.Errorf("gateway link-local address = %s", got)
	}
	wantLines(t, "transit router routes", e.nbctl("lr-route-list", tr),
		"IPv6 Routes",
		"Route Table <main>:",
		"fd99::2 fd97::5 dst-ip",
		"fd99::3 fd97::7 dst-ip",
		"fd99::4 fd97::9 dst-ip",
		"2010:100:200::/60 fd97::5 src-ip",
	)
	wantLines(t, "gateway router routes", e.nbctl("lr-route-list", gr1),
		"IPv6 Routes",
		"Route Table <main>:",
		"2010:100:200::/60 fd97::4 dst-ip rtotr-"+gr1,
	)
	wantLines(t, "transit router policies", e.nbctl("lr-policy-list", tr),
		"Routing Policies",
		"102 ip6.src == 2010:100:200::/60 && ip6.dst == 2010:100:200::/60 allow",
		"102 pkt.mark == 42 allow",
	)
	if ops := e.apply(d); ops != 0 {
		t.Errorf("second apply sent %d operations, want 0", ops)
	}
}

// Dual stack with defaultGatewayIPs: the gateway port carries both families,
// its MAC is derived from the IPv4 gateway (0a:58:cb:cb:00:01 for 203.203.0.1,
// fe80::858:cbff:fecb:1 as in the document), and the peer ports get /31 + /127.
func TestLayer2TopologyDualStackDefaultGateway(t *testing.T) {
	e := newEnv(t)
	net, nodes := exampleV4()
	net.Subnets = append(net.Subnets, pfx("2010:100:200::/60"))
	net.JoinSubnets = append(net.JoinSubnets, pfx("fd99::/64"))
	net.DefaultGatewayIPs = []netip.Addr{addr("203.203.0.1"), addr("2010:100:200::1")}
	d, err := topology.Layer2Topology(net, nodes)
	if err != nil {
		t.Fatal(err)
	}
	e.apply(d)
	got := e.rows("Logical_Router_Port", "mac", "networks")
	if got[rtos] != "0a:58:cb:cb:00:01,2010:100:200::1/60 203.203.0.1/24" {
		t.Errorf("gateway port = %s", got[rtos])
	}
	if lla := ovnk.LinkLocalFromMAC(ovnk.MACFromIP(addr("203.203.0.1"))); lla != addr("fe80::858:cbff:fecb:1") {
		t.Errorf("gateway link-local address = %s, the document says fe80::858:cbff:fecb:1", lla)
	}
	if got["trtor-"+gr1] != "0a:58:64:58:00:04,100.88.0.4/31 fd97::4/127" {
		t.Errorf("trtor port = %s", got["trtor-"+gr1])
	}
	if got["rtotr-"+gr1] != "0a:58:64:41:00:02,100.65.0.2/16 100.88.0.5/31 fd97::5/127 fd99::2/64" {
		t.Errorf("rtotr port = %s (the document's rtotr carries join and transit addresses of both families)", got["rtotr-"+gr1])
	}
	if ops := e.apply(d); ops != 0 {
		t.Errorf("second apply sent %d operations, want 0", ops)
	}
}

// Bad input names the field and the rule and writes nothing.
func TestLayer2TopologyRejectsBadInput(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		name   string
		mutate func(*topology.Layer2Network, []topology.Layer2Node) []topology.Layer2Node
		want   string
	}{
		{"no subnet", func(n *topology.Layer2Network, ns []topology.Layer2Node) []topology.Layer2Node {
			n.Subnets = nil
			return ns
		},
			"network.subnets: a primary Layer2 network needs one subnet per IP family"},
		{"two IPv4 subnets", func(n *topology.Layer2Network, ns []topology.Layer2Node) []topology.Layer2Node {
			n.Subnets = append(n.Subnets, pfx("10.0.0.0/24"))
			return ns
		}, "network.subnets[1]: 10.0.0.0/24 is a second ip4 subnet"},
		{"missing join family", func(n *topology.Layer2Network, ns []topology.Layer2Node) []topology.Layer2Node {
			n.JoinSubnets = []netip.Prefix{pfx("fd99::/64")}
			return ns
		}, "network.joinSubnets: no join subnet for the ip4 family of subnet 203.203.0.0/24"},
		{"no tunnel key", func(n *topology.Layer2Network, ns []topology.Layer2Node) []topology.Layer2Node {
			n.TransitRouterTunnelKey = 0
			return ns
		},
			"network.tunnelKeys: the switch and transit router tunnel keys must be positive"},
		{"service without key", func(n *topology.Layer2Network, ns []topology.Layer2Node) []topology.Layer2Node {
			n.Services = []topology.UDNEnabledService{{ClusterIPs: []netip.Addr{addr("10.96.0.10")}}}
			return ns
		}, "network.services[0].key: must be the service's namespace/name"},
		{"invalid ClusterIP", func(n *topology.Layer2Network, ns []topology.Layer2Node) []topology.Layer2Node {
			n.Services = []topology.UDNEnabledService{{Key: "kube-system/kube-dns", ClusterIPs: []netip.Addr{{}}}}
			return ns
		}, "network.services[0].clusterIPs[0]: not a valid IP (service kube-system/kube-dns)"},
		{"ClusterIP of two services", func(n *topology.Layer2Network, ns []topology.Layer2Node) []topology.Layer2Node {
			n.Services = append(apiAndDNS(), topology.UDNEnabledService{Key: "kube-system/dns2", ClusterIPs: []netip.Addr{addr("10.96.0.10")}})
			return ns
		}, "network.services[2].clusterIPs[0]: 10.96.0.10 is also service kube-system/kube-dns's"},
		{"gateway outside subnet", func(n *topology.Layer2Network, ns []topology.Layer2Node) []topology.Layer2Node {
			n.DefaultGatewayIPs = []netip.Addr{addr("10.9.9.9")}
			return ns
		}, "network.defaultGatewayIPs[0]: 10.9.9.9 is not inside a subnet of its family"},
		{"node ID zero", func(n *topology.Layer2Network, ns []topology.Layer2Node) []topology.Layer2Node {
			ns[1].ID = 0
			return ns
		},
			"nodes[1] (node2): id: node ID must be at least 1, got 0"},
		{"duplicate node ID", func(n *topology.Layer2Network, ns []topology.Layer2Node) []topology.Layer2Node {
			ns[2].ID = 3
			return ns
		},
			"nodes[2].id: node ID 3 is used by node2 and node3"},
		{"node ID beyond transit subnet", func(n *topology.Layer2Network, ns []topology.Layer2Node) []topology.Layer2Node {
			n.TransitSubnets = []netip.Prefix{pfx("100.88.0.0/29")}
			return ns
		}, "nodes[2] (node3): transitPeerSubnets: transit peer subnet of node ID 4: node ID 4 does not fit transit subnet 100.88.0.0/29"},
		{"join IP outside join subnet", func(n *topology.Layer2Network, ns []topology.Layer2Node) []topology.Layer2Node {
			ns[0].JoinIPs = []netip.Prefix{pfx("100.99.0.2/16")}
			return ns
		}, "nodes[0] (node1): joinIPs: 100.99.0.2/16 is outside join subnet 100.65.0.0/16"},
		{"local node still has pods", func(n *topology.Layer2Network, ns []topology.Layer2Node) []topology.Layer2Node {
			ns[0].TopologyVersion, ns[0].RunningPods = "", 3
			return ns
		}, `nodes[0] (node1): the local node still runs 3 pods on network test12_namespace-scoped with topology version ""; it switches to 2.0 only when it has none`},
		{"old remote node without legacy key", func(n *topology.Layer2Network, ns []topology.Layer2Node) []topology.Layer2Node {
			ns[1].TopologyVersion, ns[1].LegacyTunnelKey = "", 0
			return ns
		}, "nodes[1] (node2): legacyTunnelKey: a node on the old topology needs its tunnel ID for the network (k8s.ovn.org/udn-layer2-node-gateway-router-lrp-tunnel-ids)"},
		{"local node without its tunnel ID while another is old", func(n *topology.Layer2Network, ns []topology.Layer2Node) []topology.Layer2Node {
			ns[1].TopologyVersion, ns[0].LegacyTunnelKey = "", 0
			return ns
		}, "nodes: local node node1 has no tunnel ID for network test12_namespace-scoped in k8s.ovn.org/udn-layer2-node-gateway-router-lrp-tunnel-ids"},
	} {
		t.Run(c.name, func(t *testing.T) {
			net, nodes := exampleV4()
			nodes = c.mutate(&net, nodes)
			_, err := topology.Layer2Topology(net, nodes)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, c.want)
			}
		})
	}
	if got := e.nbctl("show"); got != "" {
		t.Errorf("rejected input wrote to the database:\n%s", got)
	}
}
