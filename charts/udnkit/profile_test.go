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

// nodeIDSource is the manager's flag that says who writes the nodes'
// k8s.ovn.org/node-id; profile udn-controllers leaves them to
// OVN-Kubernetes' cluster manager.
const nodeIDSource = "--node-id-source=read"

// Profile udn-controllers runs exactly what full runs, in both dataplane
// modes (the same objects, the same arguments for the manager and the
// dataplane DaemonSet, but for nodeIDSource): only OVN-Kubernetes' side of
// the deployment differs.
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
				got := slices.DeleteFunc(containerArgs(udn, kind, ""), func(a string) bool { return kind == "Deployment" && a == nodeIDSource })
				if want := containerArgs(full, kind, ""); !slices.Equal(got, want) {
					t.Errorf("%s args\n udn-controllers %v\n full            %v", kind, got, want)
				}
			}
			if got := managerArgs(t, udn); !slices.ContainsFunc(got, func(a string) bool { return strings.HasPrefix(a, "--controllers=admission,nad,nodes,ipam") }) {
				t.Errorf("udn-controllers does not run udnkit's controllers: %v", got)
			}
		})
	}
}

// Profile udn-controllers makes the manager only read the nodes' IDs
// (OVN-Kubernetes' cluster manager allocates them); full and a chart without
// a profile leave the manager's default, allocate, and so does the
// dataplane DaemonSet, which runs no node controller.
func TestUDNControllersProfileReadsNodeIDs(t *testing.T) {
	for profile, want := range map[string]string{"udn-controllers": "read", "full": "allocate", "": "allocate"} {
		t.Run(profile, func(t *testing.T) {
			vals := map[string]any{"dataplane": map[string]any{"mode": "daemonset"}, "ovn": map[string]any{"socketHostPath": "/var/run/ovn"}}
			if profile != "" {
				vals["profile"] = profile
			}
			objs, err := render(t, vals)
			if err != nil {
				t.Fatal(err)
			}
			args := managerArgs(t, objs)
			if got := parseManager(t, args).Lookup("node-id-source").Value.String(); got != want {
				t.Errorf("--node-id-source = %s, want %s (manager args %v)", got, want, args)
			}
			if passed := slices.Contains(args, nodeIDSource); passed != (want == "read") {
				t.Errorf("%s passed: %v, want %v", nodeIDSource, passed, want == "read")
			}
			if ds := containerArgs(objs, "DaemonSet", ""); slices.ContainsFunc(ds, func(a string) bool { return strings.HasPrefix(a, "--node-id-source") }) {
				t.Errorf("the dataplane DaemonSet gets --node-id-source: %v", ds)
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
