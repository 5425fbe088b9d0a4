package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRenderAndPlan(t *testing.T) {
	root := filepath.Join("..", "..", "examples")
	overTransit := filepath.Join(t.TempDir(), "over-transit.yaml")
	if err := os.WriteFile(overTransit, []byte(`apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: t, namespace: x}
spec:
  topology: Layer2
  layer2: {role: Primary, subnets: [100.88.0.0/24]}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		args     []string
		wantCode int
		want     []string
		count    map[string]int
	}{
		{"NAD of a Primary Layer2 UDN", []string{"render", "-f", filepath.Join(root, "udn-layer2-primary.yaml")}, 0,
			[]string{"kind: NetworkAttachmentDefinition", "namespace: tenant-blue", `"type":"ovn-k8s-cni-overlay"`, `"name":"tenant-blue_blue"`,
				`"netAttachDefName":"tenant-blue/blue"`, `"topology":"layer2"`, `"role":"primary"`, `"joinSubnet":"100.65.0.0/16,fd99::/64"`,
				`"transitSubnet":"100.88.0.0/16,fd97::/64"`, `"allowPersistentIPs":true`, "k8s.ovn.org/user-defined-network-protection"},
			map[string]int{"kind: NetworkAttachmentDefinition": 1}},
		{"a CUDN gets one NAD per namespace", []string{"render", "-f", filepath.Join(root, "cudn-layer2-predefined-addresses.yaml"), "--namespaces", "a,b", "--preconfigured-udn-addresses-enable"}, 0,
			[]string{"namespace: a", "namespace: b", `"name":"cluster_udn_network-l2"`, `"reservedSubnets":"192.168.100.200/29"`,
				`"infrastructureSubnets":"192.168.100.0/30"`, `"defaultGatewayIPs":"192.168.100.2"`},
			map[string]int{"kind: NetworkAttachmentDefinition": 2}},
		{"predefined addresses stay out of the NetConf with the feature off", []string{"render", "-f", filepath.Join(root, "cudn-layer2-predefined-addresses.yaml")}, 0,
			[]string{`"subnets":"192.168.100.0/24"`}, map[string]int{"reservedSubnets": 0}},
		{"a subnet over the default transit subnet moves the transit subnet", []string{"render", "-f", overTransit}, 0,
			[]string{`"subnets":"100.88.0.0/24"`}, map[string]int{`"transitSubnet":"100.88.0.0/16"`: 0, `"transitSubnet":`: 1}},
		{"an invalid network is refused", []string{"render", "-f", filepath.Join(root, "invalid", "udn-layer2-bad-gateway.yaml")}, 1, nil, nil},
		{"Layer2 rows for two nodes", []string{"plan", "-f", filepath.Join(root, "udn-layer2-primary.yaml"), "--nodes", "2"}, 0,
			[]string{"router tenant.blue_blue_transit_router", "switch tenant.blue_blue_ovn_layer2_switch", "peer=rtotr-GR_tenant.blue_blue_node-2",
				"mac=0a:58:0a:64:00:01", `networks=["100.88.0.4/31" "fd97::4/127"]`},
			map[string]int{"port trtor-": 2, "\nrouter GR_": 2}},
		{"Layer3 policies after an append", []string{"plan", "-f", filepath.Join(root, "udn-layer3-append.yaml"), "--enable-egress-ip"}, 0,
			[]string{"policy 102 ip4.src == $a9172515569174888928 && ip4.dst == $a9172515569174888928 allow",
				`address_set a9172515569174888928 addresses=["10.200.0.0/16" "10.201.0.0/16"]`, "policy 102 pkt.mark == 42 allow"},
			map[string]int{"policy 102 ip4.src": 1, "policy 102": 2}},
		{"Layer3 without EgressIP has no subnet policies", []string{"plan", "-f", filepath.Join(root, "udn-layer3-append.yaml")}, 0,
			[]string{"no subnet policies without --enable-egress-ip"}, map[string]int{"policy 102": 0}},
		{"Localnet has its switch before any pod", []string{"plan", "-f", filepath.Join(root, "cudn-localnet.yaml")}, 0,
			[]string{"piece localnet-switch", "switch cluster_udn_physnet.ext_ovn_localnet_switch other_config{subnet=192.0.2.0/24}",
				`port cluster_udn_physnet.ext_ovn_localnet_port type=localnet addresses=["unknown"] options{network_name=physnet-ext}`},
			map[string]int{"udnkit programs no OVN rows": 0}},
		{"plan needs at least one node", []string{"plan", "-f", filepath.Join(root, "udn-layer2-primary.yaml"), "--nodes", "0"}, 2, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), c.args, &stdout, &stderr); code != c.wantCode {
				t.Fatalf("exit code %d, want %d\n%s%s", code, c.wantCode, stdout.String(), stderr.String())
			}
			for _, w := range c.want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("output lacks %s:\n%s", w, stdout.String())
				}
			}
			for s, n := range c.count {
				if got := strings.Count(stdout.String(), s); got != n {
					t.Errorf("%q appears %d times, want %d", s, got, n)
				}
			}
		})
	}
}
