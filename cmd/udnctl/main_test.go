package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	root := filepath.Join("..", "..", "examples")
	malformed := filepath.Join(t.TempDir(), "malformed.yaml")
	if err := os.WriteFile(malformed, []byte("apiVersion: k8s.ovn.org/v1\nkind: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Upstream OVN-Kubernetes' valid scenario "valid Layer3 Primary EVPN with
	// ipVRF" (test/e2e/testscenario/cudn/valid-scenarios-evpn.go at 8871cd9).
	hostBits := filepath.Join(t.TempDir(), "l3-evpn-primary.yaml")
	if err := os.WriteFile(hostBits, []byte(`apiVersion: k8s.ovn.org/v1
kind: ClusterUserDefinedNetwork
metadata: {name: l3-evpn-primary}
spec:
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: red}}
  network:
    topology: Layer3
    layer3: {role: Primary, subnets: [{cidr: "10.20.100.0/16", hostSubnet: 24}]}
    transport: EVPN
    evpn: {vtep: evpn-vtep, ipVRF: {vni: 200}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	overlap := filepath.Join(t.TempDir(), "overlap.yaml")
	transit := filepath.Join(t.TempDir(), "transit.yaml")
	for file, subnet := range map[string]string{overlap: "100.64.1.0/24", transit: "100.88.1.0/24"} {
		udn := "apiVersion: k8s.ovn.org/v1\nkind: UserDefinedNetwork\nmetadata: {name: o, namespace: x}\nspec:\n  topology: Layer2\n  layer2: {role: Primary, subnets: [" + subnet + "]}\n"
		if err := os.WriteFile(file, []byte(udn), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout []string // lines that must appear, in order
		wantStderr string
	}{
		{"valid Layer2 UDN", []string{"validate", "-f", filepath.Join(root, "udn-layer2-primary.yaml")}, 0, nil, "tenant-blue/UserDefinedNetwork/blue: valid"},
		{"the OKEP-5233 CUDN", []string{"validate", "-f", filepath.Join(root, "cudn-layer2-predefined-addresses.yaml")}, 0, nil, "ClusterUserDefinedNetwork/network-l2: valid"},
		{"gateway outside the subnet and unmasked reserved range", []string{"validate", "-f", filepath.Join(root, "invalid", "udn-layer2-bad-gateway.yaml")}, 1,
			[]string{
				"spec.layer2.defaultGatewayIPs: Invalid value: defaultGatewayIPs must belong to one of the subnets specified in the subnets field.",
				"spec.layer2.reservedSubnets: Invalid value: reservedSubnets must be a masked network address (no host bits set).",
			}, "tenant-blue/UserDefinedNetwork/broken: rejected"},
		{"a hostSubnet with no room for pods", []string{"validate", "-f", filepath.Join(root, "invalid", "udn-layer3-no-room-for-pods.yaml")}, 1,
			[]string{
				"spec.layer3.subnets[0]: Invalid value: HostSubnet must < 32 for ipv4 CIDR, and udnkit requires at most 30 to leave room for pods.",
			}, "tenant-green/UserDefinedNetwork/cramped: rejected"},
		{"a subnet with host bits is valid, with a warning", []string{"validate", "-f", hostBits}, 0, nil,
			"warning: spec.network.layer3.subnets[0].cidr: 10.20.100.0/16 has host bits set; it stands for the network 10.20.0.0/16, as OVN-Kubernetes reads it."},
		{"EVPN CUDN written for upstream", []string{"validate", "-f", filepath.Join(root, "cudn-evpn.yaml")}, 0, nil, "ClusterUserDefinedNetwork/red-evpn: valid"},
		{"Layer3 append as an update", []string{"validate", "-f", filepath.Join(root, "udn-layer3-append.yaml"), "--old", filepath.Join(root, "udn-layer3-primary.yaml")}, 0, nil, "tenant-green/UserDefinedNetwork/green: valid"},
		{"Layer3 removal as an update", []string{"validate", "-f", filepath.Join(root, "invalid", "udn-layer3-remove-subnet.yaml"), "--old", filepath.Join(root, "udn-layer3-append.yaml")}, 1,
			[]string{"spec.layer3: Invalid value: Removing existing subnets is not allowed; existing subnets cannot be reordered or changed either, new subnets may only be appended."}, "rejected"},
		{"the same removal judged as a create is fine", []string{"validate", "-f", filepath.Join(root, "invalid", "udn-layer3-remove-subnet.yaml")}, 0, nil, "valid"},
		{"overlap with the default join subnet (webhook static check)", []string{"validate", "-f", overlap}, 1,
			[]string{`spec.layer2.subnets[0]: Invalid value: "100.64.1.0/24": 100.64.1.0/24 overlaps the default join subnet 100.64.0.0/16 (--join-subnets); user defined networks must not overlap the cluster's internal ranges.`}, "rejected"},
		{"the same network with another join subnet configured", []string{"validate", "-f", overlap, "--join-subnets=100.99.0.0/16"}, 0, nil, "valid"},
		{"Primary Layer2 over the transit subnet is a warning", []string{"validate", "-f", transit}, 0, nil, "warning: spec.layer2.subnets[0]: 100.88.1.0/24 overlaps the default transit subnet"},
		{"no file", []string{"validate"}, 2, nil, "-f FILE is required"},
		{"missing file", []string{"validate", "-f", "does-not-exist.yaml"}, 2, nil, "no such file"},
		{"malformed YAML", []string{"validate", "-f", malformed}, 2, nil, "malformed.yaml"},
		{"only objects udnctl does not judge", []string{"validate", "-f", filepath.Join("..", "..", "charts", "udnkit", "files", "crds", "k8s.ovn.org_userdefinednetworks.yaml")}, 2, nil, "holds no object udnctl can judge"},
		{"unknown command", []string{"frobnicate"}, 2, nil, `unknown command "frobnicate"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), c.args, &stdout, &stderr)
			if code != c.wantCode {
				t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.wantCode, stdout.String(), stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
			if len(c.wantStdout) == 0 && stdout.Len() > 0 {
				t.Errorf("unexpected violations:\n%s", stdout.String())
			}
			if len(c.wantStdout) > 0 && strings.Join(lines, "\n") != strings.Join(c.wantStdout, "\n") {
				t.Errorf("violations:\n%s\nwant:\n%s", stdout.String(), strings.Join(c.wantStdout, "\n"))
			}
			if !strings.Contains(stderr.String(), c.wantStderr) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), c.wantStderr)
			}
		})
	}
}
