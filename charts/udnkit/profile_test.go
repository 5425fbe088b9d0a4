package udnkitchart_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/internal/chartrender"
)

// The flags OVN-Kubernetes' components need beside profile udn-controllers,
// as upstream's go-controller/pkg/config/config.go names them
// (enable-network-segmentation, enable-multi-network; segmentation is on
// only with both, util.IsNetworkSegmentationSupportEnabled).
const (
	ovnkOff = "--enable-network-segmentation=false --enable-multi-network=false"
	ovnkOn  = "--enable-network-segmentation=true --enable-multi-network=true"
)

// notes renders the chart's NOTES.txt with user values vals.
func notes(t *testing.T, vals map[string]any) string {
	t.Helper()
	version, err := envtest.KubernetesVersion()
	if err != nil {
		t.Fatal(err)
	}
	files, err := chartrender.Render(load(t), vals, chartrender.Release{Name: envtest.ReleaseName, Namespace: releaseNamespace, KubeVersion: "v" + version})
	if err != nil {
		t.Fatal(err)
	}
	text, ok := files["udnkit/templates/NOTES.txt"]
	if !ok {
		t.Fatal("no NOTES.txt rendered")
	}
	return text
}

// Profile udn-controllers runs exactly what full runs, in both dataplane
// modes (the same objects, the same arguments for the manager and the
// dataplane DaemonSet): only OVN-Kubernetes' side of the deployment differs.
func TestUDNControllersProfileRunsWhatFullRuns(t *testing.T) {
	for name, vals := range map[string]map[string]any{
		"deployment": nil,
		"daemonset":  {"dataplane": map[string]any{"mode": "daemonset"}, "ovn": map[string]any{"socketHostPath": "/var/run/ovn"}},
	} {
		t.Run(name, func(t *testing.T) {
			full, err := render(t, vals)
			if err != nil {
				t.Fatal(err)
			}
			udnVals := map[string]any{"profile": "udn-controllers"}
			maps.Copy(udnVals, vals)
			udn, err := render(t, udnVals)
			if err != nil {
				t.Fatal(err)
			}
			if names(udn) != names(full) {
				t.Errorf("objects\n udn-controllers %s\n full            %s", names(udn), names(full))
			}
			for _, kind := range []string{"Deployment", "DaemonSet"} {
				if got, want := containerArgs(udn, kind, ""), containerArgs(full, kind, ""); !slices.Equal(got, want) {
					t.Errorf("%s args\n udn-controllers %v\n full            %v", kind, got, want)
				}
			}
			if got := managerArgs(t, udn); !slices.ContainsFunc(got, func(a string) bool { return strings.HasPrefix(a, "--controllers=admission,nad,nodes,ipam") }) {
				t.Errorf("udn-controllers does not run udnkit's controllers: %v", got)
			}
		})
	}
}

func names(objs []*unstructured.Unstructured) string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+"/"+o.GetName())
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// The install notes of profile udn-controllers print each OVN-Kubernetes
// component's flags, the MTU it must share and where ownership is
// documented; other profiles print none of it.
func TestUDNControllersProfileNotes(t *testing.T) {
	got := notes(t, map[string]any{"profile": "udn-controllers", "network": map[string]any{"mtu": 1360}})
	for _, want := range []string{
		"profile udn-controllers, controllers: admission, nad, nodes, ipam, dataplane",
		"cluster manager     (ovnkube --init-cluster-manager):\n    " + ovnkOff,
		"ovnkube-controller  (ovnkube --init-ovnkube-controller <node>):\n    " + ovnkOff,
		"ovnkube-node        (ovnkube --init-node <node>):\n    " + ovnkOn,
		"--mtu=1360 on all three",
		"docs/profiles.md",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("NOTES.txt lacks %q:\n%s", want, got)
		}
	}
	for _, profile := range []string{"full", "admission-only"} {
		if got := notes(t, map[string]any{"profile": profile}); strings.Contains(got, "--enable-network-segmentation") {
			t.Errorf("profile %s prints OVN-Kubernetes flags:\n%s", profile, got)
		}
	}
}
