package main

import (
	"bytes"
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udnkit/udnkit/ovnk"
)

// plan adds the cluster's facts as the dataplane does: the management
// port's masquerade IPs (the network ID's, from --masquerade-subnets) with
// their SNAT, and join IPs of every family the cluster runs.
func TestPlanHasTheClusterFactsTheDataplaneAdds(t *testing.T) {
	out, errOut, code := planBlue(t)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// The example is the plan's first network: network ID 1.
	for _, m := range []string{"169.254.0.0/17", "fd69::/112"} {
		_, mgmt, err := ovnk.UDNMasqueradeIPs(netip.MustParsePrefix(m), 1)
		if err != nil {
			t.Fatal(err)
		}
		subnet := "10.100.0.0/16"
		if mgmt.Is6() {
			subnet = "fd00:100::/64"
		}
		if want := "    nat snat " + subnet + " -> " + mgmt.String() + "\n"; !strings.Contains(out, want) {
			t.Errorf("plan lacks the management port's SNAT %q:\n%s", want, out)
		}
	}

	// An IPv4 network on a dual-stack cluster: its gateway router has a
	// join IP of each cluster family, as upstream's GetGWRouterIPs.
	manifest := filepath.Join(t.TempDir(), "v4.yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: red, namespace: tenant-red}
spec: {topology: Layer2, layer2: {role: Primary, subnets: ["10.110.0.0/16"]}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	plan := func(args ...string) string {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), append([]string{"plan", "-f", manifest, "--nodes", "1"}, args...), &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		return stdout.String()
	}
	rtotr := func(out string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "port rtotr-") {
				return l
			}
		}
		t.Fatalf("no rtotr- port:\n%s", out)
		return ""
	}
	if l := rtotr(plan()); strings.Contains(l, "fd99::") {
		t.Errorf("an IPv4 cluster gives an IPv4 network an IPv6 join IP: %s", l)
	}
	if l := rtotr(plan("--cluster-subnets", "10.244.0.0/16,fd00:10:244::/48", "--service-cidrs", "10.96.0.0/16,fd02::/112")); !strings.Contains(l, `"fd99::2/64"`) || !strings.Contains(l, `"100.65.0.2/16"`) {
		t.Errorf("a dual-stack cluster gives an IPv4 network's gateway router no join IP of each family: %s", l)
	}
}
