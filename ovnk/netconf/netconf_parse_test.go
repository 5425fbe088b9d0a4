package netconf

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
)

// What Render writes, Parse and SubnetPrefixes read back.
func TestParseRoundTrip(t *testing.T) {
	spec := udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer3, Layer3: &udnv1.Layer3Config{
		Role: udnv1.NetworkRolePrimary, MTU: 1400,
		Subnets: []udnv1.Layer3Subnet{{CIDR: "10.200.0.0/16", HostSubnet: 24}, {CIDR: "fd00:20::/48"}},
	}}
	config, err := Render(spec, Options{NetworkName: "ns_green", NADName: "ns/green",
		DefaultJoinSubnets: []netip.Prefix{netip.MustParsePrefix("100.65.0.0/16"), netip.MustParsePrefix("fd99::/64")}})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := Parse(config)
	if err != nil {
		t.Fatal(err)
	}
	if nc.Name != "ns_green" || nc.Topology != "layer3" || nc.Role != "primary" || nc.MTU != 1400 {
		t.Errorf("parsed %+v", nc)
	}
	subnets, err := nc.SubnetPrefixes()
	if err != nil {
		t.Fatal(err)
	}
	if len(subnets) != 2 || subnets[0].String() != "10.200.0.0/16" || subnets[1].String() != "fd00:20::/48" {
		t.Errorf("subnets %v", subnets)
	}
	join, err := ovnk.ParsePrefixes(nc.JoinSubnet)
	if err != nil || len(join) != 2 {
		t.Errorf("join subnets %v %v", join, err)
	}
}

// A subnet written with host bits is rendered as written, as upstream's
// renderer does, and read back as the network it stands for.
func TestParseMasksHostBits(t *testing.T) {
	spec := udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer3, Layer3: &udnv1.Layer3Config{
		Role: udnv1.NetworkRolePrimary, Subnets: []udnv1.Layer3Subnet{{CIDR: "10.20.100.0/16", HostSubnet: 24}},
		JoinSubnets: udnv1.DualStackCIDRs{"100.66.0.0/16"},
	}}
	config, err := Render(spec, Options{NetworkName: "ns_red", NADName: "ns/red"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(config, `"subnets":"10.20.100.0/16/24"`) {
		t.Errorf("the NetConf should keep the subnet as written: %s", config)
	}
	nc, err := Parse(config)
	if err != nil {
		t.Fatal(err)
	}
	subnets, err := nc.SubnetPrefixes()
	if err != nil || len(subnets) != 1 || subnets[0] != netip.MustParsePrefix("10.20.0.0/16") {
		t.Errorf("SubnetPrefixes = %v, %v; want [10.20.0.0/16]", subnets, err)
	}
	got, err := ovnk.ParsePrefixes("10.66.0.1/24, fd00:66::1/64")
	if err != nil || len(got) != 2 || got[0] != netip.MustParsePrefix("10.66.0.0/24") || got[1] != netip.MustParsePrefix("fd00:66::/64") {
		t.Errorf("ParsePrefixes = %v, %v; want [10.66.0.0/24 fd00:66::/64]", got, err)
	}
}

func TestParseRejects(t *testing.T) {
	if _, err := Parse("{not json"); err == nil {
		t.Error("malformed config accepted")
	}
	for _, bad := range []string{"10.0.0.0/16/8", "10.0.0.0/16/33", "10.0.0.0/16/x", "10.0.0.0"} {
		nc := &NetConf{Subnets: "10.1.0.0/16," + bad}
		if _, err := nc.SubnetPrefixes(); err == nil || !strings.Contains(err.Error(), "subnets[1]") {
			t.Errorf("subnets %q: err = %v, want subnets[1] named", bad, err)
		}
	}
	if _, err := ovnk.ParsePrefixes("100.65.0.0/16,bogus"); err == nil {
		t.Error("a bad CIDR list was accepted")
	}
	if _, err := ovnk.ParseAddrs("10.0.0.1, 10.0.0.300"); err == nil {
		t.Error("a bad address list was accepted")
	}
	if got, err := ovnk.ParseAddrs(" 10.0.0.1 , ,fd00::1"); err != nil || len(got) != 2 {
		t.Errorf("ParseAddrs = %v, %v", got, err)
	}
}

// A NAD's mtu as upstream's NetInfo.MTU() has it (config/cni.go decodes the
// config over one holding --mtu): the key's value, an explicit 0 included;
// the cluster's MTU when the key is missing or null.
func TestNetworkMTU(t *testing.T) {
	const head = `{"cniVersion":"1.1.0","type":"ovn-k8s-cni-overlay","name":"ns_blue","netAttachDefName":"ns/blue","topology":"layer2","role":"primary"`
	for _, tc := range []struct {
		name, config string
		want         int32
	}{
		{"no mtu key", head + `}`, 1400},
		{"mtu null", head + `,"mtu":null}`, 1400},
		{"explicit mtu 0", head + `,"mtu":0}`, 0},
		{"mtu 1300", head + `,"mtu":1300}`, 1300},
	} {
		nc, err := Parse(tc.config)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := nc.NetworkMTU(1400); got != tc.want {
			t.Errorf("%s: NetworkMTU(1400) = %d, want %d", tc.name, got, tc.want)
		}
	}
	// What Render writes reads back as the spec's MTU, or the cluster's
	// when the spec has none (Render leaves the key out).
	for _, mtu := range []int32{0, 1300} {
		spec := udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2, Layer2: &udnv1.Layer2Config{
			Role: udnv1.NetworkRoleSecondary, Subnets: udnv1.DualStackCIDRs{"10.1.0.0/16"}, MTU: mtu}}
		config, err := Render(spec, Options{NetworkName: "ns_blue", NADName: "ns/blue"})
		if err != nil {
			t.Fatal(err)
		}
		nc, err := Parse(config)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := nc.NetworkMTU(1400), cmp.Or(mtu, 1400); got != want {
			t.Errorf("rendered spec mtu %d: NetworkMTU(1400) = %d, want %d", mtu, got, want)
		}
	}
}

// parseTwice is Parse as it was: the config decoded into the NetConf, then
// again for the mtu key. Parse decodes once and must agree with it.
func parseTwice(config string) (*NetConf, error) {
	nc := &NetConf{}
	if err := json.Unmarshal([]byte(config), nc); err != nil {
		return nil, err
	}
	var keys struct {
		MTU *int32 `json:"mtu"`
	}
	if err := json.Unmarshal([]byte(config), &keys); err != nil {
		return nil, err
	}
	nc.mtuGiven = keys.MTU != nil
	return nc, nil
}

// Parse gives what two decodes gave: the same NetConf (the mtu key seen
// when given, 0 included, and not for null) and, for a malformed config,
// the same error, word for word.
func TestParseDecodesOnceAsTwice(t *testing.T) {
	for _, config := range []string{
		`{"name":"ns_blue","topology":"layer2","role":"primary","mtu":1400,"subnets":"10.1.0.0/16"}`,
		`{"name":"ns_blue","topology":"layer2","mtu":0}`,
		`{"name":"ns_blue","topology":"layer2","mtu":null}`,
		`{"name":"ns_blue","topology":"layer2"}`,
		`{"name":"ns_blue","MTU":1300}`,
		`{"name":"ns_blue","mtu":1300,"mtu":1200}`,
		`{"name":"ns_blue","mtu":1300,"mtu":null}`,
		`{"name":"ns_blue","mtu":null,"mtu":0}`,
		`{"name":"ns_blue","Mtu":0}`,
		`{"name":"ns_blue","evpn":{"vtep":"v","macVRF":{"vni":5}}}`,
		`{"name":"ns_blue","mtu":"1400"}`,
		`{"name":"ns_blue","mtu":1e10}`,
		`{"name":5}`,
		`{"name":"x","evpn":{"macVRF":{"vni":"5"}}}`,
		`{"name":"x","vlanID":true}`,
		`{not json`,
		`[]`,
		``,
		`null`,
	} {
		got, gotErr := Parse(config)
		want, wantErr := parseTwice(config)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Errorf("%s: error %q, two decodes gave %q", config, gotErr, wantErr)
			continue
		}
		if wantErr == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("%s: parsed %+v, two decodes gave %+v", config, got, want)
		}
	}
	if nc, err := Parse(`{"mtu":0}`); err != nil || nc.NetworkMTU(1500) != 0 {
		t.Errorf(`{"mtu":0}: NetworkMTU(1500) = %v (%v), want the explicit 0`, nc, err)
	}
	if nc, err := Parse(`{"mtu":null}`); err != nil || nc.NetworkMTU(1500) != 1500 {
		t.Errorf(`{"mtu":null}: NetworkMTU(1500) = %v (%v), want the cluster's`, nc, err)
	}
}
