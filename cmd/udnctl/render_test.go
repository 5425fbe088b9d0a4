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
	overTransit := writeManifest(t, `apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: t, namespace: x}
spec:
  topology: Layer2
  layer2: {role: Primary, subnets: [100.88.0.0/24]}
`)
	// A Layer3 network with room for four nodes' host subnets (/24 in /26s).
	small := writeManifest(t, `apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: s, namespace: x}
spec:
  topology: Layer3
  layer3: {role: Primary, subnets: [{cidr: 10.30.0.0/24, hostSubnet: 26}]}
`)
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
		// Host subnets node by node from the network's first (upstream:
		// pkg/clustermanager/node/subnet_allocator.go), the node switch's
		// management port at .2 and the cluster router's port at .1
		// (pkg/util/net.go GetNodeManagementIfAddr, GetNodeGatewayIfAddr),
		// the transit switch port keyed by node ID (pkg/ovn/zone_interconnect).
		{"Layer3 whole topology for two nodes", []string{"plan", "-f", filepath.Join(root, "udn-layer3-primary.yaml"), "--nodes", "2"}, 0,
			[]string{"piece topology", "switch tenant.green_green_node-1 other_config{subnet=10.200.0.0/24}",
				"switch tenant.green_green_node-2 other_config{subnet=10.200.1.0/24}",
				`port k8s-tenant.green_green_node-2 addresses=["0a:58:0a:c8:01:02 10.200.1.2"]`,
				`port rtos-tenant.green_green_node-1 mac=0a:58:0a:c8:00:01 networks=["10.200.0.1/24"]`,
				"port tenant.green_green_tstor-node-2 type=router addresses=[\"router\"] options{requested-tnl-key=3,",
				"router GR_tenant.green_green_node-1", "route 10.200.1.0/24 via 100.65.0.3 policy=src-ip"},
			map[string]int{"\nrouter GR_": 2, "\nswitch tenant.green_green_node-": 2, "policy 102": 0}},
		{"Layer3 with more nodes than host subnets is refused", []string{"plan", "-f", small, "--nodes", "5"}, 1, nil, nil},
		{"Layer3 with as many nodes as host subnets", []string{"plan", "-f", small, "--nodes", "4"}, 0,
			[]string{"switch x_s_node-4 other_config{subnet=10.30.0.192/26}"}, nil},
		{"Localnet has its switch before any pod", []string{"plan", "-f", filepath.Join(root, "cudn-localnet.yaml")}, 0,
			[]string{"piece localnet-switch", "switch cluster_udn_physnet.ext_ovn_localnet_switch other_config{subnet=192.0.2.0/24}",
				`port cluster_udn_physnet.ext_ovn_localnet_port type=localnet addresses=["unknown"] options{network_name=physnet-ext}`},
			map[string]int{"udnkit programs no OVN rows": 0}},
		{"plan needs at least one node", []string{"plan", "-f", filepath.Join(root, "udn-layer2-primary.yaml"), "--nodes", "0"}, 2, nil, nil},
	}
	wantStderr := map[string]string{
		"Layer3 with more nodes than host subnets is refused": "x/UserDefinedNetwork/s: host subnets of node node-5: every IPv4 host subnet of 10.30.0.0/24 (hostSubnet 26) is in use",
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), c.args, &stdout, &stderr); code != c.wantCode {
				t.Fatalf("exit code %d, want %d\n%s%s", code, c.wantCode, stdout.String(), stderr.String())
			}
			if w := wantStderr[c.name]; !strings.Contains(stderr.String(), w) {
				t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
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

// writeManifest writes a manifest to a file of the test's and returns its path.
func writeManifest(t *testing.T, manifest string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(p, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
