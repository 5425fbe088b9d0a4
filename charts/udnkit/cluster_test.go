package udnkitchart_test

import (
	"flag"
	"io"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/udnkit/udnkit/cmd/udnkit/app"
	"github.com/udnkit/udnkit/ovnk"
)

// customNetwork sets every network.* value away from its default, so a fact
// that does not reach a component shows up as ClusterConfig's default there.
var customNetwork = map[string]any{
	"clusterSubnets":            []any{"10.128.0.0/14", "fd00:10:128::/48"},
	"serviceCIDRs":              []any{"172.30.0.0/16", "fd02::/112"},
	"nodeSubnets":               []any{"192.168.0.0/24"},
	"joinSubnets":               []any{"100.62.0.0/16", "fd96::/64"},
	"masqueradeSubnets":         []any{"169.254.64.0/18", "fd68::/112"},
	"transitSubnets":            []any{"100.90.0.0/16", "fd95::/64"},
	"udnJoinSubnets":            []any{"100.66.0.0/16", "fd94::/64"},
	"udnAllowedDefaultServices": []any{"default/kubernetes", "openshift-dns/dns-default"},
	"mtu":                       8900,
}

// customCluster is the ClusterConfig customNetwork stands for.
func customCluster() ovnk.ClusterConfig {
	p := func(cidrs ...string) []netip.Prefix {
		out := make([]netip.Prefix, len(cidrs))
		for i, c := range cidrs {
			out[i] = netip.MustParsePrefix(c)
		}
		return out
	}
	return ovnk.ClusterConfig{
		ClusterSubnets:            p("10.128.0.0/14", "fd00:10:128::/48"),
		ServiceCIDRs:              p("172.30.0.0/16", "fd02::/112"),
		NodeSubnets:               p("192.168.0.0/24"),
		JoinSubnets:               p("100.62.0.0/16", "fd96::/64"),
		MasqueradeSubnets:         p("169.254.64.0/18", "fd68::/112"),
		TransitSubnets:            p("100.90.0.0/16", "fd95::/64"),
		UDNJoinSubnets:            p("100.66.0.0/16", "fd94::/64"),
		MTU:                       8900,
		PreconfiguredUDNAddresses: true,
		UDNAllowedDefaultServices: []types.NamespacedName{{Namespace: "default", Name: "kubernetes"}, {Namespace: "openshift-dns", Name: "dns-default"}},
	}
}

// parseCluster parses a component's arguments with the manager's own flag
// set and returns the cluster facts that component runs with.
func parseCluster(t *testing.T, args []string) ovnk.ClusterConfig {
	t.Helper()
	opts := app.NewOptions()
	fs := flag.NewFlagSet("udnkit", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	opts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("the manager refuses the arguments: %v", err)
	}
	return opts.Cluster
}

// Every cluster fact (each flag of ovnk.ClusterConfig) has a chart value and
// reaches every component that runs: the manager Deployment and, in
// dataplane.mode=daemonset, the dataplane DaemonSet. A ClusterConfig flag the
// chart does not pass fails here by name.
func TestClusterFactsReachEveryComponent(t *testing.T) {
	var clusterFlags []string
	fs := flag.NewFlagSet("cluster", flag.ContinueOnError)
	cfg := ovnk.DefaultClusterConfig()
	cfg.BindFlags(fs)
	fs.VisitAll(func(f *flag.Flag) { clusterFlags = append(clusterFlags, f.Name) })

	for mode, extra := range map[string]map[string]any{"deployment": nil, "daemonset": daemonSetValues} {
		vals := map[string]any{"network": customNetwork, "features": map[string]any{"preconfiguredUDNAddresses": true}}
		for k, v := range extra {
			vals[k] = v
		}
		objs, err := render(t, vals)
		if err != nil {
			t.Fatal(err)
		}
		components := map[string][]string{"Deployment": managerArgs(t, objs)}
		if mode == "daemonset" {
			ds := find(objs, "DaemonSet", "udnkit-dataplane")
			if ds == nil {
				t.Fatalf("no DaemonSet rendered: %v", kinds(objs))
			}
			args, _, _ := unstructured.NestedStringSlice(container(t, ds), "args")
			components["DaemonSet"] = args
		}
		for kind, args := range components {
			t.Run(mode+"/"+kind, func(t *testing.T) {
				for _, name := range clusterFlags {
					found := false
					for _, a := range args {
						found = found || strings.HasPrefix(a, "--"+name+"=")
					}
					if !found {
						t.Errorf("no --%s: the chart has no value for it or does not pass it to the %s", name, kind)
					}
				}
				if got, want := parseCluster(t, args), customCluster(); !reflect.DeepEqual(got, want) {
					t.Errorf("the %s runs with cluster facts\n%+v\nwant\n%+v", kind, got, want)
				}
			})
		}
	}
}

// network.mtu takes what the manager's --mtu takes: 576 to 65535, an
// integer; the default is OVN-Kubernetes' 1400.
func TestRenderMTU(t *testing.T) {
	objs, err := render(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := parseCluster(t, managerArgs(t, objs)).MTU; got != ovnk.DefaultMTU {
		t.Errorf("default MTU %d, want OVN-Kubernetes' %d", got, ovnk.DefaultMTU)
	}
	for _, mtu := range []int{576, 65535} {
		objs, err := render(t, map[string]any{"network": map[string]any{"mtu": mtu}})
		if err != nil {
			t.Fatalf("mtu %d: %v", mtu, err)
		}
		if got := parseCluster(t, managerArgs(t, objs)).MTU; int(got) != mtu {
			t.Errorf("network.mtu %d reaches the manager as %d", mtu, got)
		}
	}
	for _, mtu := range []any{575, 65536, 0, "9000", 1400.5} {
		_, err := render(t, map[string]any{"network": map[string]any{"mtu": mtu}})
		if err == nil || !strings.Contains(err.Error(), "/network/mtu") {
			t.Errorf("network.mtu %v: err %v, want a refusal naming /network/mtu", mtu, err)
		}
	}
	// The manager refuses just outside the chart's bounds too.
	for _, mtu := range []string{"575", "65536"} {
		opts := app.NewOptions()
		fs := flag.NewFlagSet("udnkit", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		opts.BindFlags(fs)
		if err := fs.Parse([]string{"--mtu=" + mtu}); err == nil {
			t.Errorf("the manager takes --mtu=%s, which the chart refuses", mtu)
		}
	}
}
