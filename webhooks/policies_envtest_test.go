package webhooks_test

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/webhooks"
	"github.com/udnkit/udnkit/webhooks/network"
)

// Every udnkit policy type-checks against the schemas of what it matches
// and of its params, as kube-controller-manager's policy status controller
// does (envtest runs none): a misspelt field is only a type-check warning
// when the policy is created, and an error at every admission.
func TestPoliciesTypeCheck(t *testing.T) {
	env := startEnv(t)
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	checker := &validating.TypeChecker{SchemaResolver: &resolver.ClientDiscoveryResolver{Discovery: dc}, RestMapper: env.Client.RESTMapper()}
	var list admissionregistrationv1.ValidatingAdmissionPolicyList
	if err := env.Client.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := range list.Items {
		p := &list.Items[i]
		if !strings.HasPrefix(p.Name, "udnkit-") {
			continue
		}
		n++
		for _, w := range checker.Check(p) {
			t.Errorf("%s: %s: %s", p.Name, w.FieldRef, w.Warning)
		}
	}
	if n < 7 {
		t.Errorf("%d udnkit policies, want at least 7", n)
	}
}

// TestPoliciesAgreeWithOfflineChecks: the policies and the Go checks udnctl
// runs offline (ValidateNetworkSpec, NetworkWarnings) give every spec the
// same verdict in the same words. Each spec is created (dry run) as a UDN
// with its role and as a CUDN, both decided by the policies: every
// refusal's message holds "<field>: <detail>" of every Go error, and a
// UDN's refusal reads word for word as the CUDN's (but for the field path's
// spec.network); the warnings are the offline ones. A UDN name collision
// reads the same for a Primary UDN as for a Secondary one.
func TestPoliciesAgreeWithOfflineChecks(t *testing.T) {
	env := startEnv(t)
	c, warns := clientWithWarnings(t, env)
	namespace(t, c, "parity", true, nil)
	gateway := func(subnet udnv1.CIDR, gw udnv1.IP) udnv1.NetworkSpec {
		s := testobj.Layer2(udnv1.NetworkRolePrimary, subnet)
		s.Layer2.DefaultGatewayIPs = udnv1.DualStackIPs{gw}
		return s
	}
	withL2 := func(s udnv1.NetworkSpec, mut func(*udnv1.Layer2Config)) udnv1.NetworkSpec {
		mut(s.Layer2)
		return s
	}
	for name, spec := range map[string]udnv1.NetworkSpec{
		"disjoint dual-stack":           testobj.Layer2(udnv1.NetworkRoleSecondary, "10.100.0.0/16", "fd00:100::/64"),
		"disjoint Primary":              testobj.Layer2(udnv1.NetworkRolePrimary, "10.100.0.0/16", "fd00:100::/64"),
		"IPv6 beside IPv4 ranges":       testobj.Layer2(udnv1.NetworkRoleSecondary, "::/0"),
		"contains the cluster subnet":   testobj.Layer2(udnv1.NetworkRoleSecondary, "10.0.0.0/8"),
		"Primary contains it":           testobj.Layer2(udnv1.NetworkRolePrimary, "10.0.0.0/8"),
		"contains the service CIDR":     testobj.Layer3(udnv1.NetworkRoleSecondary, "10.96.0.0/12"),
		"Primary Layer3 service CIDR":   testobj.Layer3(udnv1.NetworkRolePrimary, "10.96.0.0/12", "10.244.0.0/16"),
		"inside the cluster subnet":     testobj.Layer2(udnv1.NetworkRoleSecondary, "10.244.1.0/24"),
		"masquerade IPv6":               testobj.Layer2(udnv1.NetworkRoleSecondary, "10.100.0.0/16", "fd69::/64"),
		"Primary masquerade IPv6":       testobj.Layer2(udnv1.NetworkRolePrimary, "10.100.0.0/16", "fd69::/64"),
		"Layer3 over transit":           testobj.Layer3(udnv1.NetworkRolePrimary, "100.88.0.0/14"),
		"Layer2 Secondary over transit": testobj.Layer2(udnv1.NetworkRoleSecondary, "100.88.0.0/16"),
		"Layer2 Primary over transit": withL2(testobj.Layer2(udnv1.NetworkRolePrimary, "100.88.0.0/20"), func(l *udnv1.Layer2Config) {
			l.ReservedSubnets = []udnv1.NetworkCIDR{"100.88.0.0/24"}
		}),
		"join, reserved, infrastructure": withL2(testobj.Layer2(udnv1.NetworkRolePrimary, "10.0.0.0/8"), func(l *udnv1.Layer2Config) {
			l.JoinSubnets = udnv1.DualStackCIDRs{"100.64.0.0/24"}
			l.ReservedSubnets = []udnv1.NetworkCIDR{"10.96.0.0/24"}
			l.InfrastructureSubnets = []udnv1.NetworkCIDR{"10.244.0.0/30"}
		}),
		"Layer3 join subnet": func() udnv1.NetworkSpec {
			s := testobj.Layer3(udnv1.NetworkRolePrimary, "10.30.0.0/16")
			s.Layer3.JoinSubnets = udnv1.DualStackCIDRs{"fd98::/96"}
			return s
		}(),
		"Layer3 subnet with host bits":                    testobj.Layer3(udnv1.NetworkRolePrimary, "10.20.100.0/16"),
		"Layer2 subnets with host bits":                   testobj.Layer2(udnv1.NetworkRoleSecondary, "10.66.0.1/24", "fd00:66::1/64"),
		"host bits and an ignored gateway":                gateway("10.66.0.1/24", "10.66.0.254"),
		"gateway on the network address":                  gateway("192.168.100.0/24", "192.168.100.0"),
		"gateway on the broadcast address":                gateway("192.168.100.0/24", "192.168.100.255"),
		"gateway on a /20 broadcast":                      gateway("10.20.0.0/20", "10.20.15.255"),
		"gateway inside a /20":                            gateway("10.20.0.0/20", "10.20.14.255"),
		"gateway on a /22 broadcast":                      gateway("10.20.0.0/22", "10.20.3.255"),
		"gateway on an IPv6 network":                      gateway("fd00:20::/64", "fd00:20::"),
		"gateway on the last IPv6 address":                gateway("fd00:20::/64", "fd00:20::ffff:ffff:ffff:ffff"),
		"gateway on the first host address":               gateway("192.168.100.0/24", "192.168.100.1"),
		"Layer2 in the default join subnet":               testobj.Layer2(udnv1.NetworkRolePrimary, "100.65.0.0/24"),
		"Layer3 on the default join subnet":               testobj.Layer3(udnv1.NetworkRolePrimary, "100.65.0.0/16"),
		"Secondary Layer2 over both default join subnets": testobj.Layer2(udnv1.NetworkRoleSecondary, "100.64.0.0/10", "fd99::/56"),
		"own IPv4 join subnet, IPv6 default": withL2(testobj.Layer2(udnv1.NetworkRolePrimary, "100.65.0.0/24", "fd99::/112"), func(l *udnv1.Layer2Config) {
			l.JoinSubnets = udnv1.DualStackCIDRs{"100.66.0.0/16"}
		}),
	} {
		t.Run(name, func(t *testing.T) {
			var tails []string
			for _, obj := range []client.Object{testobj.MakeUDN("parity", "n").Spec(spec).Obj(), testobj.MakeCUDN("parity-n").SelectLabels(map[string]string{"none": "none"}).Spec(spec).Obj()} {
				path := field.NewPath("spec")
				if _, isCUDN := obj.(*udnv1.ClusterUserDefinedNetwork); isCUDN {
					path = path.Child("network")
				}
				goErrs := network.ValidateNetworkSpec(path, nil, spec, testConfig())
				goWarns := network.NetworkWarnings(path, spec, testConfig())
				warns.take()
				err := c.Create(ctx, obj, client.DryRunAll)
				got := warns.take()
				kind := fmt.Sprintf("%T", obj)
				if len(goErrs) == 0 && err != nil {
					t.Fatalf("%s: offline checks admit, the apiserver refuses: %v", kind, err)
				}
				if len(goErrs) > 0 {
					if !apierrors.IsInvalid(err) {
						t.Fatalf("%s: offline checks refuse (%v), the apiserver answers %v", kind, goErrs, err)
					}
					for _, e := range goErrs {
						if want := e.Field + ": " + e.Detail; !strings.Contains(err.Error(), want) {
							t.Errorf("%s: the apiserver's message %q lacks %q", kind, err.Error(), want)
						}
					}
					tails = append(tails, strings.ReplaceAll(refusal(t, err), "spec.network.", "spec."))
				}
				// A policy's warning joins its sentences: every warning must be
				// made of offline warnings, and hold each of them.
				for _, g := range got {
					_, rest, found := strings.Cut(g, "': ")
					if !found || !strings.HasPrefix(g, "Validation failed for ValidatingAdmissionPolicy 'udnkit-network-warnings'") {
						t.Errorf("%s: warning %q is not udnkit-network-warnings'", kind, g)
					}
					for _, w := range goWarns {
						rest = strings.ReplaceAll(rest, w, "")
					}
					if strings.TrimSpace(rest) != "" {
						t.Errorf("%s: warning %q says more than the offline warnings %q", kind, g, goWarns)
					}
				}
				for _, w := range goWarns {
					if !containsAny(got, w) {
						t.Errorf("%s: warnings %q lack %q", kind, got, w)
					}
				}
			}
			if len(tails) == 2 && tails[0] != tails[1] {
				t.Errorf("the UDN's refusal %q differs from the CUDN's %q", tails[0], tails[1])
			}
		})
	}
}

// refusal checks that err is a 422 from a udnkit policy, and returns what
// it says past the policy's name.
func refusal(t testing.TB, err error) string {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("err = %v, want 422 Invalid", err)
	}
	_, tail, found := strings.Cut(err.Error(), "ValidatingAdmissionPolicy 'udnkit-")
	if !found {
		t.Fatalf("refused, but not by a udnkit policy: %v", err)
	}
	_, tail, _ = strings.Cut(tail, " denied request: ")
	return tail
}

func containsAny(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// writeParams makes the policies see cfg: it writes the params as the
// manager does and waits until probe's verdict changes as ready says.
func writeParams(t *testing.T, c client.Client, cfg ovnk.ClusterConfig, ready func() error) {
	t.Helper()
	if err := webhooks.WriteAdmissionParams(ctx, c, envtest.ParamsNamespace, cfg); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the policies see the new params", ready)
}

// The ranges are the manager's configuration: after it changes, an
// existing network can still be updated, while a new value is checked
// against the new ranges; with --preconfigured-udn-addresses-enable off the
// addresses it governs draw warnings.
func TestPoliciesFollowTheManagersConfiguration(t *testing.T) {
	env := startEnv(t)
	c, warns := clientWithWarnings(t, env)
	namespace(t, c, "reconfigured", true, nil)
	u := testobj.MakeUDN("reconfigured", "grow").Spec(testobj.Layer3(udnv1.NetworkRolePrimary, "10.60.0.0/16")).Obj()
	if err := c.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.NodeSubnets = []netip.Prefix{netip.MustParsePrefix("10.60.0.0/15")}
	cfg.PreconfiguredUDNAddresses = false
	writeParams(t, c, cfg, func() error {
		err := c.Create(ctx, testobj.MakeUDN("reconfigured", "probe").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.60.8.0/24")).Obj(), client.DryRunAll)
		if err == nil {
			return errors.New("the new node subnet is not checked yet")
		}
		return nil
	})
	defer writeParams(t, c, testConfig(), func() error {
		if err := c.Create(ctx, testobj.MakeUDN("reconfigured", "probe").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.60.8.0/24")).Obj(), client.DryRunAll); err != nil {
			return fmt.Errorf("the old configuration is not back yet: %w", err)
		}
		return nil
	})

	t.Run("a new network is checked against the new ranges", func(t *testing.T) {
		err := c.Create(ctx, testobj.MakeUDN("reconfigured", "new").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.61.128.0/24")).Obj(), client.DryRunAll)
		expectInvalid(t, err, "spec.layer2.subnets[0]: 10.61.128.0/24 overlaps the node subnet 10.60.0.0/15 (--node-subnets); user defined networks must not overlap the cluster's internal ranges.")
	})
	t.Run("the existing values of a network are not", func(t *testing.T) {
		var cur udnv1.UserDefinedNetwork
		if err := c.Get(ctx, client.ObjectKeyFromObject(u), &cur); err != nil {
			t.Fatal(err)
		}
		cur.Labels = map[string]string{"touched": "yes"}
		if err := c.Update(ctx, &cur); err != nil {
			t.Fatalf("updating a network whose subnet the new configuration covers: %v", err)
		}
		cur.Spec.Layer3.Subnets = append(cur.Spec.Layer3.Subnets, udnv1.Layer3Subnet{CIDR: "10.61.0.0/16", HostSubnet: 24})
		expectInvalid(t, c.Update(ctx, &cur), "spec.layer3.subnets[1].cidr: 10.61.0.0/16 overlaps the node subnet 10.60.0.0/15")
		cur.Spec.Layer3.Subnets[1].CIDR = "10.62.0.0/16"
		if err := c.Update(ctx, &cur); err != nil {
			t.Fatalf("appending a disjoint subnet: %v", err)
		}
	})
	// A Primary CUDN: the policies' (a new Primary UDN is the UDN webhook's,
	// which reads the manager's configuration, not the params).
	t.Run("addresses the disabled feature governs draw warnings", func(t *testing.T) {
		warns.take()
		l2 := testobj.Layer2(udnv1.NetworkRolePrimary, "10.63.0.0/16")
		l2.Layer2.ReservedSubnets = []udnv1.NetworkCIDR{"10.63.0.0/24"}
		l2.Layer2.InfrastructureSubnets = []udnv1.NetworkCIDR{"10.63.1.0/24"}
		l2.Layer2.DefaultGatewayIPs = udnv1.DualStackIPs{"10.63.1.1"}
		if err := c.Create(ctx, testobj.MakeCUDN("reconfigured-addresses").SelectLabels(map[string]string{"none": "none"}).Spec(l2).Obj(), client.DryRunAll); err != nil {
			t.Fatal(err)
		}
		got := warns.take()
		for _, f := range []string{"defaultGatewayIPs", "infrastructureSubnets", "reservedSubnets"} {
			if !containsAny(got, "spec.network.layer2."+f+": ignored while --preconfigured-udn-addresses-enable is off") {
				t.Errorf("no warning about %s in %q", f, got)
			}
		}
		if len(got) != 1 {
			t.Errorf("%d warnings, want one naming the three fields: %q", len(got), got)
		}
	})
}

// Without the manager's ConfigMap the policies cannot know the ranges, and
// refuse every network rather than admit one that may overlap them.
func TestNetworksRefusedWithoutParams(t *testing.T) {
	env := startEnv(t)
	c, _ := clientWithWarnings(t, env)
	namespace(t, c, "no-params", false, nil)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: envtest.ParamsNamespace, Name: ovnk.AdmissionParamsConfigMap}}
	if err := c.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	ok := testobj.MakeUDN("no-params", "n").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.100.0.0/16")).Obj()
	defer writeParams(t, c, testConfig(), func() error { return c.Create(ctx, ok, client.DryRunAll) })
	testenv.Eventually(t, "the policies without params refuse", func() error {
		err := c.Create(ctx, ok, client.DryRunAll)
		if err == nil {
			return errors.New("still admitted")
		}
		if !strings.Contains(err.Error(), "ValidatingAdmissionPolicy 'udnkit-network-config'") || !strings.Contains(err.Error(), "no params found") {
			return fmt.Errorf("refused, but not for the missing params: %w", err)
		}
		return nil
	})
}

// TestPoliciesTakeTheLargestNetwork: the policies' match conditions run on
// the apiserver's smaller match-condition cost budget; a Layer3 network with
// the most subnets the CRD allows (200) is still admitted, and refused with
// the right field when its last subnet overlaps a cluster range, as a create
// and as an update that appends it.
func TestPoliciesTakeTheLargestNetwork(t *testing.T) {
	env := startEnv(t)
	c := env.Client
	l3 := func(first int, last udnv1.CIDR) udnv1.NetworkSpec {
		s := testobj.Layer3(udnv1.NetworkRolePrimary)
		for i := range 199 {
			s.Layer3.Subnets = append(s.Layer3.Subnets, udnv1.Layer3Subnet{CIDR: udnv1.CIDR(fmt.Sprintf("%d.%d.0.0/16", first, i)), HostSubnet: 24})
		}
		if last != "" {
			s.Layer3.Subnets = append(s.Layer3.Subnets, udnv1.Layer3Subnet{CIDR: last, HostSubnet: 24})
		}
		return s
	}
	for _, ns := range []string{"largest-a", "largest-b", "largest-c"} {
		namespace(t, c, ns, true, nil)
	}
	if err := c.Create(ctx, testobj.MakeUDN("largest-a", "big").Spec(l3(20, "21.0.0.0/16")).Obj()); err != nil {
		t.Fatalf("a Layer3 UDN with 200 subnets: %v", err)
	}
	bad := testobj.MakeUDN("largest-b", "bad").Spec(l3(20, "10.244.0.0/16")).Obj()
	expectInvalid(t, c.Create(ctx, bad), "spec.layer3.subnets[199].cidr: 10.244.0.0/16 overlaps the cluster default network subnet 10.244.0.0/16")
	expectAbsent(t, c, bad)

	grow := testobj.MakeUDN("largest-c", "grow").Spec(l3(22, "")).Obj()
	if err := c.Create(ctx, grow); err != nil {
		t.Fatal(err)
	}
	grow.Spec.Layer3.Subnets = append(grow.Spec.Layer3.Subnets, udnv1.Layer3Subnet{CIDR: "10.244.0.0/16", HostSubnet: 24})
	expectInvalid(t, c.Update(ctx, grow), "spec.layer3.subnets[199].cidr: 10.244.0.0/16 overlaps the cluster default network subnet 10.244.0.0/16")
}
