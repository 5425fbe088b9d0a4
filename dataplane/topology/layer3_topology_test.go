package topology

import (
	"maps"
	"net/netip"
	"strings"
	"testing"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/ovnk"
)

// layer3RefNetwork is the reference case's Primary Layer3 network
// (tenant-green/green: network ID 2, subnets 10.200.0.0/16/24 and
// 2001:db8:200::/48/64, a dual-stack cluster with --mtu 1400, EgressIP on).
func layer3RefNetwork() Layer3Network {
	return Layer3Network{
		Name:                    "tenant-green_green",
		Subnets:                 []netip.Prefix{pfx("10.200.0.0/16"), pfx("2001:db8:200::/48")},
		JoinSubnets:             []netip.Prefix{pfx("100.65.0.0/16"), pfx("fd99::/64")},
		ClusterIPv4:             true,
		ClusterIPv6:             true,
		TransitSubnets:          []netip.Prefix{pfx("100.88.0.0/16"), pfx("fd97::/64")},
		TransitSwitchTunnelKey:  16711685,
		GatewayMTU:              1400,
		GatewayMasqueradeIPs:    []netip.Addr{addr("169.254.0.13"), addr("fd69::d")},
		ManagementMasqueradeIPs: []netip.Addr{addr("169.254.0.14"), addr("fd69::e")},
		MasqueradeSubnets:       []netip.Prefix{pfx("169.254.0.0/17"), pfx("fd69::/112")},
		Services: []UDNEnabledService{
			{Key: "default/kubernetes", ClusterIPs: []netip.Addr{addr("10.96.0.1")}},
			{Key: "kube-system/kube-dns", ClusterIPs: []netip.Addr{addr("10.96.0.10")}},
		},
		EgressIP: true,
	}
}

// layer3RefNodes are the reference case's nodes in node1's zone, with the
// host subnets, transit addresses and gateway IPs upstream's cluster
// manager and ovnkube-node gave them.
func layer3RefNodes() []Layer3Node {
	return []Layer3Node{
		{Name: "node1", ID: 2, Local: true, Chassis: chassisOf("node1"),
			HostSubnets: []netip.Prefix{pfx("10.200.1.0/24"), pfx("2001:db8:200:2::/64")},
			TransitIPs:  []netip.Prefix{pfx("100.88.0.2/16"), pfx("fd97::2/64")},
			Gateway:     referenceGateway("node1")},
		{Name: "node2", ID: 3, Chassis: chassisOf("node2"),
			HostSubnets: []netip.Prefix{pfx("10.200.2.0/24"), pfx("2001:db8:200:3::/64")},
			TransitIPs:  []netip.Prefix{pfx("100.88.0.3/16"), pfx("fd97::3/64")}},
		{Name: "node3", ID: 4, Chassis: chassisOf("node3"),
			HostSubnets: []netip.Prefix{pfx("10.200.0.0/24"), pfx("2001:db8:200:1::/64")}},
	}
}

// mustLayer3 is Layer3Topology, failing the test on error.
func mustLayer3(t testing.TB, net Layer3Network, nodes []Layer3Node) *rows.Desired {
	t.Helper()
	d, err := Layer3Topology(net, nodes)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// The reference case writes the rows upstream writes for it in zone node-a,
// apart from the other builders' (load-balancer groups, network-policy
// rows) and the subnet-policies piece's: per table, what a user counts with
// ovn-nbctl.
func TestLayer3TopologyRowCounts(t *testing.T) {
	d := mustLayer3(t, layer3RefNetwork(), layer3RefNodes())
	got := map[string]int{}
	for _, r := range planRows(d) {
		got[r.table]++
	}
	want := map[string]int{
		"Logical_Router": 2, "Logical_Router_Port": 5, "Gateway_Chassis": 1, "Logical_Router_Static_Route": 22,
		"Logical_Router_Policy": 4, "NAT": 6, "Logical_Switch": 4, "Logical_Switch_Port": 9, "Static_MAC_Binding": 4,
		// The zone's COPP, once per router that names it.
		"Copp": 2, "Meter": 18, "Meter_Band": 18,
		// The network's three load balancer groups (initLoadBalancerGroups).
		"Load_Balancer_Group": 3,
	}
	if !maps.Equal(got, want) {
		t.Errorf("rows per table = %v, want %v", got, want)
	}
}

// A node the topology cannot program yet is left out, with the reason, and
// the others keep their rows: one without a node ID, chassis or host subnet
// of the network, a younger node with an older one's ID, and one whose
// transit address is not of its host subnets' families.
func TestLayer3UsableNodesLeaveOutWhatCannotBeProgrammed(t *testing.T) {
	nodes := layer3RefNodes()
	broken := []Layer3Node{
		{Name: "noid", Chassis: chassisOf("noid"), HostSubnets: []netip.Prefix{pfx("10.200.9.0/24")}},
		{Name: "nochassis", ID: 7, HostSubnets: []netip.Prefix{pfx("10.200.7.0/24")}},
		{Name: "nosubnet", ID: 8, Chassis: chassisOf("nosubnet")},
		{Name: "dup", ID: 3, Chassis: chassisOf("dup"), HostSubnets: []netip.Prefix{pfx("10.200.5.0/24")}},
		{Name: "v6only", ID: 9, Chassis: chassisOf("v6only"), HostSubnets: []netip.Prefix{pfx("10.200.6.0/24")},
			TransitIPs: []netip.Prefix{pfx("fd97::9/64")}},
	}
	kept, skipped := Layer3UsableNodes(layer3RefNetwork(), append(nodes, broken...))
	if len(kept) != len(nodes) {
		t.Errorf("kept %d nodes, want the reference case's %d", len(kept), len(nodes))
	}
	want := map[string]string{"noid": SkipNoNodeID, "nochassis": SkipNoChassis, "nosubnet": SkipNoHostSubnets,
		"dup": SkipDuplicateNodeID, "v6only": SkipNodeOutOfRange}
	for _, s := range skipped {
		if want[s.Name] != s.Reason {
			t.Errorf("node %s skipped as %q, want %q", s.Name, s.Reason, want[s.Name])
		}
		if !strings.Contains(s.Err.Error(), "left out of network tenant-green_green") {
			t.Errorf("node %s: error %q does not say which network leaves it out", s.Name, s.Err)
		}
		delete(want, s.Name)
	}
	if len(want) > 0 {
		t.Errorf("not skipped: %v", want)
	}
	// The same broken nodes given to the builder directly are refused.
	if _, err := Layer3Topology(layer3RefNetwork(), append(nodes, broken[4])); err == nil || !strings.Contains(err.Error(), "nodes[3] (v6only)") {
		t.Errorf("Layer3Topology with an out-of-range node: err = %v, want it named", err)
	}
}

// An invalid network is refused, naming the field.
func TestLayer3TopologyRefusesAnInvalidNetwork(t *testing.T) {
	for _, c := range []struct {
		mutate func(*Layer3Network)
		want   string
	}{
		{func(n *Layer3Network) { n.Name = "" }, "network.name"},
		{func(n *Layer3Network) { n.Subnets = nil }, "network.subnets"},
		{func(n *Layer3Network) { n.JoinSubnets = n.JoinSubnets[:1] }, "no join subnet for the ip6 family"},
		{func(n *Layer3Network) { n.TransitSwitchTunnelKey = 0 }, "network.transitSwitchTunnelKey"},
		{func(n *Layer3Network) { n.Services[1].Key = "" }, "network.services[1].key"},
	} {
		net := layer3RefNetwork()
		c.mutate(&net)
		if _, err := Layer3Topology(net, layer3RefNodes()); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err = %v, want one naming %q", err, c.want)
		}
	}
}

// A node's rows follow it: a remote node that goes takes its remote port and
// routes with it; a local node without a gateway keeps its switch and
// ports but gets no gateway router, join port, source routes nor 1004
// policies; one without gateway-MTU support no gateway_mtu; a multi-VTEP
// node's transit ports and routes are the multi-VTEP piece's.
func TestLayer3TopologyFollowsItsNodes(t *testing.T) {
	net := layer3RefNetwork()
	full := mustLayer3(t, net, layer3RefNodes())
	nodes := layer3RefNodes()
	d := mustLayer3(t, net, nodes[:2])
	for _, row := range []string{"tenant.green_green_tstor-node3"} {
		if rowByKey(d, "Logical_Switch_Port", row) == nil {
			continue
		}
		t.Errorf("node3 removed but %s stays", row)
	}
	if n, m := len(planRows(full)), len(planRows(d)); n-m != 5 {
		t.Errorf("removing remote node3 removed %d rows, want 5 (its port, 2 subnet and 2 join routes)", n-m)
	}

	nodes = layer3RefNodes()
	nodes[0].NoGateway, nodes[0].NoGatewayMTU = true, true
	nodes[1].MultiVTEP = true
	d = mustLayer3(t, net, nodes)
	if len(d.Routers) != 1 || rowByKey(d, "Logical_Switch_Port", "jtor-"+pGRg) != nil {
		t.Errorf("a node without a gateway got a gateway router or join port: %d routers", len(d.Routers))
	}
	if got, _ := cell(d, "Logical_Router_Port", pRTOSg, "options"); got != "" {
		t.Errorf("rtos- options = %q without gateway-MTU support, want none", got)
	}
	for _, r := range planRows(d) {
		route, _ := r.row.(nbdb.LogicalRouterStaticRoute)
		if strings.Contains(r.key, "node2") || route.Nexthop == "100.88.0.3" || route.Nexthop == "fd97::3" {
			t.Errorf("multi-VTEP node2's row %s %s is the multi-VTEP piece's", r.table, r.key)
		}
		if r.table == "Logical_Router_Policy" || (r.table == "Logical_Router_Static_Route" && strings.Contains(r.key, "100.65.0.2")) {
			t.Errorf("a node without a gateway got %s %s", r.table, r.key)
		}
	}
}

// A local node's gateway router gets its external side and its switch the
// management port from the node's l3-gateway-config; without one the GR
// keeps its join side and the 1004 policies only the masquerade IPs, and
// the management port stays (upstream syncs it apart from the gateway). A
// gateway config upstream could not program is refused, naming the node.
func TestLayer3TopologyGatewayExternalSide(t *testing.T) {
	net := layer3RefNetwork()
	nodes := layer3RefNodes()
	nodes[0].Gateway = nil
	d := mustLayer3(t, net, nodes)
	for _, k := range [][2]string{{"Logical_Router_Port", "rtoe-" + pGRg}, {"Logical_Switch", "ext_tenant.green_green_node1"},
		{"Static_MAC_Binding", "rtoe-" + pGRg + " 169.254.0.4"}, {"Logical_Router_Policy", pNodeIPg4}} {
		if rowByKey(d, k[0], k[1]) != nil {
			t.Errorf("a node without a gateway config got %s %s", k[0], k[1])
		}
	}
	for _, k := range [][2]string{{"Logical_Router_Port", "rtoj-" + pGRg}, {"Logical_Router_Policy", pMasqIPg6}, {"Logical_Switch_Port", "k8s-" + pNSg}} {
		if rowByKey(d, k[0], k[1]) == nil {
			t.Errorf("a node without a gateway config lost %s %s", k[0], k[1])
		}
	}

	nodes = layer3RefNodes()
	nodes[0].Gateway.BridgeID = ""
	if _, err := Layer3Topology(net, nodes); err == nil || !strings.Contains(err.Error(), "nodes[0] (node1)") || !strings.Contains(err.Error(), "bridge-id") {
		t.Errorf("err = %v, want the missing bridge named with the node", err)
	}
	net.ExternalPortRange = "1024-99999"
	if _, err := Layer3Topology(net, layer3RefNodes()); err == nil || !strings.Contains(err.Error(), "network.externalPortRange") {
		t.Errorf("err = %v, want the port range refused", err)
	}
	net.ExternalPortRange = "2000-3000"
	d = mustLayer3(t, net, layer3RefNodes())
	for _, k := range []string{pSNATg6, natKey(pGRg, "snat", "10.200.0.0/16")} {
		if got, _ := cell(d, "NAT", k, "external_port_range"); got != "2000-3000" {
			t.Errorf("NAT %s external_port_range = %q, want --external-port-range's 2000-3000", k, got)
		}
	}
}

// In local gateway mode a local node's host subnets leave through its
// management port even without a gateway, and no UDN-enabled service is
// routed (upstream's updateClusterRouterStaticRoutes deletes those routes).
func TestLayer3TopologyLocalGateway(t *testing.T) {
	net := layer3RefNetwork()
	net.GatewayMode = ovnk.GatewayModeLocal
	nodes := layer3RefNodes()
	nodes[0].NoGateway, nodes[0].Gateway = true, nil
	d := mustLayer3(t, net, nodes)
	for k, want := range map[string]string{pCRg + " 10.200.1.0/24": "10.200.1.2", pCRg + " 2001:db8:200:2::/64": "2001:db8:200:2::2"} {
		if got, _ := cell(d, "Logical_Router_Static_Route", k, "nexthop"); got != want {
			t.Errorf("route %s nexthop = %q, want the management IP %s", k, got, want)
		}
	}
	if rowByKey(d, "Logical_Router_Static_Route", pCRg+" 10.96.0.10") != nil {
		t.Error("local gateway mode routes a UDN-enabled service to the management port")
	}
	net.GatewayMode = "bogus"
	if _, err := Layer3Topology(net, nodes); err == nil || !strings.Contains(err.Error(), "network.gatewayMode") {
		t.Errorf("err = %v, want the gateway mode refused", err)
	}
}
