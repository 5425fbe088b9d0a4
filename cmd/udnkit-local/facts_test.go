package main

import (
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/internal/testenv"
)

// layer2UDN is a Secondary Layer2 UDN's manifest.
func layer2UDN(namespace, name, subnet string) string {
	return fmt.Sprintf(`apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: %s, namespace: %s}
spec: {topology: Layer2, layer2: {role: Secondary, subnets: [%q]}}
`, name, namespace, subnet)
}

// TestLocalClusterFacts: what make run's manager knows of the cluster is the
// cluster's own, and its RBAC behaves as a cluster's. A UDN over the range
// the apiserver allocates Services from (read back from the apiserver) is
// refused as overlapping the service CIDR; a namespace admin (a RoleBinding
// to Kubernetes' admin) creates a UDN in her namespace through the chart's
// aggregated roles, and in no other namespace.
func TestLocalClusterFacts(t *testing.T) {
	testenv.Real(t, "kube-apiserver, ovsdb-server and a go build")
	root := envtest.RepoRoot()
	run := startLocal(t, buildLocal(t), "--repo-root", root, "--state-dir", t.TempDir())
	_, commands := run.ready(t, 2*time.Minute)
	kubectl := func(stdin string, args ...string) (string, error) {
		cmd := exec.Command("bash", append([]string{"-c", commands[0] + `; kubectl "$@"`, "kubectl"}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	mustKubectl := func(args ...string) string {
		t.Helper()
		out, err := kubectl("", args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}

	// The apiserver's own service range, and its own Service inside it.
	cidrs := strings.Fields(mustKubectl("get", "servicecidr", "kubernetes", "-o", "jsonpath={.spec.cidrs[*]}"))
	if len(cidrs) == 0 {
		t.Fatal("the apiserver reports no service CIDR")
	}
	serviceRange, err := netip.ParsePrefix(cidrs[0])
	if err != nil {
		t.Fatal(err)
	}
	ip := mustKubectl("get", "service", "kubernetes", "-n", "default", "-o", "jsonpath={.spec.clusterIP}")
	if a, err := netip.ParseAddr(ip); err != nil || !serviceRange.Contains(a) {
		t.Fatalf("the apiserver's Service %q is not in its service CIDR %s", ip, serviceRange)
	}
	mustKubectl("create", "namespace", "facts")
	// The policies read the manager's ranges from the ConfigMap it writes
	// at start; the apiserver applies them a moment later.
	var out string
	err = testenv.Poll("a UDN over the service CIDR refused", func() error {
		out, err = kubectl(layer2UDN("facts", "over-services", serviceRange.String()), "create", "--dry-run=server", "-f", "-")
		if err == nil {
			return fmt.Errorf("admitted: %s", out)
		}
		if !strings.Contains(out, "overlaps the service CIDR "+serviceRange.String()) {
			return fmt.Errorf("refused, but not as overlapping the service CIDR: %s", out)
		}
		return nil
	})
	if err != nil {
		t.Errorf("a UDN over the apiserver's service CIDR %s: %v", serviceRange, err)
	}
	t.Logf("a UDN over %s: %s", serviceRange, out)

	// alice administers namespace team-a through Kubernetes' admin.
	mustKubectl("create", "namespace", "team-a")
	mustKubectl("create", "namespace", "team-b")
	mustKubectl("create", "rolebinding", "alice-admin", "--clusterrole=admin", "--user=alice", "-n", "team-a")
	err = testenv.Poll("alice creates a UDN in team-a", func() error {
		out, err := kubectl(layer2UDN("team-a", "blue", "10.150.0.0/16"), "--as=alice", "create", "-f", "-")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	if err != nil {
		t.Errorf("alice, admin of team-a, cannot create a UDN there: %v", err)
	}
	if out, err := kubectl(layer2UDN("team-b", "blue", "10.150.0.0/16"), "--as=alice", "create", "-f", "-"); err == nil || !strings.Contains(out, "forbidden") {
		t.Errorf("alice created a UDN in team-b, where she has no role: %v\n%s", err, out)
	}
	if out, err := kubectl("", "--as=alice", "auth", "can-i", "create", "clusteruserdefinednetworks"); err == nil || !strings.HasSuffix(strings.TrimSpace(out), "\nno") {
		t.Errorf("alice may create ClusterUserDefinedNetworks: %s", out)
	}
	run.stop(t, syscall.SIGTERM)
}
