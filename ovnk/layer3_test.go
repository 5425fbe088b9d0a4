package ovnk

import (
	"net/netip"
	"strings"
	"testing"
)

// k8s.ovn.org/node-transit-switch-port-ifaddr as upstream's cluster manager
// writes it (the reference case's node-a), read and written back byte for
// byte; malformed values are refused naming the annotation.
func TestNodeTransitSwitchPortAddrs(t *testing.T) {
	const golden = `{"ipv4":"100.88.0.2/16","ipv6":"fd97::2/64"}`
	got, ok, err := DecodeNodeTransitSwitchPortAddrs(map[string]string{AnnotationNodeTransitSwitchPortIfAddr: golden})
	if err != nil || !ok || len(got) != 2 || got[0] != netip.MustParsePrefix("100.88.0.2/16") || got[1] != netip.MustParsePrefix("fd97::2/64") {
		t.Fatalf("Decode(%s) = %v, %v, %v", golden, got, ok, err)
	}
	if enc := EncodeNodeTransitSwitchPortAddrs(got); enc != golden {
		t.Errorf("Encode = %s, want %s", enc, golden)
	}
	if _, ok, err := DecodeNodeTransitSwitchPortAddrs(nil); ok || err != nil {
		t.Errorf("absent annotation: ok = %v, err = %v", ok, err)
	}
	for _, bad := range []string{`[]`, `{}`, `{"ipv4":"fd97::2/64"}`, `{"ipv6":"100.88.0.2"}`} {
		if _, _, err := DecodeNodeTransitSwitchPortAddrs(map[string]string{AnnotationNodeTransitSwitchPortIfAddr: bad}); err == nil ||
			!strings.Contains(err.Error(), AnnotationNodeTransitSwitchPortIfAddr) {
			t.Errorf("Decode(%s): err = %v, want one naming the annotation", bad, err)
		}
	}
	if a, err := TransitSwitchPortAddr(DefaultTransitSubnetV6, 4); err != nil || a != netip.MustParsePrefix("fd97::4/64") {
		t.Errorf("TransitSwitchPortAddr(fd97::/64, 4) = %v, %v", a, err)
	}
	if _, err := TransitSwitchPortAddr(netip.MustParsePrefix("100.88.0.0/30"), 9); err == nil {
		t.Error("a node ID outside the transit subnet was given an address")
	}
}

// The no-reroute policies' external IDs, as the reference case's upstream
// row holds them.
func TestEgressIPNoRerouteIDs(t *testing.T) {
	ids := EgressIPNoRerouteIDs("tenant-green_green", EgressIPNoReroutePodToPod, 102, "ip4")
	want := map[string]string{
		"k8s.ovn.org/id":               "default-network-controller:EgressIP:102:EIP-No-Reroute-Pod-To-Pod:ip4:tenant-green_green",
		"k8s.ovn.org/name":             "EIP-No-Reroute-Pod-To-Pod",
		"k8s.ovn.org/owner-controller": "default-network-controller",
		"k8s.ovn.org/owner-type":       "EgressIP",
		"ip-family":                    "ip4", "network": "tenant-green_green", "priority": "102",
	}
	if len(ids) != len(want) {
		t.Errorf("ids = %v, want %v", ids, want)
	}
	for k, v := range want {
		if ids[k] != v {
			t.Errorf("%s = %q, want %q", k, ids[k], v)
		}
	}
}
