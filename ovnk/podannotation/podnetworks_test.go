package podannotation

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/udnkit/udnkit/ovnk"
)

// Golden bytes for k8s.ovn.org/pod-networks, as upstream's
// MarshalPodAnnotation writes them: fields in podAnnotation's order,
// ip_address/gateway_ip only for a single address, routes per address
// (service CIDRs, then the join subnet), ipv6_lla_gateway_ip for networks with
// IPv6, tunnel_id, role; plus OKEP-5535's encap_ip.
func TestPodNetworksGolden(t *testing.T) {
	pfx := netip.MustParsePrefix
	addr := netip.MustParseAddr
	svc := []netip.Prefix{pfx("10.96.0.0/16"), pfx("fd00:10:96::/112")}
	join := []netip.Prefix{ovnk.DefaultUDNJoinSubnetV4, ovnk.DefaultUDNJoinSubnetV6}
	mac, _ := net.ParseMAC("00:1a:2b:3c:4d:5e")
	for _, tc := range []struct {
		name     string
		ips      []netip.Prefix
		gws      []netip.Addr
		tunnelID int
		encap    string
		want     string
	}{{
		// OKEP-5233's usage example.
		name: "IPv4", ips: []netip.Prefix{pfx("192.168.100.205/24")}, gws: []netip.Addr{addr("192.168.100.2")}, tunnelID: 10,
		want: `{"migrated-apps/network-l2":{"ip_addresses":["192.168.100.205/24"],"mac_address":"00:1a:2b:3c:4d:5e",` +
			`"gateway_ips":["192.168.100.2"],"routes":[{"dest":"10.96.0.0/16","nextHop":"192.168.100.2"},{"dest":"100.65.0.0/16","nextHop":"192.168.100.2"}],` +
			`"ip_address":"192.168.100.205/24","gateway_ip":"192.168.100.2","tunnel_id":10,"role":"primary"}}`,
	}, {
		// The gateway's MAC: 0a:58 + sha256("fd00:100::2")[:4] = 0a:58:45:92:9e:61.
		name: "IPv6", ips: []netip.Prefix{pfx("fd00:100::cd/64")}, gws: []netip.Addr{addr("fd00:100::2")}, tunnelID: 11,
		want: `{"migrated-apps/network-l2":{"ip_addresses":["fd00:100::cd/64"],"mac_address":"00:1a:2b:3c:4d:5e",` +
			`"gateway_ips":["fd00:100::2"],"routes":[{"dest":"fd00:10:96::/112","nextHop":"fd00:100::2"},{"dest":"fd99::/64","nextHop":"fd00:100::2"}],` +
			`"ip_address":"fd00:100::cd/64","gateway_ip":"fd00:100::2","ipv6_lla_gateway_ip":"fe80::858:45ff:fe92:9e61","tunnel_id":11,"role":"primary"}}`,
	}, {
		// Dual-stack: the router port's MAC comes from the IPv4 gateway
		// (0a:58:c0:a8:64:02); OKEP-5535's encap_ip.
		name: "dual-stack with an encap IP", ips: []netip.Prefix{pfx("192.168.100.205/24"), pfx("fd00:100::cd/64")},
		gws: []netip.Addr{addr("192.168.100.2"), addr("fd00:100::2")}, tunnelID: 12, encap: "10.0.0.3",
		want: `{"migrated-apps/network-l2":{"ip_addresses":["192.168.100.205/24","fd00:100::cd/64"],"mac_address":"00:1a:2b:3c:4d:5e",` +
			`"gateway_ips":["192.168.100.2","fd00:100::2"],"routes":[{"dest":"10.96.0.0/16","nextHop":"192.168.100.2"},` +
			`{"dest":"100.65.0.0/16","nextHop":"192.168.100.2"},{"dest":"fd00:10:96::/112","nextHop":"fd00:100::2"},{"dest":"fd99::/64","nextHop":"fd00:100::2"}],` +
			`"ipv6_lla_gateway_ip":"fe80::858:c0ff:fea8:6402","tunnel_id":12,"role":"primary","encap_ip":"10.0.0.3"}}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			pn, err := Layer2PrimaryPodNetwork(tc.ips, mac, tc.gws, svc, join, tc.tunnelID, tc.encap)
			if err != nil {
				t.Fatal(err)
			}
			got, err := WithPodNetwork(nil, "migrated-apps/network-l2", pn)
			if err != nil || got != tc.want {
				t.Fatalf("encoded (%v):\n got %s\nwant %s", err, got, tc.want)
			}
			// Round trip: decode, parse, and the same bytes again.
			back, err := DecodePodNetwork(map[string]string{ovnk.AnnotationPodNetworks: got}, "migrated-apps/network-l2")
			if err != nil || back == nil {
				t.Fatalf("decode: %v", err)
			}
			a, err := back.Parse()
			if err != nil {
				t.Fatal(err)
			}
			if a.TunnelID != tc.tunnelID || a.MAC.String() != mac.String() || len(a.IPs) != len(tc.ips) || a.IPs[0] != tc.ips[0] {
				t.Errorf("parsed %+v", a)
			}
			again, _ := WithPodNetwork(map[string]string{ovnk.AnnotationPodNetworks: got}, "migrated-apps/network-l2", *back)
			if again != got {
				t.Errorf("re-encoded differently:\n%s\n%s", again, got)
			}
		})
	}
	// Other networks' entries are kept byte for byte in meaning.
	other := map[string]string{ovnk.AnnotationPodNetworks: `{"default":{"ip_addresses":["10.244.1.5/24"],"mac_address":"0a:58:0a:f4:01:05","role":"infrastructure-locked"}}`}
	v, err := WithPodNetwork(other, "ns/n", PodNetwork{IPAddresses: []string{"10.1.0.5/16"}, MACAddress: "0a:58:0a:01:00:05"})
	if err != nil || !strings.HasPrefix(v, `{"default":{"ip_addresses":["10.244.1.5/24"],"mac_address":"0a:58:0a:f4:01:05","role":"infrastructure-locked"},"ns/n":`) {
		t.Errorf("kept entry: %s (%v)", v, err)
	}
}

// Every malformed class has its own error naming the field.
func TestPodNetworkParseRejects(t *testing.T) {
	ok := `"ip_addresses":["10.1.0.5/16"],"mac_address":"0a:58:0a:01:00:05"`
	for _, tc := range []struct{ entry, want string }{
		{`{"ip_addresses":["10.1.0.5/16"],"mac_address":"zz"}`, `mac_address "zz"`},
		{`{"ip_addresses":["10.1.0.5/16"],"mac_address":"00:00:00:00:00:00"}`, "must not be the all-zero MAC address"},
		{`{"ip_addresses":["10.1.0.5/16"],"mac_address":"01:00:5e:00:00:01"}`, "must be a unicast MAC address"},
		{`{"ip_addresses":["10.1.0.5/16"],"mac_address":"02:00:00:00:00:00:00:01"}`, "must be an EUI-48 MAC address"},
		{`{"ip_addresses":null,"mac_address":"0a:58:0a:01:00:05","ip_address":"10.1.0.x"}`, `ip_addresses[0] "10.1.0.x"`},
		{`{"ip_addresses":["10.1.0.5"],"mac_address":"0a:58:0a:01:00:05"}`, `ip_addresses[0] "10.1.0.5"`},
		{`{"ip_addresses":["10.1.0.5/16","10.1.0.6/16"],"mac_address":"0a:58:0a:01:00:05"}`, "a second address of its IP family"},
		{`{` + ok + `,"ip_address":"10.1.0.6/16"}`, "ip_address \"10.1.0.6/16\" and ip_addresses"},
		{`{` + ok + `,"gateway_ips":["10.1.0.x"]}`, `gateway_ips[0] "10.1.0.x"`},
		{`{` + ok + `,"gateway_ips":["10.1.0.1"],"gateway_ip":"10.1.0.2"}`, "gateway_ip \"10.1.0.2\" and gateway_ips"},
		{`{` + ok + `,"routes":[{"dest":"0.0.0.0/0","nextHop":"10.1.0.1"}]}`, "a default route must be given as a gateway"},
		{`{` + ok + `,"routes":[{"dest":"10.96.0.0/16","nextHop":"fd00::1"}]}`, "of another IP family"},
		{`{` + ok + `,"ipv6_lla_gateway_ip":"fd00::1"}`, "is not an IPv6 link-local address"},
		{`{` + ok + `,"tunnel_id":40000}`, "tunnel_id 40000 is outside [0, 32767]"},
		{`{` + ok + `,"encap_ip":"10.0.0.300"}`, `encap_ip "10.0.0.300"`},
	} {
		pn, err := DecodePodNetwork(map[string]string{ovnk.AnnotationPodNetworks: `{"k":` + tc.entry + `}`}, "k")
		if err != nil {
			t.Fatalf("%s: decode: %v", tc.entry, err)
		}
		if _, err := pn.Parse(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.entry, err, tc.want)
		}
	}
	if _, err := DecodePodNetworks(map[string]string{ovnk.AnnotationPodNetworks: `["not","an","object"]`}); err == nil ||
		!strings.Contains(err.Error(), "annotation k8s.ovn.org/pod-networks is not a JSON object of networks") {
		t.Errorf("not an object: err = %v", err)
	}
	if pn, err := DecodePodNetwork(nil, "k"); pn != nil || err != nil {
		t.Errorf("no annotation: %v, %v", pn, err)
	}
}

// An entry with a MAC and no addresses is a pod on a network without IPAM
// (a Secondary Layer2 or Localnet network without subnets): upstream's
// allocatePodAnnotationWithRollback writes it ("ip_addresses":null, since
// its podAnnotation.IPs has no omitempty) and UnmarshalPodAnnotation reads it.
func TestPodNetworkParseMACOnly(t *testing.T) {
	pn, err := DecodePodNetwork(map[string]string{ovnk.AnnotationPodNetworks: `{"k":{"ip_addresses":null,"mac_address":"0a:58:0a:01:00:05","role":"secondary"}}`}, "k")
	if err != nil {
		t.Fatal(err)
	}
	a, err := pn.Parse()
	if err != nil || len(a.IPs) != 0 || a.MAC.String() != "0a:58:0a:01:00:05" {
		t.Errorf("MAC-only entry: %+v, %v; want the MAC and no addresses", a, err)
	}
}
