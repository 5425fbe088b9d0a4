package policy

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/udnkit/udnkit/dataplane/topology/base"
)

// The cluster port group holds the management ports only: upstream adds
// no pod port to it (base_network_controller.go syncNodeManagementPort is
// its only writer; base_network_controller_pods.go adds none).
func TestNetpolDefaultsClusterPortGroup(t *testing.T) {
	net := refBlue()
	d, err := NetpolDefaults(net, refCluster)
	if err != nil {
		t.Fatal(err)
	}
	pg := d.PortGroups[0]
	if pg.Row.Name != ClusterPortGroup(net.Name) {
		t.Fatalf("first port group %s, want the cluster port group %s", pg.Row.Name, ClusterPortGroup(net.Name))
	}
	want := []string{"k8s-tenant.blue_blue_node-a"}
	if !slices.Equal(pg.Ports, want) {
		t.Errorf("cluster port group ports %v, want %v", pg.Ports, want)
	}
	if d.PortGroups[1].Row.Name != ClusterRouterPortGroup(net.Name) || len(d.PortGroups[1].Ports)+len(d.PortGroups[1].ACLs) != 0 {
		t.Errorf("cluster router port group %+v: want %s, empty", d.PortGroups[1], ClusterRouterPortGroup(net.Name))
	}
	if o := d.Owner; o.Network != net.Name || o.Topology != base.TopologyLayer2 || o.Piece != base.PieceNetpolDefaults {
		t.Errorf("owner %+v", d.Owner)
	}
}

// Two local nodes of a Layer2 network share its switch and its
// allow-from-node ACLs; a Layer3 network's nodes each have theirs.
func TestNetpolDefaultsSeveralNodes(t *testing.T) {
	blue := refBlue()
	blue.Nodes = append(blue.Nodes, Node{Name: "node-b", Switch: blue.Nodes[0].Switch, ManagementPort: "k8s-tenant.blue_blue_node-b",
		ManagementIPs: blue.Nodes[0].ManagementIPs})
	d, err := NetpolDefaults(blue, refCluster)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Switches) != 1 || len(d.Switches[0].ACLs) != 2 || !d.Switches[0].Ref {
		t.Errorf("layer2 switches %+v: want one referenced switch with 2 ACLs", d.Switches)
	}
	green := refGreen()
	green.Nodes = append(green.Nodes, Node{Name: "node-b", Switch: "tenant.green_green_node-b", ManagementPort: "k8s-tenant.green_green_node-b",
		ManagementIPs: []netip.Addr{addr("10.200.2.2")}})
	d, err = NetpolDefaults(green, refCluster)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Switches) != 2 || len(d.Switches[1].ACLs) != 1 || d.Switches[1].ACLs[0].Match != "ip4.src==10.200.2.2" {
		t.Errorf("layer3 switches %+v: want node-b's switch with its one ACL", d.Switches)
	}
	e, err := EgressIPDefaults(green, refCluster)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Switches) != 2 || len(e.Switches[1].QoS) != 2 {
		t.Errorf("layer3 EgressIP switches %+v: want each node switch with both families' QoS", e.Switches)
	}
}

// An IPv4-only cluster writes one family: hairpin, QoS, address sets and
// Pod-To-Node; a network's Pod-To-Join and Pod-To-CDN-Svc follow its own
// subnets.
func TestSingleStack(t *testing.T) {
	c := Cluster{IPv4: true, MasqueradeSubnets: refCluster.MasqueradeSubnets[:1], JoinSubnets: refCluster.JoinSubnets[:1]}
	net := refBlue()
	net.Subnets = net.Subnets[:1]
	net.Nodes[0].ManagementIPs = net.Nodes[0].ManagementIPs[:1]
	d, err := NetpolDefaults(net, c)
	if err != nil {
		t.Fatal(err)
	}
	if m := d.PortGroups[0].ACLs[0].Match; m != "ip4.src == 169.254.0.5" {
		t.Errorf("hairpin match %q", m)
	}
	e, err := EgressIPDefaults(net, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Routers[0].Policies) != 3 || len(e.AddressSets) != 1 || len(e.Switches[0].QoS) != 1 {
		t.Errorf("single-stack EgressIP rows: %d policies, %d address sets, %d QoS; want 3, 1, 1",
			len(e.Routers[0].Policies), len(e.AddressSets), len(e.Switches[0].QoS))
	}
	if e.Routers[0].Row.Name != "tenant.blue_blue_transit_router" || !e.Routers[0].Ref {
		t.Errorf("layer2 EgressIP router %+v: want the referenced transit router", e.Routers[0].Row)
	}
	s, err := EgressIPDefaultNetworkSets(c, []netip.Addr{addr("192.0.2.2"), addr("2001:db8::2")})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.AddressSets) != 2 || !slices.Equal(s.AddressSets[0].Addresses, []string{"192.0.2.2"}) || s.Owner.Piece != base.PieceEgressIPDefaultSets {
		t.Errorf("single-stack default-network sets %+v", s)
	}
	if s, err := EgressIPShared(c, []netip.Addr{addr("fd00:10:96::a")}); err != nil || len(s.AddressSets) != 1 || len(s.AddressSets[0].Addresses) != 0 {
		t.Errorf("single-stack UDN-enabled service set of a v6 ClusterIP: %+v, %v", s, err)
	}
}

// The isolation port group holds the ports given; its ACLs admit every
// local node's management port.
func TestUDNIsolationPorts(t *testing.T) {
	other := Node{Name: "node-b", ManagementIPs: []netip.Addr{addr("10.244.1.2")}}
	d, err := UDNIsolation([]Node{refDefaultNode, other}, members("tenant-blue_pod-b", "tenant-blue_pod-a"))
	if err != nil {
		t.Fatal(err)
	}
	pg := d.PortGroups[0]
	if !slices.Equal(pg.Ports, []string{"tenant-blue_pod-a", "tenant-blue_pod-b"}) || pg.Row.Name != IsolationPortGroup() {
		t.Errorf("isolation port group %s ports %v", pg.Row.Name, pg.Ports)
	}
	allow := pg.ACLs[4].Match
	if !strings.HasSuffix(allow, "(ip4.src==10.244.2.2 || ip6.src==fd00:10:244:3::2 || ip4.src==10.244.1.2)") {
		t.Errorf("allow-from-host match %q: want both nodes' management IPs", allow)
	}
	if d.Owner.Network != ZoneNetwork || d.Owner.Topology != base.TopologyZone {
		t.Errorf("owner %+v: want the zone's", d.Owner)
	}
}

func TestRejects(t *testing.T) {
	mut := func(f func(*Network)) Network { n := refGreen(); f(&n); return n }
	for _, tc := range []struct {
		name string
		net  Network
		c    Cluster
		want string
	}{
		{"no name", mut(func(n *Network) { n.Name = "" }), refCluster, "network.name: must not be empty"},
		{"zone name", mut(func(n *Network) { n.Name = ZoneNetwork }), refCluster, "zone's own rows"},
		{"topology", mut(func(n *Network) { n.Topology = "localnet" }), refCluster, "network.topology"},
		{"no subnets", mut(func(n *Network) { n.Subnets = nil }), refCluster, "network.subnets: at least one"},
		{"node twice", mut(func(n *Network) { n.Nodes = append(n.Nodes, n.Nodes[0]) }), refCluster, "appears twice"},
		{"management port twice", mut(func(n *Network) {
			other := n.Nodes[0]
			other.Name = "node-z"
			n.Nodes = append(n.Nodes, other)
		}), refCluster, `management port "k8s-tenant.green_green_node-a" appears twice`},
		{"no switch", mut(func(n *Network) { n.Nodes[0].Switch = "" }), refCluster, "switch and managementPort"},
		{"no mgmt IP", mut(func(n *Network) { n.Nodes[0].ManagementIPs = nil }), refCluster, "managementIPs: at least one"},
		{"two v4 mgmt IPs", mut(func(n *Network) { n.Nodes[0].ManagementIPs[1] = addr("10.200.1.3") }), refCluster, "a second ip4 address"},
		{"no masquerade v6", refGreen(), Cluster{IPv4: true, IPv6: true, MasqueradeSubnets: refCluster.MasqueradeSubnets[:1], JoinSubnets: refCluster.JoinSubnets},
			"no ip6 subnet"},
		{"no family", refGreen(), Cluster{}, "neither IPv4 nor IPv6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := NetpolDefaults(tc.net, tc.c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NetpolDefaults: %v (rows %v), want an error with %q", err, d, tc.want)
			}
		})
	}
	if _, err := EgressIPDefaults(refGreen(), Cluster{IPv4: true, IPv6: true, JoinSubnets: refCluster.JoinSubnets[:1]}); err == nil ||
		!strings.Contains(err.Error(), "no ip6 join subnet") {
		t.Errorf("EgressIPDefaults without a v6 join subnet: %v", err)
	}
	if _, err := EgressIPDefaults(Network{}, refCluster); err == nil {
		t.Error("EgressIPDefaults of an empty network: no error")
	}
	if _, err := UDNIsolation(nil, nil); err == nil || !strings.Contains(err.Error(), "at least one local node") {
		t.Errorf("UDNIsolation without nodes: %v", err)
	}
	if _, err := UDNIsolation([]Node{refDefaultNode}, members("a", "a")); err == nil || !strings.Contains(err.Error(), `"a" appears twice`) {
		t.Errorf("UDNIsolation with a port twice: %v", err)
	}
	if _, err := EgressIPShared(Cluster{}, nil); err == nil {
		t.Error("EgressIPShared without a family: no error")
	}
	if _, err := EgressIPDefaultNetworkSets(Cluster{}, nil); err == nil {
		t.Error("EgressIPDefaultNetworkSets without a family: no error")
	}
}
