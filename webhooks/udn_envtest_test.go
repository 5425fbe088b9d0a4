package webhooks_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/netconf"
)

func TestNetworksAgainstClusterRanges(t *testing.T) {
	env := startEnv(t)
	c, warns := clientWithWarnings(t, env)
	namespace(t, c, "ranges", false, nil)

	for _, tc := range []struct {
		name string
		spec udnv1.NetworkSpec
		want []string
	}{
		{"cluster subnet", testobj.Layer2(udnv1.NetworkRoleSecondary, "10.244.8.0/24"),
			[]string{"spec.layer2.subnets[0]", "10.244.8.0/24 overlaps the cluster default network subnet 10.244.0.0/16 (--cluster-subnets)"}},
		{"service CIDR", testobj.Layer3(udnv1.NetworkRoleSecondary, "10.96.0.0/12"),
			[]string{"spec.layer3.subnets[0].cidr", "overlaps the service CIDR 10.96.0.0/16"}},
		{"masquerade IPv6", testobj.Layer2(udnv1.NetworkRoleSecondary, "10.100.0.0/16", "fd69::/64"),
			[]string{"spec.layer2.subnets[1]", "fd69::/64 overlaps the masquerade subnet fd69::/112"}},
		{"transit subnet, Layer3", testobj.Layer3(udnv1.NetworkRoleSecondary, "100.88.0.0/16"),
			[]string{"overlaps the transit subnet 100.88.0.0/16 (--transit-subnets)"}},
	} {
		t.Run("UDN "+tc.name, func(t *testing.T) {
			u := testobj.MakeUDN("ranges", strings.ReplaceAll(tc.name, " ", "-")).Spec(tc.spec).Obj()
			u.Name = strings.ToLower(strings.ReplaceAll(u.Name, ",", ""))
			expectInvalid(t, c.Create(ctx, u), tc.want...)
			expectAbsent(t, c, u)
		})
	}

	t.Run("CUDN gateway on the broadcast address", func(t *testing.T) {
		spec := testobj.Layer2(udnv1.NetworkRolePrimary, "192.168.100.0/24")
		spec.Layer2.DefaultGatewayIPs = udnv1.DualStackIPs{"192.168.100.255"}
		cu := testobj.MakeCUDN("gateway-broadcast").SelectLabels(map[string]string{"none": "none"}).Spec(spec).Obj()
		expectInvalid(t, c.Create(ctx, cu), "spec.network.layer2.defaultGatewayIPs[0]",
			"a default gateway must not be the broadcast address of subnet 192.168.100.0/24.")
		expectAbsent(t, c, cu)
	})

	t.Run("CUDN joinSubnets and reservedSubnets", func(t *testing.T) {
		spec := testobj.Layer2(udnv1.NetworkRolePrimary, "10.0.0.0/8")
		spec.Layer2.JoinSubnets = udnv1.DualStackCIDRs{"100.64.0.0/24"}
		spec.Layer2.ReservedSubnets = []udnv1.NetworkCIDR{"10.244.0.0/24"}
		cu := testobj.MakeCUDN("overlapping-join").SelectLabels(map[string]string{"none": "none"}).Spec(spec).Obj()
		expectInvalid(t, c.Create(ctx, cu),
			"spec.network.layer2.joinSubnets[0]", "overlaps the default join subnet 100.64.0.0/16",
			"spec.network.layer2.reservedSubnets[0]", "spec.network.layer2.subnets[0]")
		expectAbsent(t, c, cu)
	})

	t.Run("disjoint networks are created", func(t *testing.T) {
		if err := c.Create(ctx, testobj.MakeUDN("ranges", "ok").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.100.0.0/16", "fd00:100::/64")).Obj()); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, testobj.MakeCUDN("ranges-ok").SelectLabels(map[string]string{"none": "none"}).Spec(testobj.Layer3(udnv1.NetworkRolePrimary, "10.200.0.0/16")).Obj()); err != nil {
			t.Fatal(err)
		}
		if w := warns.take(); len(w) != 0 {
			t.Errorf("unexpected warnings %q", w)
		}
	})

	t.Run("Primary Layer2 over the transit subnet is created without a warning", func(t *testing.T) {
		// The reconciler moves its transit subnets and says so in an Event
		// (reconcilers: TestTransitSubnetsMovedEvent).
		cu := testobj.MakeCUDN("over-transit").SelectLabels(map[string]string{"none": "none"}).Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "100.88.0.0/20")).Obj()
		if err := c.Create(ctx, cu); err != nil {
			t.Fatal(err)
		}
		if w := warns.take(); len(w) != 0 {
			t.Errorf("warnings = %q", w)
		}
	})
}

func TestLayer3AppendThroughTheAPIServer(t *testing.T) {
	env := startEnv(t)
	c := synced(env.Client)
	namespace(t, c, "append", true, nil)
	u := testobj.MakeUDN("append", "grow").Spec(testobj.Layer3(udnv1.NetworkRolePrimary, "10.30.0.0/16")).Obj()
	if err := c.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	// CEL admits the append; udnkit-network-config (updates of every UDN,
	// Primary too, are the policies') knows the service CIDR.
	u.Spec.Layer3.Subnets = append(u.Spec.Layer3.Subnets, udnv1.Layer3Subnet{CIDR: "10.96.128.0/20", HostSubnet: 24})
	expectInvalid(t, c.Update(ctx, u), "spec.layer3.subnets[1].cidr", "overlaps the service CIDR 10.96.0.0/16")
	var got udnv1.UserDefinedNetwork
	if err := c.Get(ctx, client.ObjectKeyFromObject(u), &got); err != nil || len(got.Spec.Layer3.Subnets) != 1 {
		t.Fatalf("after the rejected update: %v, subnets %v", err, got.Spec.Layer3.Subnets)
	}
	got.Spec.Layer3.Subnets = append(got.Spec.Layer3.Subnets, udnv1.Layer3Subnet{CIDR: "10.31.0.0/16", HostSubnet: 24})
	if err := c.Update(ctx, &got); err != nil {
		t.Fatalf("appending a disjoint subnet: %v", err)
	}
}

func TestOnePrimaryNetworkPerNamespace(t *testing.T) {
	env := startEnv(t)
	c, warns := clientWithWarnings(t, env)
	namespace(t, c, "tenant-a", true, map[string]string{"tenant": "a", "group": "ab"})
	namespace(t, c, "tenant-b", true, map[string]string{"tenant": "b", "group": "ab"})
	namespace(t, c, "unlabelled", false, nil)
	primary := testobj.Layer2(udnv1.NetworkRolePrimary, "10.50.0.0/16")

	if err := c.Create(ctx, testobj.MakeUDN("tenant-a", "first").Spec(primary).Obj()); err != nil {
		t.Fatal(err)
	}
	t.Run("second Primary UDN", func(t *testing.T) {
		u := testobj.MakeUDN("tenant-a", "second").Spec(testobj.Layer3(udnv1.NetworkRolePrimary, "10.51.0.0/16")).Obj()
		expectInvalid(t, createRefused(t, c, u), "spec.layer3.role", "namespace tenant-a already has a primary network: UserDefinedNetwork tenant-a/first; a namespace can have only one.")
		expectAbsent(t, c, u)
	})
	t.Run("a Secondary UDN beside it is fine", func(t *testing.T) {
		if err := c.Create(ctx, testobj.MakeUDN("tenant-a", "extra").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.52.0.0/16")).Obj()); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("Primary UDN without the namespace label", func(t *testing.T) {
		u := testobj.MakeUDN("unlabelled", "p").Spec(primary).Obj()
		expectInvalid(t, c.Create(ctx, u), "metadata.namespace",
			"requires its namespace unlabelled to have the label k8s.ovn.org/primary-user-defined-network")
		expectAbsent(t, c, u)
	})
	t.Run("Primary CUDN selecting a namespace with a Primary UDN", func(t *testing.T) {
		cu := testobj.MakeCUDN("group-ab").SelectLabels(map[string]string{"group": "ab"}).Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.53.0.0/16")).Obj()
		expectInvalid(t, c.Create(ctx, cu), "spec.namespaceSelector",
			"selects 1 namespace(s) that already have a primary network: tenant-a (UserDefinedNetwork tenant-a/first)")
		expectAbsent(t, c, cu)
	})
	t.Run("Secondary CUDN selecting it is fine", func(t *testing.T) {
		if err := c.Create(ctx, testobj.MakeCUDN("group-ab-secondary").SelectLabels(map[string]string{"group": "ab"}).Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.54.0.0/16")).Obj()); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("Primary CUDN, then a Primary UDN in its namespace", func(t *testing.T) {
		cu := testobj.MakeCUDN("tenant-b").SelectLabels(map[string]string{"tenant": "b"}).Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.55.0.0/16")).Obj()
		if err := c.Create(ctx, cu); err != nil {
			t.Fatal(err)
		}
		// The UDN webhook sees the CUDN's selector, not only its NAD.
		u := testobj.MakeUDN("tenant-b", "own").Spec(primary).Obj()
		expectInvalid(t, c.Create(ctx, u), "spec.layer2.role: Forbidden: namespace tenant-b already has a primary network: ClusterUserDefinedNetwork tenant-b; a namespace can have only one.")
		expectAbsent(t, c, u)
	})
	t.Run("a Primary CUDN over a namespace without the label is created with a warning", func(t *testing.T) {
		warns.take()
		cu := testobj.MakeCUDN("unlabelled").SelectLabels(map[string]string{"kubernetes.io/metadata.name": "unlabelled"}).Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.59.0.0/16")).Obj()
		if err := c.Create(ctx, cu); err != nil {
			t.Fatal(err)
		}
		w := warns.take()
		if len(w) != 1 || !strings.Contains(w[0], "selects 1 namespace(s) without the label k8s.ovn.org/primary-user-defined-network (unlabelled)") {
			t.Errorf("warnings = %q", w)
		}
	})
	t.Run("a second Primary CUDN over the same namespace", func(t *testing.T) {
		cu := testobj.MakeCUDN("tenant-b-again").SelectLabels(map[string]string{"tenant": "b"}).Spec(testobj.Layer3(udnv1.NetworkRolePrimary, "10.56.0.0/16")).Obj()
		expectInvalid(t, c.Create(ctx, cu), "tenant-b (ClusterUserDefinedNetwork tenant-b)")
		expectAbsent(t, c, cu)
	})
	t.Run("widening a Primary CUDN's selector", func(t *testing.T) {
		var cu udnv1.ClusterUserDefinedNetwork
		if err := c.Get(ctx, client.ObjectKeyFromObject(testobj.MakeCUDN("tenant-b").SelectLabels(nil).Spec(primary).Obj()), &cu); err != nil {
			t.Fatal(err)
		}
		cu.Spec.NamespaceSelector.MatchLabels = map[string]string{"group": "ab"}
		expectInvalid(t, c.Update(ctx, &cu), "spec.namespaceSelector", "tenant-a (UserDefinedNetwork tenant-a/first)")
	})
	t.Run("the message names at most a few namespaces", func(t *testing.T) {
		for i := range 5 {
			ns := fmt.Sprintf("many-%d", i)
			namespace(t, c, ns, true, map[string]string{"many": "yes"})
			if err := c.Create(ctx, testobj.MakeUDN(ns, "p").Spec(primary).Obj()); err != nil {
				t.Fatal(err)
			}
		}
		err := c.Create(ctx, testobj.MakeCUDN("many").SelectLabels(map[string]string{"many": "yes"}).Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.57.0.0/16")).Obj())
		expectInvalid(t, err, "selects 5 namespace(s)", "many-0 (UserDefinedNetwork many-0/p), many-1", "and 2 more")
		if strings.Contains(err.Error(), "many-4") {
			t.Errorf("message names every namespace: %v", err)
		}
	})
	t.Run("an invalid selector is refused by name", func(t *testing.T) {
		cu := testobj.MakeCUDN("bad-selector").SelectLabels(nil).Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.58.0.0/16")).Obj()
		cu.Spec.NamespaceSelector.MatchLabels = map[string]string{"bad key!": "x"}
		err := c.Create(ctx, cu)
		expectInvalid(t, err, "spec.namespaceSelector")
	})
}

// TestExamplesAreAdmitted applies the README's examples (in file order, as
// `kubectl apply` would: create, or update what exists) through the webhooks
// with the default configuration: none may be refused.
func TestExamplesAreAdmitted(t *testing.T) {
	env := startEnv(t)
	c, warns := clientWithWarnings(t, env)
	files, err := filepath.Glob(filepath.Join(envtest.RepoRoot(), "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("examples: %v %v", files, err)
	}
	// The append example updates the network another example creates.
	sort.SliceStable(files, func(i, j int) bool {
		return !strings.Contains(files[i], "append") && strings.Contains(files[j], "append")
	})
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			err := c.Create(ctx, obj)
			if apierrors.IsAlreadyExists(err) {
				cur := &unstructured.Unstructured{}
				cur.SetGroupVersionKind(obj.GroupVersionKind())
				if err = c.Get(ctx, client.ObjectKeyFromObject(obj), cur); err == nil {
					obj.SetResourceVersion(cur.GetResourceVersion())
					err = c.Update(ctx, obj)
				}
			}
			if err != nil {
				t.Errorf("%s: %s %s: %v", filepath.Base(file), obj.GetKind(), obj.GetName(), err)
			}
		}
	}
	if w := warns.take(); len(w) != 0 {
		t.Errorf("warnings: %q", w)
	}
}

// Two networks whose names differ only in '-' versus '.' would share every
// OVN object name (OVN-Kubernetes' network prefix): the second is refused,
// naming the first; a name that differs otherwise is admitted.
func TestOVNNameCollisionsRefused(t *testing.T) {
	env := startEnv(t)
	c, _ := clientWithWarnings(t, env)
	namespace(t, c, "names", false, nil)
	ctx := context.Background()

	first := testobj.MakeCUDN("col-x").SelectLabels(map[string]string{"none": "none"}).Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.91.0.0/24")).Obj()
	if err := c.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	second := testobj.MakeCUDN("col.x").SelectLabels(map[string]string{"none": "none"}).Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.92.0.0/24")).Obj()
	expectInvalid(t, createRefused(t, c, second), `metadata.name: Invalid value: "col.x": its OVN objects would be named like those of ClusterUserDefinedNetwork col-x`,
		"giving both the prefix cluster_udn_col.x_); choose another name.")
	expectAbsent(t, c, second)
	if err := c.Create(ctx, testobj.MakeCUDN("col-y").SelectLabels(map[string]string{"none": "none"}).Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.93.0.0/24")).Obj()); err != nil {
		t.Errorf("a CUDN whose name differs otherwise is refused: %v", err)
	}

	u := testobj.MakeUDN("names", "net-a").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.94.0.0/24")).Obj()
	if err := c.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	dup := testobj.MakeUDN("names", "net.a").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.95.0.0/24")).Obj()
	expectInvalid(t, c.Create(ctx, dup), `metadata.name: Invalid value: "net.a": its OVN objects would be named like those of UserDefinedNetwork names/net-a`,
		"giving both the prefix names_net.a_")
	expectAbsent(t, c, dup)
	// Updating the first network is not a collision with itself.
	first.Labels = map[string]string{"touched": "yes"}
	if err := c.Update(ctx, first); err != nil {
		t.Errorf("updating col-x: %v", err)
	}
}

// A Primary CUDN is refused over a namespace that has a Primary UDN (the
// CUDN webhook, reading its cache), with apimachinery's LabelSelector
// semantics: each selector below is checked against what
// metav1.LabelSelectorAsSelector says of the namespace.
func TestPrimaryCUDNSelectorSemantics(t *testing.T) {
	env := startEnv(t)
	c := synced(env.Client)
	nsLabels := map[string]string{"tier": "web", "env": "prod"}
	req := func(key string, op metav1.LabelSelectorOperator, values ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: key, Operator: op, Values: values}
	}
	cases := []struct {
		name   string
		labels map[string]string
		exprs  []metav1.LabelSelectorRequirement
		want   bool // the selector selects the namespace
	}{
		{"In, listed", nil, []metav1.LabelSelectorRequirement{req("tier", metav1.LabelSelectorOpIn, "db", "web")}, true},
		{"In, not listed", nil, []metav1.LabelSelectorRequirement{req("tier", metav1.LabelSelectorOpIn, "db")}, false},
		{"In, key absent", nil, []metav1.LabelSelectorRequirement{req("zone", metav1.LabelSelectorOpIn, "a")}, false},
		{"NotIn, not listed", nil, []metav1.LabelSelectorRequirement{req("tier", metav1.LabelSelectorOpNotIn, "db")}, true},
		{"NotIn, listed", nil, []metav1.LabelSelectorRequirement{req("tier", metav1.LabelSelectorOpNotIn, "web")}, false},
		{"NotIn, key absent", nil, []metav1.LabelSelectorRequirement{req("zone", metav1.LabelSelectorOpNotIn, "a")}, true},
		{"Exists", nil, []metav1.LabelSelectorRequirement{req("env", metav1.LabelSelectorOpExists)}, true},
		{"Exists, key absent", nil, []metav1.LabelSelectorRequirement{req("zone", metav1.LabelSelectorOpExists)}, false},
		{"DoesNotExist", nil, []metav1.LabelSelectorRequirement{req("zone", metav1.LabelSelectorOpDoesNotExist)}, true},
		{"DoesNotExist, key present", nil, []metav1.LabelSelectorRequirement{req("env", metav1.LabelSelectorOpDoesNotExist)}, false},
		{"labels and expressions", map[string]string{"env": "prod"}, []metav1.LabelSelectorRequirement{req("tier", metav1.LabelSelectorOpIn, "web")}, true},
		{"labels differ", map[string]string{"env": "dev"}, nil, false},
		{"labels, one of two differs", map[string]string{"env": "prod", "tier": "db"}, nil, false},
	}
	// One namespace with a Primary UDN per case.
	for i := range cases {
		ns := fmt.Sprintf("selector-%d", i)
		namespace(t, c, ns, true, nsLabels)
		if err := c.Create(ctx, testobj.MakeUDN(ns, "p").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.71.0.0/16")).Obj()); err != nil {
			t.Fatal(err)
		}
	}
	// The webhook's cache delivers in order: once the last namespace's UDN
	// counts, every earlier one does.
	last := fmt.Sprintf("selector-%d", len(cases)-1)
	expectInvalid(t, createRefused(t, c, testobj.MakeCUDN("probe").SelectLabels(map[string]string{"kubernetes.io/metadata.name": last}).Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.70.0.0/16")).Obj()),
		last+" (UserDefinedNetwork "+last+"/p)")
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := fmt.Sprintf("selector-%d", i)
			// The CUDN also selects the case's own namespace by name, so
			// nothing else.
			sel := metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}, MatchExpressions: tc.exprs}
			for k, v := range tc.labels {
				sel.MatchLabels[k] = v
			}
			s, err := metav1.LabelSelectorAsSelector(&sel)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Matches(labels.Set(map[string]string{"kubernetes.io/metadata.name": ns, "tier": "web", "env": "prod",
				ovnk.LabelPrimaryUserDefinedNetwork: ""})); got != tc.want {
				t.Fatalf("the case is wrong: apimachinery says %v", got)
			}
			cu := testobj.MakeCUDN(ns).SelectLabels(nil).Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.70.0.0/16")).Obj()
			cu.Spec.NamespaceSelector = sel
			err = c.Create(ctx, cu, client.DryRunAll)
			if tc.want {
				expectInvalid(t, err, "spec.namespaceSelector", "selects 1 namespace(s) that already have a primary network: "+ns+" (UserDefinedNetwork "+ns+"/p)")
			} else if err != nil {
				t.Errorf("refused although the CUDN does not select %s: %v", ns, err)
			}
		})
	}
}

// udnWebhooks are the webhooks of udnkit's webhook configurations that
// match UserDefinedNetworks.
func udnWebhooks(t testing.TB, c client.Client) []string {
	t.Helper()
	var names []string
	var vwcs admissionregistrationv1.ValidatingWebhookConfigurationList
	if err := c.List(ctx, &vwcs); err != nil {
		t.Fatal(err)
	}
	var mwcs admissionregistrationv1.MutatingWebhookConfigurationList
	if err := c.List(ctx, &mwcs); err != nil {
		t.Fatal(err)
	}
	matches := func(name string, rules []admissionregistrationv1.RuleWithOperations) {
		for _, r := range rules {
			if slices.Contains(r.Resources, "userdefinednetworks") || slices.Contains(r.Resources, "*") {
				names = append(names, name)
			}
		}
	}
	for _, cfg := range vwcs.Items {
		for _, w := range cfg.Webhooks {
			matches(w.Name, w.Rules)
		}
	}
	for _, cfg := range mwcs.Items {
		for _, w := range cfg.Webhooks {
			matches(w.Name, w.Rules)
		}
	}
	return names
}

// A new UDN's own spec is the policies': each rule refuses it in the words
// of the Go checks. What depends on the rest of its namespace (OVN name
// collisions, one primary network) is the UDN webhook's, the only webhook
// registered for UserDefinedNetworks, called on create only.
func TestUDNCreateRules(t *testing.T) {
	env := startEnv(t)
	c, warns := clientWithWarnings(t, env)
	if hooks := udnWebhooks(t, c); !slices.Equal(hooks, []string{"userdefinednetworks.udnkit.k8s.ovn.org"}) {
		t.Errorf("webhooks registered for UserDefinedNetworks: %q, want only udnkit's UDN validator", hooks)
	}
	namespace(t, c, "by-policy", true, nil)
	namespace(t, c, "by-policy-unlabelled", false, nil)
	if err := c.Create(ctx, testobj.MakeUDN("by-policy", "web-a").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.110.0.0/16")).Obj()); err != nil {
		t.Fatal(err)
	}
	gw := testobj.Layer2(udnv1.NetworkRolePrimary, "192.168.100.0/24")
	gw.Layer2.DefaultGatewayIPs = udnv1.DualStackIPs{"192.168.100.255"}
	for _, tc := range []struct {
		name string
		obj  *udnv1.UserDefinedNetwork
		want string
	}{
		{"internal ranges", testobj.MakeUDN("by-policy", "ranges").Spec(testobj.Layer3(udnv1.NetworkRolePrimary, "10.244.0.0/16")).Obj(),
			"spec.layer3.subnets[0].cidr: 10.244.0.0/16 overlaps the cluster default network subnet 10.244.0.0/16 (--cluster-subnets); " +
				"user defined networks must not overlap the cluster's internal ranges."},
		{"default gateway", testobj.MakeUDN("by-policy", "gateway").Spec(gw).Obj(),
			"spec.layer2.defaultGatewayIPs[0]: a default gateway must not be the broadcast address of subnet 192.168.100.0/24."},
		{"namespace label", testobj.MakeUDN("by-policy-unlabelled", "p").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.111.0.0/16")).Obj(),
			"metadata.namespace: a Primary UserDefinedNetwork requires its namespace by-policy-unlabelled to have the label " +
				"k8s.ovn.org/primary-user-defined-network, set when the namespace is created."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := refusal(t, c.Create(ctx, tc.obj)); got != tc.want {
				t.Errorf("refused with %q, want %q", got, tc.want)
			}
			expectAbsent(t, c, tc.obj)
		})
	}
	t.Run("OVN name collision", func(t *testing.T) {
		for _, role := range []udnv1.NetworkRole{udnv1.NetworkRoleSecondary, udnv1.NetworkRolePrimary} {
			u := testobj.MakeUDN("by-policy", "web.a").Spec(testobj.Layer2(role, "10.111.0.0/16")).Obj()
			expectInvalid(t, c.Create(ctx, u), `metadata.name: Invalid value: "web.a": its OVN objects would be named like those of UserDefinedNetwork by-policy/web-a `+
				"(OVN-Kubernetes replaces '-' and '/' with '.', giving both the prefix by.policy_web.a_); choose another name.")
			expectAbsent(t, c, u)
		}
	})

	t.Run("no warning over the transit subnet", func(t *testing.T) {
		warns.take()
		u := testobj.MakeUDN("by-policy", "transit").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "100.88.0.0/20")).Obj()
		if err := c.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
		if got := warns.take(); len(got) != 0 {
			t.Errorf("warnings %q, want none (the reconciler reports moved transit subnets)", got)
		}
	})

	t.Run("a second primary network", func(t *testing.T) {
		u := testobj.MakeUDN("by-policy", "second").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.112.0.0/16")).Obj()
		expectInvalid(t, c.Create(ctx, u), "spec.layer2.role: Forbidden: namespace by-policy already has a primary network: UserDefinedNetwork by-policy/transit; a namespace can have only one.")
		expectAbsent(t, c, u)
	})

	t.Run("a Primary CUDN selecting the namespace", func(t *testing.T) {
		namespace(t, c, "by-policy-cudn", true, nil)
		cu := testobj.MakeCUDN("by-policy-cudn").SelectLabels(map[string]string{"kubernetes.io/metadata.name": "by-policy-cudn"}).Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.115.0.0/16")).Obj()
		if err := c.Create(ctx, cu); err != nil {
			t.Fatal(err)
		}
		u := testobj.MakeUDN("by-policy-cudn", "p").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.116.0.0/16")).Obj()
		expectInvalid(t, c.Create(ctx, u), "spec.layer2.role: Forbidden: namespace by-policy-cudn already has a primary network: ClusterUserDefinedNetwork by-policy-cudn; a namespace can have only one.")
		// A Secondary CUDN is no primary network.
		namespace(t, c, "by-policy-secondary", true, nil)
		sec := testobj.MakeCUDN("by-policy-secondary").SelectLabels(map[string]string{"kubernetes.io/metadata.name": "by-policy-secondary"}).Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.117.0.0/16")).Obj()
		if err := c.Create(ctx, sec); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, testobj.MakeUDN("by-policy-secondary", "p").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.118.0.0/16")).Obj(), client.DryRunAll); err != nil {
			t.Errorf("a Primary UDN beside a Secondary CUDN: %v", err)
		}
		// A primary NAD whose UDN is gone blocks nothing: the webhook
		// judges networks, not NADs.
		namespace(t, c, "by-policy-udn-nad", true, nil)
		// The NAD webhook admits a UDN's NAD only with its owner's UID: the
		// owner exists (Secondary, so it blocks nothing itself) while the
		// primary NAD is written, then goes.
		gone := testobj.MakeUDN("by-policy-udn-nad", "gone").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.119.0.0/16")).Obj()
		if err := c.Create(ctx, gone); err != nil {
			t.Fatal(err)
		}
		nad, err := netconf.NewNAD(netconf.NADSource{Kind: udnv1.KindUserDefinedNetwork, Meta: gone.ObjectMeta, Spec: testobj.Layer2(udnv1.NetworkRolePrimary, "10.119.0.0/16")},
			"by-policy-udn-nad", testConfig(), nil, ovnk.NetworkIDs{})
		if err != nil {
			t.Fatal(err)
		}
		nad.Finalizers = nil
		if err := c.Create(ctx, nad); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, gone); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, testobj.MakeUDN("by-policy-udn-nad", "p").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.120.0.0/16")).Obj(), client.DryRunAll); err != nil {
			t.Errorf("a Primary UDN beside a UDN's primary NAD: %v", err)
		}
	})

	t.Run("every rule at once: refused, naming at least one", func(t *testing.T) {
		u := testobj.MakeUDN("by-policy", "web.a").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.244.0.0/24")).Obj()
		err := c.Create(ctx, u, client.DryRunAll)
		expectInvalid(t, err)
		if got := err.Error(); !strings.Contains(got, "spec.layer2.subnets[0]: 10.244.0.0/24 overlaps") && !strings.Contains(got, "metadata.name: Invalid value: \"web.a\"") &&
			!strings.Contains(got, "spec.layer2.role: Forbidden: namespace by-policy already has") {
			t.Errorf("%q names none of the three rules", got)
		}
	})
}

// TestCUDNWebhookCalledOnlyWhenNeeded: every new CUDN is checked (it takes
// a network ID), an update is only when it changes a Primary CUDN's
// selector: relabelling a Secondary CUDN costs no webhook call.
func TestCUDNWebhookCalledOnlyWhenNeeded(t *testing.T) {
	env := startEnv(t)
	c := synced(env.Client)
	const path = "/validate-k8s-ovn-org-v1-clusteruserdefinednetwork"
	before := webhookCalls(t, path)
	plain := testobj.MakeCUDN("plainname").SelectLabels(map[string]string{"none": "none"}).Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.118.8.0/24")).Obj()
	if err := c.Create(context.Background(), plain); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(context.Background(), testobj.MakeCUDN("with-dash").SelectLabels(map[string]string{"none": "none"}).Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.118.9.0/24")).Obj()); err != nil {
		t.Fatal(err)
	}
	plain.Labels = map[string]string{"touched": "yes"}
	if err := c.Update(context.Background(), plain); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the CUDN webhook's requests", func() error {
		if got := webhookCalls(t, path); got != before+2 {
			return fmt.Errorf("the CUDN webhook served %v requests, want %v", got, before+2)
		}
		return nil
	})
}
