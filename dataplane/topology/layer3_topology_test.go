package topology

import (
	"net/netip"
	"testing"

	"github.com/udnkit/udnkit/dataplane/rows"
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
			GatewayIPs:  []netip.Addr{addr("192.0.2.2"), addr("2001:db8::2")}},
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
