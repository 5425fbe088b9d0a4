package udnkitchart_test

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/udnkit/udnkit/cmd/udnkit/app"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/ovnk"
)

// dataplaneFlags are the flags the dataplane component binds, read from the
// manager itself: a flag added to the dataplane shows up here.
func dataplaneFlags(t *testing.T) map[string]*flag.Flag {
	t.Helper()
	opts := app.NewOptions()
	opts.Controllers = "dataplane"
	sel, err := opts.Selected()
	if err != nil || len(sel) != 1 || sel[0].BindFlags == nil {
		t.Fatalf("the manager's dataplane component: %v (%v)", sel, err)
	}
	fs := flag.NewFlagSet("dataplane", flag.ContinueOnError)
	sel[0].BindFlags(fs)
	out := map[string]*flag.Flag{}
	fs.VisitAll(func(f *flag.Flag) { out[f.Name] = f })
	return out
}

// parseManager parses args with the manager's own flag set and returns it,
// so a test reads the value each flag took.
func parseManager(t *testing.T, args []string) *flag.FlagSet {
	t.Helper()
	fs := flag.NewFlagSet("udnkit", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	app.NewOptions().BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("the manager refuses the arguments %v: %v", args, err)
	}
	return fs
}

// dataplaneOptions are the dataplane.* values that are dataplane flags,
// each with a value away from the flag's default.
var dataplaneOptions = []struct {
	value, flag string
	custom      any
	want        string
}{
	{"adoptLegacyLayer2", "adopt-legacy-layer2", true, "true"},
	{"layer3SubnetPolicies", "layer3-subnet-policies", "pairs", "pairs"},
	{"gatewayMode", "gateway-mode", "local", "local"},
	{"externalPortRange", "external-port-range", "1024-65535", "1024-65535"},
	{"enableEgressIP", "enable-egress-ip", true, "true"},
	{"enableMultiNetworkPolicy", "enable-multi-networkpolicy", true, "true"},
	{"workers", "dataplane-workers", 9, "9"},
}

// dataplaneFlagsWithoutValue are the dataplane's flags no chart value sets,
// and why.
var dataplaneFlagsWithoutValue = map[string]string{
	"migrate-legacy-layer2": "the deprecated name of --adopt-legacy-layer2 (dataplane.adoptLegacyLayer2)",
}

// runningDataplane renders vals in mode and returns the arguments of the
// component that runs the dataplane (the Deployment, or the DaemonSet with
// NODE_NAME expanded to node-a) and the other component's, if any.
func runningDataplane(t *testing.T, mode string, vals map[string]any) (args, other []string) {
	t.Helper()
	objs, err := render(t, vals)
	if err != nil {
		t.Fatal(err)
	}
	if mode == "deployment" {
		if find(objs, "DaemonSet", "") != nil {
			t.Fatal("a DaemonSet rendered in dataplane.mode=deployment")
		}
		return managerArgs(t, objs), nil
	}
	ds := find(objs, "DaemonSet", "udnkit-dataplane")
	if ds == nil {
		t.Fatalf("no DaemonSet rendered: %v", kinds(objs))
	}
	dsArgs, _, _ := unstructured.NestedStringSlice(container(t, ds), "args")
	for _, a := range dsArgs {
		args = append(args, strings.ReplaceAll(a, "$(NODE_NAME)", "node-a"))
	}
	return args, managerArgs(t, objs)
}

// withMode merges the dataplane values dp into vals with dataplane.mode set.
func withMode(mode string, dp map[string]any, vals map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range vals {
		out[k] = v
	}
	d := map[string]any{"mode": mode}
	for k, v := range dp {
		d[k] = v
	}
	out["dataplane"] = d
	return out
}

// Every flag of the dataplane component has a chart value and reaches the
// component that runs the dataplane in both modes: the manager Deployment,
// or the DaemonSet of dataplane.mode=daemonset. A dataplane flag the chart
// does not pass fails here by name.
func TestDataplaneOptionsReachTheDataplane(t *testing.T) {
	flags := dataplaneFlags(t)
	custom := map[string]any{}
	for _, o := range dataplaneOptions {
		custom[o.value] = o.custom
	}
	// ssl: endpoints so the TLS flags render; no unix: socket to mount.
	ovn := map[string]any{"nbAddress": "ssl:10.0.0.1:6641,ssl:10.0.0.2:6641", "sbAddress": "ssl:10.0.0.1:6642", "connectTimeout": "7m",
		"tls": map[string]any{"secretName": "ovn-client", "nbServerName": "nb.ovn", "sbServerName": "sb.ovn"}}
	for _, mode := range []string{"deployment", "daemonset"} {
		t.Run(mode, func(t *testing.T) {
			want := map[string]string{
				"ovn-nb-address": "ssl:10.0.0.1:6641,ssl:10.0.0.2:6641", "ovn-sb-address": "ssl:10.0.0.1:6642", "ovn-connect-timeout": "7m0s",
				"ovn-client-cert": "/etc/udnkit/ovn-tls/tls.crt", "ovn-client-key": "/etc/udnkit/ovn-tls/tls.key", "ovn-ca-cert": "/etc/udnkit/ovn-tls/ca.crt",
				"ovn-nb-server-name": "nb.ovn", "ovn-sb-server-name": "sb.ovn",
				// One zone per node; deployment mode programs one zone in
				// which every node is local (no --zone).
				"zone": map[string]string{"deployment": "", "daemonset": "node-a"}[mode],
			}
			for _, o := range dataplaneOptions {
				want[o.flag] = o.want
			}
			args, _ := runningDataplane(t, mode, withMode(mode, custom, map[string]any{"ovn": ovn}))
			fs := parseManager(t, args)
			for name, f := range flags {
				if why, ok := dataplaneFlagsWithoutValue[name]; ok {
					if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--"+name+"=") }) {
						t.Errorf("--%s is passed, but it is %s", name, why)
					}
					continue
				}
				w, ok := want[name]
				if !ok {
					t.Errorf("the dataplane has --%s (%s) but the chart has no value for it: add a dataplane.* value, render it in udnkit.dataplaneArgs, and list it in dataplaneOptions", name, f.Usage)
					continue
				}
				passed := slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--"+name+"=") })
				if w != f.DefValue && !passed {
					t.Errorf("no --%s: the chart does not pass it to the dataplane in %s mode", name, mode)
				}
				if got := fs.Lookup(name).Value.String(); got != w {
					t.Errorf("the dataplane runs with --%s=%q, want %q", name, got, w)
				}
			}
			// The test is only as good as its values: each differs from
			// the flag's default, so a value the chart drops shows.
			for _, o := range dataplaneOptions {
				if f := flags[o.flag]; f == nil || f.DefValue == o.want {
					t.Errorf("dataplane.%s's test value %q is --%s's default (or no such flag)", o.value, o.want, o.flag)
				}
			}
		})
	}
}

// The chart's defaults are the dataplane's own, passed explicitly; each value
// set alone changes only its flag, in both modes.
func TestRenderDataplaneOptions(t *testing.T) {
	flags := dataplaneFlags(t)
	for _, mode := range []string{"deployment", "daemonset"} {
		t.Run(mode+"/defaults", func(t *testing.T) {
			args, _ := runningDataplane(t, mode, withMode(mode, nil, daemonSetValues))
			fs := parseManager(t, args)
			for _, o := range dataplaneOptions {
				if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--"+o.flag+"=") }) {
					t.Errorf("no --%s by default", o.flag)
				}
				if got, def := fs.Lookup(o.flag).Value.String(), flags[o.flag].DefValue; got != def {
					t.Errorf("dataplane.%s's default renders --%s=%s, the dataplane's default is %s", o.value, o.flag, got, def)
				}
			}
		})
		for _, set := range dataplaneOptions {
			t.Run(mode+"/"+set.value, func(t *testing.T) {
				args, _ := runningDataplane(t, mode, withMode(mode, map[string]any{set.value: set.custom}, daemonSetValues))
				fs := parseManager(t, args)
				for _, o := range dataplaneOptions {
					want := flags[o.flag].DefValue
					if o.flag == set.flag {
						want = set.want
					}
					if got := fs.Lookup(o.flag).Value.String(); got != want {
						t.Errorf("dataplane.%s=%v: --%s=%s, want %s", set.value, set.custom, o.flag, got, want)
					}
				}
			})
		}
	}
}

// Where no dataplane runs (profile admission-only, or controllers without
// dataplane) none of its options render, whatever dataplane.* says.
func TestDataplaneOptionsOnlyWhereTheDataplaneRuns(t *testing.T) {
	flags := dataplaneFlags(t)
	custom := map[string]any{"extraArgs": []any{"--zap-log-level=debug"}}
	for _, o := range dataplaneOptions {
		custom[o.value] = o.custom
	}
	for name, vals := range map[string]map[string]any{
		"profile admission-only":        {"profile": "admission-only"},
		"controllers without dataplane": {"controllers": []any{"admission", "nad", "nodes", "ipam"}},
	} {
		for _, mode := range []string{"deployment", "daemonset"} {
			t.Run(name+"/"+mode, func(t *testing.T) {
				objs, err := render(t, withMode(mode, custom, vals))
				if err != nil {
					t.Fatal(err)
				}
				if find(objs, "DaemonSet", "") != nil {
					t.Error("a dataplane DaemonSet rendered")
				}
				for _, a := range managerArgs(t, objs) {
					name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
					if flags[name] != nil || a == "--zap-log-level=debug" {
						t.Errorf("the Deployment gets %s with no dataplane running", a)
					}
				}
			})
		}
	}
}

// dataplane.extraArgs reach the DaemonSet's container after the chart's own
// arguments, and only it: top-level extraArgs stay the Deployment's. Each
// reaches its container as given.
func TestRenderDataplaneExtraArgs(t *testing.T) {
	dsArgs, deployArgs := runningDataplane(t, "daemonset", withMode("daemonset",
		map[string]any{"extraArgs": []any{"--kube-api-qps=20", "--zap-log-level=debug"}},
		map[string]any{"ovn": daemonSetValues["ovn"], "extraArgs": []any{"--kube-api-qps=50"}}))
	if n := len(dsArgs); n < 2 || !slices.Equal(dsArgs[n-2:], []string{"--kube-api-qps=20", "--zap-log-level=debug"}) {
		t.Errorf("DaemonSet args end %v, want dataplane.extraArgs", dsArgs)
	}
	if slices.Contains(dsArgs, "--kube-api-qps=50") {
		t.Errorf("top-level extraArgs reach the DaemonSet: %v", dsArgs)
	}
	if !slices.Contains(deployArgs, "--kube-api-qps=50") || slices.Contains(deployArgs, "--kube-api-qps=20") || slices.Contains(deployArgs, "--zap-log-level=debug") {
		t.Errorf("Deployment args %v: want top-level extraArgs only", deployArgs)
	}
	// An argument that YAML would read as something else stays one string,
	// in either extraArgs.
	const odd = "--zap-log-level=debug: x # y"
	dsArgs, deployArgs = runningDataplane(t, "daemonset", withMode("daemonset",
		map[string]any{"extraArgs": []any{odd}}, map[string]any{"ovn": daemonSetValues["ovn"], "extraArgs": []any{odd}}))
	for kind, args := range map[string][]string{"DaemonSet": dsArgs, "Deployment": deployArgs} {
		if len(args) == 0 || args[len(args)-1] != odd {
			t.Errorf("%s args %q, want them to end with %q", kind, args, odd)
		}
	}
}

// The schema refuses what the dataplane refuses, naming the value; the
// manager refuses the same outside the chart.
func TestRenderRejectsBadDataplaneOptions(t *testing.T) {
	for field, bad := range map[string][]any{
		"adoptLegacyLayer2":    {"true", 1},
		"layer3SubnetPolicies": {"pair", "Pairs", "address_set", ""},
		"workers":              {0, -1, 1.5, "4"},
		"gatewayMode":          {"disabled", "Shared", ""},
		"externalPortRange":    {"1024", "a-b", "0-100", 1024},
		"extraArgs":            {"--zap-log-level=debug", []any{"debug"}, []any{""}, []any{7}},
	} {
		for _, v := range bad {
			_, err := render(t, withMode("daemonset", map[string]any{field: v}, map[string]any{"ovn": daemonSetValues["ovn"]}))
			if err == nil || !strings.Contains(err.Error(), "/dataplane/"+field) {
				t.Errorf("dataplane.%s=%#v: err %v, want a refusal naming /dataplane/%s", field, v, err, field)
			}
		}
	}

	// Every form the schema accepts, the dataplane accepts.
	raw, err := os.ReadFile(filepath.Join(chartDir(), "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Dataplane struct {
				Properties map[string]struct {
					Enum    []string `json:"enum"`
					Minimum *int     `json:"minimum"`
				} `json:"properties"`
			} `json:"dataplane"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	forms := schema.Properties.Dataplane.Properties["layer3SubnetPolicies"].Enum
	if len(forms) == 0 {
		t.Fatal("the schema lists no layer3SubnetPolicies")
	}
	for _, f := range forms {
		if _, err := topology.ParseLayer3PolicyForm(f); err != nil {
			t.Errorf("the schema accepts layer3SubnetPolicies %q, the dataplane refuses it: %v", f, err)
		}
	}
	modes := schema.Properties.Dataplane.Properties["gatewayMode"].Enum
	if len(modes) == 0 {
		t.Fatal("the schema lists no gatewayMode")
	}
	for _, m := range modes {
		if _, err := ovnk.ParseGatewayMode(m); err != nil {
			t.Errorf("the schema accepts gatewayMode %q, the dataplane refuses it: %v", m, err)
		}
	}
	switch m := schema.Properties.Dataplane.Properties["workers"].Minimum; {
	case m == nil:
		t.Error("the schema has no least workers; the dataplane refuses fewer than 1")
	case *m != 1:
		t.Errorf("the schema's least workers is %d, the dataplane's is 1", *m)
	}

	// The manager refuses just outside the chart's bounds too, at start.
	for _, arg := range []string{"--dataplane-workers=0", "--layer3-subnet-policies=pair", "--layer3-subnet-policies=Pairs"} {
		opts := app.NewOptions()
		fs := flag.NewFlagSet("udnkit", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		opts.BindFlags(fs)
		if err := fs.Parse([]string{"--controllers=dataplane", "--ovn-nb-address=unix:/nb.sock", "--ovn-sb-address=unix:/sb.sock",
			"--metrics-bind-address=0", "--health-probe-bind-address=0", arg}); err != nil {
			continue
		}
		if _, err := app.New(context.Background(), &rest.Config{Host: "http://127.0.0.1:1"}, opts); err == nil {
			t.Errorf("the manager starts with %s, which the chart refuses", arg)
		}
	}
}
