package podannotation

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/udnkit/udnkit/ovnk"
)

func prefixes(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

// The bytes upstream's MarshalPodAnnotation writes for the entries
// AddRoutesGatewayIP (pkg/allocator/pod/pod_annotation.go) builds: on
// Layer3 the gateway is the host subnet's first address
// (GetNodeGatewayIP), each address routes its family's cluster subnets via
// it, and a Primary network also its service CIDRs and join subnet, with the
// gateway as default route; a Secondary Layer3 network has the cluster
// subnet route only; Secondary Layer2 and Localnet have no routes, their
// gateways only the pod's default-route request; role is "primary" or
// "secondary" (pkg/types/const.go NetworkRolePrimary/Secondary), ip_address
// and gateway_ip repeat a single-stack entry's.
func TestEntryBytes(t *testing.T) {
	v4 := prefixes("10.20.1.3/24")
	dual := prefixes("10.20.1.3/24", "fd00:20:1::3/64")
	cluster := prefixes("10.20.0.0/16", "fd00:20::/48")
	svc := prefixes("10.96.0.0/16", "fd00:10:96::/112")
	join := []netip.Prefix{ovnk.DefaultUDNJoinSubnetV4, ovnk.DefaultUDNJoinSubnetV6}
	mac := ovnk.MACFromIP(v4[0].Addr())
	build := func(f func() (PodNetwork, error)) string {
		t.Helper()
		pn, err := f()
		if err != nil {
			t.Fatal(err)
		}
		v, err := PodNetworks{"ns/net": pn}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for name, c := range map[string]struct{ got, want string }{
		"primary layer3 single-stack": {build(func() (PodNetwork, error) {
			return Layer3PodNetwork(v4, mac, cluster, true, svc, join, nil)
		}), `{"ns/net":{"ip_addresses":["10.20.1.3/24"],"mac_address":"0a:58:0a:14:01:03","gateway_ips":["10.20.1.1"],` +
			`"routes":[{"dest":"10.20.0.0/16","nextHop":"10.20.1.1"},{"dest":"10.96.0.0/16","nextHop":"10.20.1.1"},{"dest":"100.65.0.0/16","nextHop":"10.20.1.1"}],` +
			`"ip_address":"10.20.1.3/24","gateway_ip":"10.20.1.1","role":"primary"}}`},
		"primary layer3 dual-stack": {build(func() (PodNetwork, error) {
			return Layer3PodNetwork(dual, mac, cluster, true, svc, join, nil)
		}), `{"ns/net":{"ip_addresses":["10.20.1.3/24","fd00:20:1::3/64"],"mac_address":"0a:58:0a:14:01:03","gateway_ips":["10.20.1.1","fd00:20:1::1"],` +
			`"routes":[{"dest":"10.20.0.0/16","nextHop":"10.20.1.1"},{"dest":"10.96.0.0/16","nextHop":"10.20.1.1"},{"dest":"100.65.0.0/16","nextHop":"10.20.1.1"},` +
			`{"dest":"fd00:20::/48","nextHop":"fd00:20:1::1"},{"dest":"fd00:10:96::/112","nextHop":"fd00:20:1::1"},{"dest":"fd99::/64","nextHop":"fd00:20:1::1"}],` +
			`"role":"primary"}}`},
		"secondary layer3": {build(func() (PodNetwork, error) {
			return Layer3PodNetwork(v4, mac, cluster, false, svc, join, nil)
		}), `{"ns/net":{"ip_addresses":["10.20.1.3/24"],"mac_address":"0a:58:0a:14:01:03","routes":[{"dest":"10.20.0.0/16","nextHop":"10.20.1.1"}],` +
			`"ip_address":"10.20.1.3/24","role":"secondary"}}`},
		"secondary layer3 with default-route": {build(func() (PodNetwork, error) {
			return Layer3PodNetwork(v4, mac, cluster, false, svc, join, []netip.Addr{netip.MustParseAddr("10.20.1.254")})
		}), `{"ns/net":{"ip_addresses":["10.20.1.3/24"],"mac_address":"0a:58:0a:14:01:03","gateway_ips":["10.20.1.254"],"routes":[{"dest":"10.20.0.0/16","nextHop":"10.20.1.1"}],` +
			`"ip_address":"10.20.1.3/24","gateway_ip":"10.20.1.254","role":"secondary"}}`},
		"secondary layer2": {build(func() (PodNetwork, error) {
			return SecondaryPodNetwork(prefixes("10.30.0.1/24"), ovnk.MACFromIP(netip.MustParseAddr("10.30.0.1")), nil, 10)
		}), `{"ns/net":{"ip_addresses":["10.30.0.1/24"],"mac_address":"0a:58:0a:1e:00:01","ip_address":"10.30.0.1/24","tunnel_id":10,"role":"secondary"}}`},
		"localnet without IPAM": {build(func() (PodNetwork, error) {
			return SecondaryPodNetwork(nil, mac, nil, 0)
		}), `{"ns/net":{"ip_addresses":null,"mac_address":"0a:58:0a:14:01:03","role":"secondary"}}`},
	} {
		if c.got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", name, c.got, c.want)
		}
	}
	// MarshalPodAnnotation: "single-stack network can only have a single gateway".
	_, err := SecondaryPodNetwork(prefixes("10.30.0.1/24"), mac, []netip.Addr{netip.MustParseAddr("10.30.0.254"), netip.MustParseAddr("10.30.0.253")}, 0)
	if err == nil || !strings.Contains(err.Error(), "a single-stack network can only have a single gateway") {
		t.Errorf("two gateways on a single-stack entry: %v", err)
	}
}

// Both forms of k8s.v1.cni.cncf.io/networks, as Multus and upstream read
// them (the NAD client's ParseNetworkAnnotation); an element without name
// is refused.
func TestDecodeNetworkSelections(t *testing.T) {
	list, err := DecodeNetworkSelections("blue, other/red@eth9", "ns")
	if err != nil || len(list) != 2 || list[0].Namespace != "ns" || list[0].Name != "blue" ||
		list[1].Namespace != "other" || list[1].Name != "red" || list[1].InterfaceRequest != "eth9" {
		t.Fatalf("comma form: %+v, %v", list, err)
	}
	list, err = DecodeNetworkSelections(`[{"name":"blue","interface":"net1","ips":["10.0.0.5/24"],"mac":"02:00:00:00:00:05","default-route":["10.0.0.1"]}]`, "ns")
	if err != nil || len(list) != 1 || list[0].Namespace != "ns" || list[0].InterfaceRequest != "net1" ||
		list[0].IPRequest[0] != "10.0.0.5/24" || list[0].MacRequest != "02:00:00:00:00:05" || list[0].GatewayRequest[0].String() != "10.0.0.1" {
		t.Fatalf("JSON form: %+v, %v", list, err)
	}
	if list, err := DecodeNetworkSelections("  ", "ns"); list != nil || err != nil {
		t.Errorf("empty: %v, %v", list, err)
	}
	for _, bad := range []string{`[{"namespace":"ns"}]`, `[{"name":`, "a/b/c"} {
		if _, err := DecodeNetworkSelections(bad, "ns"); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}
