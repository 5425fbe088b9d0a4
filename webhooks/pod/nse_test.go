package pod

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
	"github.com/udnkit/udnkit/webhooks/internal/webhooktest"
)

// predefined is the OKEP-5233 example network, made dual-stack.
func predefined() *udnv1.Layer2Config {
	return &udnv1.Layer2Config{
		Role:                  udnv1.NetworkRolePrimary,
		Subnets:               udnv1.DualStackCIDRs{"192.168.100.0/24", "fd00:100::/64"},
		InfrastructureSubnets: []udnv1.NetworkCIDR{"192.168.100.0/30", "fd00:100::/126"},
		ReservedSubnets:       []udnv1.NetworkCIDR{"192.168.100.200/29"},
		DefaultGatewayIPs:     udnv1.DualStackIPs{"192.168.100.2", "fd00:100::2"},
	}
}

func TestValidateNetworkSelection(t *testing.T) {
	path := field.NewPath("metadata", "annotations").Key(ovnk.AnnotationDefaultNetwork)
	const p = "metadata.annotations[v1.multus-cni.io/default-network]"
	noInfra := func() *udnv1.Layer2Config {
		c := predefined()
		c.InfrastructureSubnets, c.DefaultGatewayIPs = nil, nil
		return c
	}
	cases := []struct {
		name  string
		value string
		net   *udnv1.Layer2Config
		want  []webhooktest.Want
	}{
		{"OKEP example on a dual-stack network", `{"name":"default","namespace":"ovn-kubernetes","ips":["192.168.100.205"],"mac":"00:1A:2B:3C:4D:5E"}`, predefined(),
			[]webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: p + ".ips", Detail: "must hold one address for each IP family of the network, IPv4 and IPv6 (subnets [192.168.100.0/24 fd00:100::/64]); it has no IPv6 address."}}},
		{"OKEP example with both families", `{"name":"default","namespace":"ovn-kubernetes","ips":["192.168.100.205","fd00:100::205"],"mac":"00:1A:2B:3C:4D:5E"}`, predefined(), nil},
		{"dual-stack with prefix lengths", `{"name":"default","namespace":"ovn-kubernetes","ips":["192.168.100.10/24","fd00:100::10/64"]}`, predefined(), nil},
		{"old default gateway and management IPs are free once moved", `{"name":"default","namespace":"ovn-kubernetes","ips":["192.168.100.4","fd00:100::4"]}`, predefined(), nil},
		{"MAC only", `{"name":"default","namespace":"ovn-kubernetes","mac":"02:00:00:00:00:01"}`, predefined(), nil},
		{"wrong name", `{"name":"blue","namespace":"ovn-kubernetes"}`, predefined(),
			[]webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: p + ".name", Detail: `must reference ovn-kubernetes/default`}}},
		{"wrong namespace", `{"name":"default","namespace":"tenant"}`, predefined(),
			[]webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: p + ".name", Detail: `namespace "ovn-kubernetes"`}}},
		{"unparsable IP", `{"name":"default","namespace":"ovn-kubernetes","ips":["192.168.100.300"]}`, predefined(),
			[]webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: p + ".ips[0]", Detail: "must be an IP address with or without a prefix length"}}},
		{"IP with zone", `{"name":"default","namespace":"ovn-kubernetes","ips":["fd00:100::10%eth0"]}`, predefined(),
			[]webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: p + ".ips[0]", Detail: "zones are not allowed"}}},
		{"outside the subnets", `{"name":"default","namespace":"ovn-kubernetes","ips":["10.0.0.5"]}`, predefined(),
			[]webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: p + ".ips[0]", Detail: "is not inside any of the network's subnets [192.168.100.0/24 fd00:100::/64]"}}},
		{"two IPv4", `{"name":"default","namespace":"ovn-kubernetes","ips":["192.168.100.10","192.168.100.11"]}`, predefined(),
			[]webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: p + ".ips[1]", Detail: "is a second IPv4 address; at most one IP per IP family"}}},
		{"infrastructure subnet", `{"name":"default","namespace":"ovn-kubernetes","ips":["192.168.100.3"]}`, predefined(),
			[]webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: p + ".ips[0]", Detail: "is inside infrastructureSubnets entry 192.168.100.0/30"}}},
		{"configured gateway", `{"name":"default","namespace":"ovn-kubernetes","ips":["fd00:100::2"]}`, predefined(),
			[]webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: p + ".ips[0]", Detail: "is the network's default gateway IP fd00:100::2"}}},
		{"network address", `{"name":"default","namespace":"ovn-kubernetes","ips":["192.168.100.0/24"]}`, predefined(),
			[]webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: p + ".ips[0]", Detail: "is the network address of subnet 192.168.100.0/24"}}},
		{"IPv6 network address", `{"name":"default","namespace":"ovn-kubernetes","ips":["fd00:100::"]}`, predefined(),
			[]webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: p + ".ips[0]", Detail: "is the network address of subnet fd00:100::/64"}}},
		{"broadcast", `{"name":"default","namespace":"ovn-kubernetes","ips":["192.168.100.255"]}`, predefined(),
			[]webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: p + ".ips[0]", Detail: "is the broadcast address of subnet 192.168.100.0/24"}}},
		{"IPv6 has no broadcast", `{"name":"default","namespace":"ovn-kubernetes","ips":["fd00:100::ffff:ffff:ffff:ffff","192.168.100.10"]}`, predefined(), nil},
		{"default gateway is the first address", `{"name":"default","namespace":"ovn-kubernetes","ips":["192.168.100.1"]}`, noInfra(),
			[]webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: p + ".ips[0]", Detail: "is the network's default gateway IP 192.168.100.1"}}},
		{"default management port is the second address", `{"name":"default","namespace":"ovn-kubernetes","ips":["fd00:100::2"]}`, noInfra(),
			[]webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: p + ".ips[0]", Detail: "is the management port address fd00:100::2"}}},
		{"multicast MAC", `{"name":"default","namespace":"ovn-kubernetes","mac":"01:00:5e:00:00:01"}`, predefined(),
			[]webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: p + ".mac", Detail: "must be a unicast MAC address"}}},
		{"all-zero MAC", `{"name":"default","namespace":"ovn-kubernetes","mac":"00:00:00:00:00:00"}`, predefined(),
			[]webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: p + ".mac", Detail: "must not be the all-zero MAC address 00:00:00:00:00:00"}}},
		{"all-zero MAC, dashes", `{"name":"default","namespace":"ovn-kubernetes","mac":"00-00-00-00-00-00"}`, predefined(),
			[]webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: p + ".mac", Detail: "all-zero"}}},
		{"malformed MAC", `{"name":"default","namespace":"ovn-kubernetes","mac":"00:1A:2B:3C:4D"}`, predefined(),
			[]webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: p + ".mac", Detail: "must be a MAC address such as 02:00:00:00:00:01"}}},
		{"EUI-64 MAC", `{"name":"default","namespace":"ovn-kubernetes","mac":"02:00:00:00:00:00:00:01"}`, predefined(),
			[]webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: p + ".mac", Detail: "must be a 48-bit MAC address"}}},
		{"every error at once", `{"name":"x","ips":["bad","192.168.100.1","192.168.100.9"],"mac":"ff:ff:ff:ff:ff:ff"}`, predefined(), []webhooktest.Want{
			{Type: field.ErrorTypeInvalid, Field: p + ".name", Detail: "must reference"},
			{Type: field.ErrorTypeInvalid, Field: p + ".ips[0]", Detail: "must be an IP address"},
			{Type: field.ErrorTypeInvalid, Field: p + ".ips[1]", Detail: "infrastructureSubnets"},
			{Type: field.ErrorTypeInvalid, Field: p + ".ips[2]", Detail: "second IPv4"},
			{Type: field.ErrorTypeInvalid, Field: p + ".mac", Detail: "unicast"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nse, _, err := podannotation.DecodeDefaultNetworkSelection(tc.value, "tenant")
			if err != nil {
				t.Fatal(err)
			}
			webhooktest.Check(t, ValidateNetworkSelection(path, nse, tc.net), tc.want)
		})
	}
}

func TestNetworkSelectionWarnings(t *testing.T) {
	path := field.NewPath("metadata", "annotations").Key(ovnk.AnnotationDefaultNetwork)
	w := NetworkSelectionWarnings(path, &nadv1.NetworkSelectionElement{MacRequest: "0A:58:C0:A8:64:05"})
	if len(w) != 1 || !strings.Contains(w[0], "metadata.annotations[v1.multus-cni.io/default-network].mac: MAC 0A:58:C0:A8:64:05 has the 0a:58 prefix") {
		t.Errorf("warnings = %q", w)
	}
	for _, mac := range []string{"", "02:58:00:00:00:01", "0a:59:00:00:00:01", "not-a-mac"} {
		if w := NetworkSelectionWarnings(path, &nadv1.NetworkSelectionElement{MacRequest: mac}); w != nil {
			t.Errorf("%q: warnings = %q", mac, w)
		}
	}
}

func TestMigrateIPAMClaimAnnotation(t *testing.T) {
	in := map[string]string{ovnk.AnnotationPrimaryUDNIPAMClaim: "vm-a", "other": "kept"}
	out, warnings := MigrateIPAMClaimAnnotation(in)
	if out == nil || len(warnings) != 1 || !strings.Contains(warnings[0], "k8s.ovn.org/primary-udn-ipamclaim is deprecated") {
		t.Fatalf("out = %v, warnings = %q", out, warnings)
	}
	nse, _, err := podannotation.DecodeDefaultNetworkSelection(out[ovnk.AnnotationDefaultNetwork], "tenant")
	if err != nil || nse.Name != "default" || nse.Namespace != "ovn-kubernetes" || nse.IPAMClaimReference != "vm-a" {
		t.Errorf("written NSE %q (%v)", out[ovnk.AnnotationDefaultNetwork], err)
	}
	if out["other"] != "kept" || out[ovnk.AnnotationPrimaryUDNIPAMClaim] != "vm-a" || len(in) != 2 {
		t.Errorf("annotations = %v, input = %v", out, in)
	}

	both := map[string]string{ovnk.AnnotationPrimaryUDNIPAMClaim: "vm-a", ovnk.AnnotationDefaultNetwork: `{"name":"default","namespace":"ovn-kubernetes","ipam-claim-reference":"vm-b"}`}
	out, warnings = MigrateIPAMClaimAnnotation(both)
	if out != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "deprecated and ignored because v1.multus-cni.io/default-network is set") {
		t.Errorf("both: out = %v, warnings = %q", out, warnings)
	}
	if out, warnings := MigrateIPAMClaimAnnotation(map[string]string{"a": "b"}); out != nil || warnings != nil {
		t.Errorf("none: out = %v, warnings = %q", out, warnings)
	}
}

func TestValidateDefaultNetworkUnchanged(t *testing.T) {
	k := ovnk.AnnotationDefaultNetwork
	for _, tc := range []struct {
		name     string
		old, cur map[string]string
		refused  bool
	}{
		{"both absent", nil, map[string]string{"a": "b"}, false},
		{"same value", map[string]string{k: "x"}, map[string]string{k: "x", "a": "b"}, false},
		{"added", nil, map[string]string{k: "x"}, true},
		{"removed", map[string]string{k: "x"}, map[string]string{}, true},
		{"changed", map[string]string{k: "x"}, map[string]string{k: "y"}, true},
		{"emptied", map[string]string{k: "x"}, map[string]string{k: ""}, true},
	} {
		errs := ValidateDefaultNetworkUnchanged(tc.old, tc.cur)
		var want []webhooktest.Want
		if tc.refused {
			want = []webhooktest.Want{{Type: field.ErrorTypeForbidden, Field: "metadata.annotations[v1.multus-cni.io/default-network]", Detail: "cannot be added, removed or changed"}}
		}
		t.Run(tc.name, func(t *testing.T) { webhooktest.Check(t, errs, want) })
	}
}

// FuzzDefaultNetworkSelection feeds arbitrary annotation values through the
// parser and the address checks: no panic, and whatever passes really is a
// usable address of the network.
func FuzzDefaultNetworkSelection(f *testing.F) {
	for _, seed := range []string{
		`{"name":"default","namespace":"ovn-kubernetes","ips":["192.168.100.205"],"mac":"00:1A:2B:3C:4D:5E","ipam-claim-reference":"c"}`,
		`[{"name":"default","namespace":"ovn-kubernetes","ips":["192.168.100.10/24","fd00:100::10/64"]}]`,
		`{"name":"default","namespace":"ovn-kubernetes","ips":["192.168.100.255","fd00:100::","::ffff:192.168.100.9"]}`,
		`{"name":"default","namespace":"ovn-kubernetes","ips":["fd00:100::10%eth0","1.2.3.4/33"],"mac":"ff:ff:ff:ff:ff:ff"}`,
		`{"name": "default",`, `[]`, `ovn-kubernetes/default`, `a/b/c`, ``, `{"ips":[null]}`,
	} {
		f.Add(seed)
	}
	net := predefined()
	path := field.NewPath("metadata", "annotations").Key(ovnk.AnnotationDefaultNetwork)
	f.Fuzz(func(t *testing.T, value string) {
		nse, _, err := podannotation.DecodeDefaultNetworkSelection(value, "tenant")
		if err != nil {
			return
		}
		if errs := ValidateNetworkSelection(path, nse, net); len(errs) > 0 {
			return
		}
		if nse.Name != "default" || nse.Namespace != "ovn-kubernetes" {
			t.Fatalf("accepted %q with reference %s/%s", value, nse.Namespace, nse.Name)
		}
		for _, raw := range nse.IPRequest {
			ip, err := parseRequestedIP(raw)
			if err != nil {
				t.Fatalf("accepted unparsable IP %q", raw)
			}
			inside := false
			for _, s := range net.Subnets {
				inside = inside || netip.MustParsePrefix(string(s)).Contains(ip)
			}
			for _, s := range net.InfrastructureSubnets {
				if netip.MustParsePrefix(string(s)).Contains(ip) {
					t.Fatalf("accepted %s inside the infrastructure subnet %s", ip, s)
				}
			}
			if !inside {
				t.Fatalf("accepted %s outside the subnets", ip)
			}
		}
		if _, err := json.Marshal(nse); err != nil {
			t.Fatalf("accepted element does not marshal: %v", err)
		}
	})
}
