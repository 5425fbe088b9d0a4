package ovnk

import (
	"net/netip"
	"strings"
	"testing"
)

func TestEncapIPMappingGolden(t *testing.T) {
	m := EncapIPMapping{"encap/tenant": "172.18.0.9", "cluster_udn_blue": "172.18.0.10"}
	const want = `{"cluster_udn_blue":"172.18.0.10","encap/tenant":"172.18.0.9"}`
	if got := m.Encode(); got != want {
		t.Fatalf("Encode =\n%s\nwant\n%s", got, want)
	}
	if got := EncapIPMapping(nil).Encode(); got != "{}" {
		t.Errorf("empty mapping encodes as %s", got)
	}
	back, err := DecodeEncapIPMapping(map[string]string{AnnotationEncapIPMapping: `{"encap/tenant": "172.18.0.9", "cluster_udn_blue": "172.18.0.10"}`})
	if err != nil || back.Encode() != want {
		t.Fatalf("decoded %v, %v", back, err)
	}
	// By NAD key first, then by network name; none of the keys is "".
	if got := back.For("encap/tenant", "cluster_udn_blue"); got != "172.18.0.9" {
		t.Errorf("For(NAD key, network) = %q", got)
	}
	if got := back.For("other/nad", "cluster_udn_blue"); got != "172.18.0.10" {
		t.Errorf("For(other NAD key, network) = %q", got)
	}
	if got := back.For("other/nad"); got != "" {
		t.Errorf("For(unknown) = %q", got)
	}
	if m, err := DecodeEncapIPMapping(nil); err != nil || len(m) != 0 {
		t.Errorf("no annotation: %v, %v", m, err)
	}
	if _, err := DecodeEncapIPMapping(map[string]string{AnnotationEncapIPMapping: `["172.18.0.9"]`}); err == nil || !strings.Contains(err.Error(), AnnotationEncapIPMapping) {
		t.Errorf("a list: err = %v, want one naming the annotation", err)
	}
}

func TestIsCanonicalNodeSubnets(t *testing.T) {
	subnets := map[string][]netip.Prefix{"default": {netip.MustParsePrefix("10.244.0.0/24")}, "ns_net": {netip.MustParsePrefix("10.60.1.0/24")}}
	for _, tc := range []struct {
		v    string
		want bool
	}{
		{`{"default":["10.244.0.0/24"],"ns_net":["10.60.1.0/24"]}`, true},
		{`{"ns_net": ["10.60.1.0/24"], "default": ["10.244.0.0/24"]}`, true}, // key order and spacing aside
		{`{"default":"10.244.0.0/24","ns_net":["10.60.1.0/24"]}`, false},     // a single CIDR is rewritten as a list
		{`{"default":["10.244.0.0/24"]}`, false},
	} {
		if got := IsCanonicalNodeSubnets(tc.v, subnets); got != tc.want {
			t.Errorf("IsCanonicalNodeSubnets(%s) = %v, want %v", tc.v, got, tc.want)
		}
	}
}
