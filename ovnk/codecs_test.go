package ovnk

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNetworkIDsGolden(t *testing.T) {
	// OKEP-5094 option 3 as upstream: [switch key (legacy: BaseTransitSwitchTunnelKey 16711683 + network ID), transit router key (from 16711683 + 4096)].
	ann := map[string]string{}
	if !(NetworkIDs{ID: 5, TunnelKeys: []int{16711688, 16715779}}).Encode(ann) {
		t.Fatal("nothing written")
	}
	if ann[AnnotationNetworkID] != "5" || ann[AnnotationTunnelKeys] != "[16711688,16715779]" {
		t.Errorf("annotations = %v", ann)
	}
	if (NetworkIDs{ID: 5, TunnelKeys: []int{16711688, 16715779}}).Encode(ann) {
		t.Error("a second Encode of the same IDs reports a change")
	}
	back, err := DecodeNetworkIDs(ann)
	if err != nil || !back.HasID || back.ID != 5 || len(back.TunnelKeys) != 2 || back.TunnelKeys[1] != 16715779 {
		t.Errorf("decoded %+v, %v", back, err)
	}
	none := map[string]string{}
	NetworkIDs{ID: 7}.Encode(none)
	if none[AnnotationTunnelKeys] != "[]" {
		t.Errorf("no keys: tunnel-keys = %q, upstream writes []", none[AnnotationTunnelKeys])
	}
	if k, _ := LegacyTransitSwitchKey(5); k != 16711688 || FirstAllocatedTunnelKey != 16715779 {
		t.Errorf("legacy key of network 5 = %d", k)
	}
	for _, tc := range []struct{ id, keys, want string }{
		{"x", "", `k8s.ovn.org/network-id="x" is not an integer`},
		{"4096", "", "k8s.ovn.org/network-id=4096 is outside [0, 4095]"},
		{"1", "7", `k8s.ovn.org/tunnel-keys="7" is not a JSON list of integers`},
		{"1", "[5]", "tunnel key 5 is outside the interconnect range"},
	} {
		ann := map[string]string{AnnotationNetworkID: tc.id}
		if tc.keys != "" {
			ann[AnnotationTunnelKeys] = tc.keys
		}
		if _, err := DecodeNetworkIDs(ann); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", ann, err, tc.want)
		}
	}
}

func TestNetworkIDsCommitMarkGolden(t *testing.T) {
	ann := map[string]string{}
	ids := NetworkIDs{ID: 5, HasID: true, TunnelKeys: []int{16711688, 16715779}}
	ids.Encode(ann)
	if NetworkIDsCommitted(ann) {
		t.Error("IDs without a commit mark count as committed")
	}
	ann[AnnotationNetworkIDsCommitted] = ids.CommitMark()
	if ann[AnnotationNetworkIDsCommitted] != "5/[16711688,16715779]" || !NetworkIDsCommitted(ann) {
		t.Errorf("committed annotations %v not recognised", ann)
	}
	// IDs written over committed ones are not committed by the old mark,
	// even when they come back to the committed values later.
	if !(NetworkIDs{ID: 6, TunnelKeys: []int{16711689, 16715780}}).Encode(ann) || NetworkIDsCommitted(ann) {
		t.Errorf("new IDs kept the old mark: %v", ann)
	}
	ids.Encode(ann)
	if NetworkIDsCommitted(ann) {
		t.Errorf("IDs written back count as committed without a new check: %v", ann)
	}
	ann[AnnotationNetworkIDsCommitted] = "5/[16711688]"
	if NetworkIDsCommitted(ann) {
		t.Error("a mark of other tunnel keys commits these")
	}
	if NetworkIDsCommitted(map[string]string{AnnotationNetworkIDsCommitted: "0/[]"}) {
		t.Error("a mark without a network ID commits")
	}
}

func node(name string, ann map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann}}
}

func TestNodeCodecsGolden(t *testing.T) {
	// OKEP-5535's node-a.
	a := node("node-a", map[string]string{AnnotationNodeID: "6", AnnotationNodeEncapIPs: `["10.0.0.2","10.0.0.3","10.0.0.4"]`,
		AnnotationNodeTransitSwitchPortTunnelIDs: "[6,7,8]", AnnotationNodeSubnets: `{"default":["10.244.1.0/24"],"tenant.green_green":"10.200.3.0/24"}`})
	if id, ok, err := DecodeNodeID(a); id != 6 || !ok || err != nil {
		t.Errorf("node-id = %d, %v, %v", id, ok, err)
	}
	encaps, err := DecodeNodeEncapIPs(a)
	if err != nil || len(encaps) != 3 || encaps[2] != netip.MustParseAddr("10.0.0.4") {
		t.Errorf("encap IPs = %v, %v", encaps, err)
	}
	ids, err := DecodeNodeTunnelIDs(a)
	if err != nil || EncodeNodeTunnelIDs(ids) != "[6,7,8]" {
		t.Errorf("tunnel IDs = %v, %v", ids, err)
	}
	// A single CIDR (as older upstream versions write it) reads as a list;
	// writing is upstream's updateSubnetAnnotation: lists, keys sorted.
	subnets, err := DecodeNodeSubnets(a)
	if err != nil || len(subnets["tenant.green_green"]) != 1 {
		t.Fatalf("node-subnets = %v, %v", subnets, err)
	}
	if got := EncodeNodeSubnets(subnets); got != `{"default":["10.244.1.0/24"],"tenant.green_green":["10.200.3.0/24"]}` {
		t.Errorf("encoded node-subnets = %s", got)
	}
	// null and [] are no host subnets (upstream reads both as empty lists).
	if got, err := DecodeNodeSubnets(node("n", map[string]string{AnnotationNodeSubnets: `{"a":null,"b":[],"c":"10.0.0.0/24"}`})); err != nil || fmt.Sprint(got) != "map[c:[10.0.0.0/24]]" {
		t.Errorf("node-subnets with null and [] = %v, %v", got, err)
	}
	if EncodeNodeSubnets(nil) != "" {
		t.Error("no subnets must remove the annotation")
	}
	if ZoneOf(a) != "node-a" || ZoneOf(node("n", map[string]string{AnnotationZoneName: "global"})) != "global" {
		t.Error("a node's zone is its name unless an older OVN-Kubernetes set k8s.ovn.org/zone-name")
	}
	if _, ok, err := DecodeNodeID(node("fresh", nil)); ok || err != nil {
		t.Error("a node without node-id has none, without error")
	}
	for _, tc := range []struct {
		ann  map[string]string
		want string
	}{
		{map[string]string{AnnotationNodeID: "99999999"}, `k8s.ovn.org/node-id="99999999" is not a node ID (an integer in [2, 32767])`},
		{map[string]string{AnnotationNodeID: "1"}, "is not a node ID"},
		{map[string]string{AnnotationNodeEncapIPs: `"10.0.0.2"`}, "is not a JSON list of IPs"},
		{map[string]string{AnnotationNodeEncapIPs: `["10.0.0.2","10.0.0.2"]`}, "lists 10.0.0.2 twice"},
		{map[string]string{AnnotationNodeEncapIPs: `["1.1.1.1","1.1.1.2","1.1.1.3","1.1.1.4","1.1.1.5","1.1.1.6","1.1.1.7","1.1.1.8","1.1.1.9"]`}, "at most 8 are supported"},
		{map[string]string{AnnotationNodeTransitSwitchPortTunnelIDs: "[6,0]"}, "0 is outside [2, 32767]"},
		{map[string]string{AnnotationNodeSubnets: `["10.0.0.0/24"]`}, "is not a JSON object of network names to CIDRs"},
		{map[string]string{AnnotationNodeSubnets: `{"n":5}`}, `k8s.ovn.org/node-subnets["n"] is not a CIDR or a list of CIDRs`},
		{map[string]string{AnnotationNodeSubnets: `{"n":["10.0.0.0"]}`}, `k8s.ovn.org/node-subnets["n"]`},
	} {
		n := node("bad", tc.ann)
		_, _, e1 := DecodeNodeID(n)
		_, e2 := DecodeNodeEncapIPs(n)
		_, e3 := DecodeNodeTunnelIDs(n)
		_, e4 := DecodeNodeSubnets(n)
		var msgs []string
		for _, e := range []error{e1, e2, e3, e4} {
			if e != nil {
				msgs = append(msgs, e.Error())
			}
		}
		if len(msgs) != 1 || !strings.Contains(msgs[0], tc.want) || !strings.HasPrefix(msgs[0], "node bad annotation ") {
			t.Errorf("%v: errors %q, want one containing %q", tc.ann, msgs, tc.want)
		}
	}
}

func TestNamesAndMACsGolden(t *testing.T) {
	// OKEP-5094's names and addresses for network test12_namespace-scoped.
	n := NamesFor("test12_namespace-scoped")
	for got, want := range map[string]string{
		n.Switch():                                     "test12_namespace.scoped_ovn_layer2_switch",
		n.TransitRouter():                              "test12_namespace.scoped_transit_router",
		n.GatewayRouter("node1"):                       "GR_test12_namespace.scoped_node1",
		n.TransitToGR("node1"):                         "trtor-GR_test12_namespace.scoped_node1",
		n.GRToTransit("node1"):                         "rtotr-GR_test12_namespace.scoped_node1",
		n.RouterToSwitch():                             "trtos-test12_namespace.scoped_ovn_layer2_switch",
		n.TransitSwitchPort("a", 2):                    "test12_namespace.scoped_tstor-a_encap2",
		PodPortName("ns1/tenant-blue", "ns1", "pod-a"): "ns1.tenant.blue_ns1_pod-a",
		UDNNetworkName("tenant-blue", "blue"):          "tenant-blue_blue",
		CUDNNetworkName("network-l2"):                  "cluster_udn_network-l2",
		NetworkPrefix(CUDNNetworkName("col-x")):        NetworkPrefix(CUDNNetworkName("col.x")),
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	for ip, want := range map[string]string{
		"100.65.0.2":      "0a:58:64:41:00:02", // OKEP-5094's join address example
		"203.203.0.1":     "0a:58:cb:cb:00:01",
		"2010:100:200::1": "0a:58:d7:eb:90:5e", // 0a:58 + sha256("2010:100:200::1")[:4]
		"fd00:100::2":     "0a:58:45:92:9e:61",
	} {
		if got := MACFromIP(netip.MustParseAddr(ip)).String(); got != want {
			t.Errorf("MACFromIP(%s) = %s, want %s", ip, got, want)
		}
	}
	if lla := LinkLocalFromMAC(MACFromIP(netip.MustParseAddr("100.65.0.4"))); lla != netip.MustParseAddr("fe80::858:64ff:fe41:4") {
		t.Errorf("link-local of 0a:58:64:41:00:04 = %s, OKEP-5094 says fe80::858:64ff:fe41:4", lla)
	}
}

// BenchmarkDecodeNodeSubnets decodes a node's k8s.ovn.org/node-subnets with
// 2048 Layer3 networks (make scale's full size: ~100 kB).
// bigNodeSubnets is a node's host subnets at 2048 Layer3 networks.
func bigNodeSubnets() map[string][]netip.Prefix {
	subnets := map[string][]netip.Prefix{}
	for i := range 2048 {
		subnets[fmt.Sprintf("tenant-%04d.network", i)] = []netip.Prefix{netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}), 24)}
	}
	return subnets
}

func BenchmarkDecodeNodeSubnets(b *testing.B) {
	subnets := bigNodeSubnets()
	n := node("big", map[string]string{AnnotationNodeSubnets: EncodeNodeSubnets(subnets)})
	b.ReportAllocs()
	for b.Loop() {
		got, err := DecodeNodeSubnets(n)
		if err != nil || len(got) != len(subnets) {
			b.Fatal(len(got), err)
		}
	}
}

// BenchmarkNodeSubnetsChanged compares two values of a 2048-network
// annotation that differ in one network (the update a new Layer3 network
// makes on every node), beside BenchmarkDecodeNodeSubnets, which decodes one.
func BenchmarkNodeSubnetsChanged(b *testing.B) {
	subnets := bigNodeSubnets()
	old := EncodeNodeSubnets(subnets)
	subnets["tenant-9999.network"] = []netip.Prefix{netip.MustParsePrefix("10.99.0.0/24")}
	cur := EncodeNodeSubnets(subnets)
	b.ReportAllocs()
	for b.Loop() {
		got, err := NodeSubnetsChanged(old, cur)
		if err != nil || len(got) != 1 {
			b.Fatal(got, err)
		}
	}
}

// NodeSubnetsChanged names exactly the networks whose entry was added,
// removed or rewritten, and refuses a value that is not a JSON object.
func TestNodeSubnetsChanged(t *testing.T) {
	for name, tc := range map[string]struct {
		old, cur string
		want     []string
	}{
		"same":             {`{"a":["10.0.0.0/24"],"b":["10.0.1.0/24"]}`, `{"a":["10.0.0.0/24"],"b":["10.0.1.0/24"]}`, nil},
		"one rewritten":    {`{"a":["10.0.0.0/24"],"b":["10.0.1.0/24"]}`, `{"a":["10.0.0.0/24"],"b":["10.0.2.0/24"]}`, []string{"b"}},
		"one added":        {`{"a":["10.0.0.0/24"]}`, `{"a":["10.0.0.0/24"],"c":"10.0.3.0/24"}`, []string{"c"}},
		"one removed":      {`{"a":["10.0.0.0/24"],"b":["10.0.1.0/24"]}`, `{"b":["10.0.1.0/24"]}`, []string{"a"}},
		"annotation added": {``, `{"b":["10.0.1.0/24"],"a":["10.0.0.0/24"]}`, []string{"a", "b"}},
		"annotation gone":  {`{"a":["10.0.0.0/24"]}`, ``, []string{"a"}},
		"reformatted":      {`{"a":"10.0.0.0/24"}`, `{"a":["10.0.0.0/24"]}`, []string{"a"}},
	} {
		got, err := NodeSubnetsChanged(tc.old, tc.cur)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, %v; want %v", name, got, err, tc.want)
		}
	}
	for _, bad := range [][2]string{{`[]`, `{}`}, {`{}`, `{"a":`}} {
		if _, err := NodeSubnetsChanged(bad[0], bad[1]); err == nil || !strings.Contains(err.Error(), AnnotationNodeSubnets) {
			t.Errorf("%q → %q: err = %v, want one naming %s", bad[0], bad[1], err, AnnotationNodeSubnets)
		}
	}
}

// The old Layer2 topology's GR port tunnel key is read per network from
// cluster manager's JSON object of decimal strings (upstream's
// `{"blue":"7"}`); another network's entry or no annotation is no key; a
// malformed value is an error naming the annotation.
func TestDecodeLayer2GRLRPTunnelID(t *testing.T) {
	n := node("node-a", map[string]string{AnnotationLayer2GRLRPTunnelIDs: `{"blue":"7","red":"8"}`})
	if key, ok, err := DecodeLayer2GRLRPTunnelID(n, "red"); key != 8 || !ok || err != nil {
		t.Errorf("red = %d, %v, %v", key, ok, err)
	}
	if _, ok, err := DecodeLayer2GRLRPTunnelID(n, "green"); ok || err != nil {
		t.Errorf("green (absent) = %v, %v", ok, err)
	}
	if _, ok, err := DecodeLayer2GRLRPTunnelID(node("node-b", nil), "blue"); ok || err != nil {
		t.Errorf("no annotation = %v, %v", ok, err)
	}
	for _, v := range []string{`["7"]`, `{"blue":"x"}`, `{"blue":"0"}`} {
		_, ok, err := DecodeLayer2GRLRPTunnelID(node("bad", map[string]string{AnnotationLayer2GRLRPTunnelIDs: v}), "blue")
		if ok || err == nil || !strings.Contains(err.Error(), "node bad annotation "+AnnotationLayer2GRLRPTunnelIDs) {
			t.Errorf("%s: ok %v, error %v", v, ok, err)
		}
	}
}
