package pods

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

// podFromEntry reads an entry the way the pods controller does (decode,
// Parse) into the builder's input.
func podFromEntry(t *testing.T, nad, name string, pn podannotation.PodNetwork) Pod {
	t.Helper()
	v, err := podannotation.PodNetworks{nad: pn}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := podannotation.DecodePodNetwork(map[string]string{ovnk.AnnotationPodNetworks: v}, nad)
	if err != nil || back == nil {
		t.Fatalf("decode %s: %v", v, err)
	}
	a, err := back.Parse()
	if err != nil {
		t.Fatalf("parse %s: %v", v, err)
	}
	ns, _, _ := strings.Cut(nad, "/")
	return Pod{NAD: nad, Namespace: ns, Name: name, UID: "uid-" + name, Node: "node-a", Chassis: "ch-a", Local: true,
		MAC: a.MAC, IPs: a.IPs, TunnelID: a.TunnelID, Gateways: a.Gateways}
}

// The entries the addresses reconciler writes (its encoders, here fed with
// the values it allocates) give the ports upstream's
// addLogicalPortToNetwork writes: a Primary Layer3 pod on its node's
// switch with "MAC IPv4 IPv6" (names with "-" as "." as upstream
// prefixes them); a Secondary Layer2 pod on the network's
// switch with its tunnel_id as requested-tnl-key; a Localnet pod of a
// network without IPAM with its MAC alone.
func TestPortsFromReconcilerEntries(t *testing.T) {
	l3ips := []netip.Prefix{netip.MustParsePrefix("10.20.1.3/24"), netip.MustParsePrefix("fd00:20:1::3/64")}
	l3, err := podannotation.Layer3PodNetwork(l3ips, ovnk.MACFromIP(l3ips[0].Addr()), []netip.Prefix{netip.MustParsePrefix("10.20.0.0/16")}, true,
		[]netip.Prefix{netip.MustParsePrefix("10.96.0.0/16")}, []netip.Prefix{ovnk.DefaultUDNJoinSubnetV4, ovnk.DefaultUDNJoinSubnetV6}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l2ip := []netip.Prefix{netip.MustParsePrefix("10.30.0.1/24")}
	l2, err := podannotation.SecondaryPodNetwork(l2ip, ovnk.MACFromIP(l2ip[0].Addr()), nil, podannotation.FirstPodTunnelID)
	if err != nil {
		t.Fatal(err)
	}
	flat, err := podannotation.SecondaryPodNetwork(nil, ovnk.MACFromIP(netip.MustParseAddr("10.99.0.1")), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		n                      Network
		pod                    Pod
		sw, port, addr, tnlKey string
	}{
		{Network{Name: "l3-green_green", Topology: base.TopologyLayer3}, podFromEntry(t, "l3-green/green", "web", l3),
			"l3.green_green_node-a", "l3.green.green_l3-green_web", "0a:58:0a:14:01:03 10.20.1.3 fd00:20:1::3", ""},
		{Network{Name: "secondaries_red", Topology: base.TopologyLayer2}, podFromEntry(t, "secondaries/red", "multi", l2),
			"secondaries_red_ovn_layer2_switch", "secondaries.red_secondaries_multi", "0a:58:0a:1e:00:01 10.30.0.1", "10"},
		{Network{Name: "cluster_udn_flat", Topology: ovnk.TopologyLocalnet}, podFromEntry(t, "secondaries/flat", "multi", flat),
			"cluster_udn_flat_ovn_localnet_switch", "secondaries.flat_secondaries_multi", "0a:58:0a:63:00:01", ""},
	} {
		d, err := Ports(c.n, []Pod{c.pod})
		if err != nil {
			t.Fatalf("%s: %v", c.n.Name, err)
		}
		if len(d.Switches) != 1 || len(d.Switches[0].Ports) != 1 {
			t.Fatalf("%s: %+v, want one switch with one port", c.n.Name, d.Switches)
		}
		sw, lsp := d.Switches[0], d.Switches[0].Ports[0]
		if sw.Row.Name != c.sw || lsp.Name != c.port || strings.Join(lsp.Addresses, "|") != c.addr || strings.Join(lsp.PortSecurity, "|") != c.addr ||
			lsp.Options["requested-tnl-key"] != c.tnlKey {
			t.Errorf("%s: switch %s port %s addresses %q port_security %q requested-tnl-key %q; want %s %s %q %q",
				c.n.Name, sw.Row.Name, lsp.Name, lsp.Addresses, lsp.PortSecurity, lsp.Options["requested-tnl-key"], c.sw, c.port, c.addr, c.tnlKey)
		}
	}
}
