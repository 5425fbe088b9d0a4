package ovnk

import (
	"net/netip"
	"strings"
	"testing"
)

// referenceL3Gateway is node-a's annotation in the reference cluster
// (../shared/upstream-live/manifests/nodes.json), as ovnkube-node writes it.
const referenceL3Gateway = `{"default": {"mode": "shared", "bridge-id": "breth0", "interface-id": "breth0_node-a", "mac-address": "0a:58:c0:00:02:02", "ip-addresses": ["192.0.2.2/24", "2001:db8::2/64"], "next-hops": ["192.0.2.1", "2001:db8::1"], "node-port-enable": "true", "vlan-id": "0"}}`

func TestL3GatewayConfigGolden(t *testing.T) {
	cfg, ok, err := DecodeL3GatewayConfig(node("node-a", map[string]string{AnnotationL3GatewayConfig: referenceL3Gateway}))
	if err != nil || !ok {
		t.Fatalf("decode: ok=%v err=%v", ok, err)
	}
	if cfg.Mode != GatewayModeShared || cfg.BridgeID != "breth0" || cfg.InterfaceID != "breth0_node-a" || cfg.MAC.String() != "0a:58:c0:00:02:02" ||
		!cfg.NodePortEnable || cfg.VLANID != 0 {
		t.Errorf("decoded %+v", cfg)
	}
	if want := []netip.Prefix{netip.MustParsePrefix("192.0.2.2/24"), netip.MustParsePrefix("2001:db8::2/64")}; len(cfg.IPAddresses) != 2 ||
		cfg.IPAddresses[0] != want[0] || cfg.IPAddresses[1] != want[1] {
		t.Errorf("ip-addresses = %v", cfg.IPAddresses)
	}
	if len(cfg.NextHops) != 2 || cfg.NextHops[1] != netip.MustParseAddr("2001:db8::1") {
		t.Errorf("next-hops = %v", cfg.NextHops)
	}
	// Upstream's MarshalJSON (Go's encoding, no spaces, single-value fields
	// only beside one value).
	want := `{"default":{"mode":"shared","bridge-id":"breth0","interface-id":"breth0_node-a","mac-address":"0a:58:c0:00:02:02",` +
		`"ip-addresses":["192.0.2.2/24","2001:db8::2/64"],"next-hops":["192.0.2.1","2001:db8::1"],"node-port-enable":"true","vlan-id":"0"}}`
	if got := cfg.Encode(); got != want {
		t.Errorf("Encode:\n got %s\nwant %s", got, want)
	}
	single := cfg
	single.IPAddresses, single.NextHops, single.VLANID = cfg.IPAddresses[:1], cfg.NextHops[:1], 10
	if got := single.Encode(); !strings.Contains(got, `"ip-address":"192.0.2.2/24"`) || !strings.Contains(got, `"next-hop":"192.0.2.1"`) ||
		!strings.Contains(got, `"vlan-id":"10"`) {
		t.Errorf("single-stack Encode = %s", got)
	}
	back, _, err := DecodeL3GatewayConfig(node("n", map[string]string{AnnotationL3GatewayConfig: single.Encode()}))
	if err != nil || back.VLANID != 10 || len(back.IPAddresses) != 1 {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	// The compatibility field alone, as older ovnkube-nodes write it.
	old, _, err := DecodeL3GatewayConfig(node("n", map[string]string{AnnotationL3GatewayConfig: `{"default":{"mode":"local","mac-address":"0a:58:c0:00:02:02","ip-address":"192.0.2.9/24"}}`}))
	if err != nil || old.Mode != GatewayModeLocal || len(old.IPAddresses) != 1 || old.IPAddresses[0].String() != "192.0.2.9/24" {
		t.Errorf("ip-address only: %+v, %v", old, err)
	}
	if d, ok, err := DecodeL3GatewayConfig(node("n", map[string]string{AnnotationL3GatewayConfig: `{"default":{"mode":""}}`})); err != nil || !ok ||
		d.Mode != GatewayModeDisabled || d.Encode() != `{"default":{"mode":""}}` {
		t.Errorf("disabled: %+v ok=%v err=%v", d, ok, err)
	}
	if _, ok, err := DecodeL3GatewayConfig(node("n", nil)); ok || err != nil {
		t.Errorf("absent: ok=%v err=%v", ok, err)
	}
}

func TestL3GatewayConfigRejects(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{`not json`, "not a JSON object of gateway configs"},
		{`{"other":{"mode":"shared"}}`, `has no "default" gateway`},
		{`{"default":{"mode":"bridged"}}`, `mode "bridged": must be shared, local or empty`},
		{`{"default":{"mode":"shared","mac-address":"zz","ip-addresses":["192.0.2.2/24"]}}`, `mac-address "zz": not a MAC address`},
		{`{"default":{"mode":"shared","mac-address":"0a:58:c0:00:02:02"}}`, "ip-addresses: a gateway needs at least one address"},
		{`{"default":{"mode":"shared","mac-address":"0a:58:c0:00:02:02","ip-addresses":["192.0.2.2"]}}`, `ip-addresses "192.0.2.2": not an address with its prefix length`},
		{`{"default":{"mode":"shared","mac-address":"0a:58:c0:00:02:02","ip-addresses":["192.0.2.2/24"],"next-hops":["x"]}}`, `next-hops "x": not an IP address`},
		{`{"default":{"mode":"shared","mac-address":"0a:58:c0:00:02:02","ip-addresses":["192.0.2.2/24"],"vlan-id":"4096"}}`, `vlan-id "4096": must be an integer in [0, 4095]`},
	} {
		_, ok, err := DecodeL3GatewayConfig(node("node-x", map[string]string{AnnotationL3GatewayConfig: tc.value}))
		if err == nil || ok || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "node node-x annotation "+AnnotationL3GatewayConfig) {
			t.Errorf("%s: ok=%v err=%v, want %q", tc.value, ok, err, tc.want)
		}
	}
}

func TestGatewayModeAndPortRange(t *testing.T) {
	for _, s := range []string{"shared", "local"} {
		if m, err := ParseGatewayMode(s); err != nil || string(m) != s {
			t.Errorf("%s: %v %v", s, m, err)
		}
	}
	if _, err := ParseGatewayMode("disabled"); err == nil || !strings.Contains(err.Error(), `must be "shared" or "local"`) {
		t.Errorf("disabled: %v", err)
	}
	if err := ValidateExternalPortRange(DefaultExternalPortRange); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"", "1024", "0-100", "100-100", "200-100", "1-65536", "1-2x", " 1-2", "01-2"} {
		if err := ValidateExternalPortRange(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if a, _ := HostMasqueradeIP(netip.MustParsePrefix("169.254.0.0/17")); a.String() != "169.254.0.2" {
		t.Errorf("host masquerade IP %s", a)
	}
	if a, _ := DummyNextHopMasqueradeIP(netip.MustParsePrefix("fd69::/112")); a.String() != "fd69::4" {
		t.Errorf("dummy next hop %s", a)
	}
}
