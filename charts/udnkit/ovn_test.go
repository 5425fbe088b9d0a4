package udnkitchart_test

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/udnkit/udnkit/cmd/udnkit/app"
)

func podSpec(t *testing.T, objs []*unstructured.Unstructured) map[string]any {
	t.Helper()
	d := find(objs, "Deployment", "udnkit")
	if d == nil {
		t.Fatal("no Deployment rendered")
	}
	spec, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec")
	return spec
}

func readinessPath(t *testing.T, objs []*unstructured.Unstructured) string {
	t.Helper()
	containers, _, _ := unstructured.NestedSlice(podSpec(t, objs), "containers")
	path, _, _ := unstructured.NestedString(containers[0].(map[string]any), "readinessProbe", "httpGet", "path")
	return path
}

// ssl: RAFT endpoints with a client TLS Secret: the manager gets the mounted
// files as flags (and accepts them), the Secret is mounted read-only.
func TestRenderOVNTLS(t *testing.T) {
	raft := "ssl:10.0.0.1:6641,ssl:10.0.0.2:6641,ssl:[fd00::3]:6641"
	objs, err := render(t, map[string]any{"ovn": map[string]any{
		"nbAddress": raft, "sbAddress": strings.ReplaceAll(raft, "6641", "6642"),
		"tls": map[string]any{"secretName": "ovn-client", "nbServerName": "ovnnb"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	args := managerArgs(t, objs)
	joined := strings.Join(args, " ")
	for _, want := range []string{"--ovn-nb-address=" + raft, "--ovn-client-cert=/etc/udnkit/ovn-tls/tls.crt",
		"--ovn-client-key=/etc/udnkit/ovn-tls/tls.key", "--ovn-ca-cert=/etc/udnkit/ovn-tls/ca.crt", "--ovn-nb-server-name=ovnnb"} {
		if !strings.Contains(joined, want) {
			t.Errorf("manager args lack %q: %s", want, joined)
		}
	}
	if strings.Contains(joined, "--ovn-sb-server-name") {
		t.Errorf("an empty sbServerName became a flag: %s", joined)
	}
	fs := flag.NewFlagSet("udnkit", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	app.NewOptions().BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Errorf("the manager refuses the TLS arguments: %v", err)
	}
	volumes, _, _ := unstructured.NestedSlice(podSpec(t, objs), "volumes")
	found := false
	for _, v := range volumes {
		name, _, _ := unstructured.NestedString(v.(map[string]any), "secret", "secretName")
		found = found || name == "ovn-client"
	}
	if !found {
		t.Errorf("the OVN TLS Secret is not a volume: %v", volumes)
	}

	_, err = render(t, map[string]any{"ovn": map[string]any{"nbAddress": "ssl:10.0.0.1:6641"}})
	if err == nil || !strings.Contains(err.Error(), "ovn.tls.secretName is required") {
		t.Errorf("ssl: without a TLS Secret: err = %v", err)
	}
	for _, bad := range []string{"tcp:10.0.0.1:6641,,tcp:10.0.0.2:6641", "tcp:10.0.0.1", "unix:relative.sock", "ssl:a:6641,"} {
		if _, err := render(t, map[string]any{"ovn": map[string]any{"nbAddress": bad}}); err == nil {
			t.Errorf("ovn.nbAddress %q was accepted", bad)
		}
	}
}

// The kubelet's readiness probe leaves the dataplane's check out, so an
// unreachable OVN never takes the webhooks out of the Service.
func TestRenderReadinessExcludesDataplane(t *testing.T) {
	objs, err := render(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := readinessPath(t, objs); got != "/readyz?exclude="+app.DataplaneCheck {
		t.Errorf("default readiness probe path %q", got)
	}
	objs, err = render(t, map[string]any{"controllers": []any{"admission"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := readinessPath(t, objs); got != "/readyz" {
		t.Errorf("admission-only readiness probe path %q", got)
	}
}

// Webhook availability: two replicas by default with a PodDisruptionBudget
// and soft anti-affinity; none of it for one replica; hard and none modes;
// an explicit affinity wins.
func TestRenderHighAvailability(t *testing.T) {
	antiAffinity := func(objs []*unstructured.Unstructured) map[string]any {
		m, _, _ := unstructured.NestedMap(podSpec(t, objs), "affinity", "podAntiAffinity")
		return m
	}
	objs, err := render(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	pdb := find(objs, "PodDisruptionBudget", "udnkit")
	if pdb == nil {
		t.Fatal("no PodDisruptionBudget with the default two replicas")
	}
	if v, _, _ := unstructured.NestedFieldNoCopy(pdb.Object, "spec", "minAvailable"); fmt.Sprint(v) != "1" {
		t.Errorf("PDB minAvailable %v, want 1", v)
	}
	sel, _, _ := unstructured.NestedStringMap(pdb.Object, "spec", "selector", "matchLabels")
	podLabels, _, _ := unstructured.NestedStringMap(find(objs, "Deployment", "udnkit").Object, "spec", "template", "metadata", "labels")
	for k, v := range sel {
		if podLabels[k] != v {
			t.Errorf("PDB selector %s=%s does not match the pods' labels %v", k, v, podLabels)
		}
	}
	if aa := antiAffinity(objs); aa["preferredDuringSchedulingIgnoredDuringExecution"] == nil {
		t.Errorf("default anti-affinity is not preferred: %v", aa)
	}

	objs, err = render(t, map[string]any{"replicas": 1})
	if err != nil {
		t.Fatal(err)
	}
	if find(objs, "PodDisruptionBudget", "udnkit") != nil || antiAffinity(objs) != nil {
		t.Error("one replica got a PodDisruptionBudget or anti-affinity (a drain could never evict it)")
	}

	objs, err = render(t, map[string]any{"podAntiAffinity": "hard"})
	if err != nil {
		t.Fatal(err)
	}
	if aa := antiAffinity(objs); aa["requiredDuringSchedulingIgnoredDuringExecution"] == nil {
		t.Errorf("hard anti-affinity is not required: %v", aa)
	}
	objs, err = render(t, map[string]any{"podAntiAffinity": "none", "podDisruptionBudget": map[string]any{"enabled": false}})
	if err != nil {
		t.Fatal(err)
	}
	if antiAffinity(objs) != nil || find(objs, "PodDisruptionBudget", "udnkit") != nil {
		t.Error("podAntiAffinity none / podDisruptionBudget disabled still rendered them")
	}
	objs, err = render(t, map[string]any{"affinity": map[string]any{"nodeAffinity": map[string]any{}}})
	if err != nil {
		t.Fatal(err)
	}
	if aff, _, _ := unstructured.NestedMap(podSpec(t, objs), "affinity"); aff["podAntiAffinity"] != nil || aff["nodeAffinity"] == nil {
		t.Errorf("an explicit affinity should replace the anti-affinity: %v", aff)
	}
	if _, err := render(t, map[string]any{"podAntiAffinity": "sometimes"}); err == nil {
		t.Error("podAntiAffinity sometimes was accepted")
	}
}
