package webhooks_test

import (
	"fmt"
	"strings"
	"testing"

	ipamclaimsv1alpha1 "github.com/k8snetworkplumbingwg/ipamclaims/pkg/crd/ipamclaims/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
)

func nse(value string) map[string]string {
	return map[string]string{ovnk.AnnotationDefaultNetwork: value}
}

// predefinedNetwork is the OKEP-5233 example: a Primary Layer2 network with
// infrastructure, reserved subnets and a custom gateway.
func predefinedNetwork() udnv1.NetworkSpec {
	s := testobj.Layer2(udnv1.NetworkRolePrimary, "192.168.100.0/24")
	s.Layer2.InfrastructureSubnets = []udnv1.NetworkCIDR{"192.168.100.0/30"}
	s.Layer2.ReservedSubnets = []udnv1.NetworkCIDR{"192.168.100.200/29"}
	s.Layer2.DefaultGatewayIPs = udnv1.DualStackIPs{"192.168.100.2"}
	return s
}

func claim(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	err := c.Create(ctx, &ipamclaimsv1alpha1.IPAMClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: ipamclaimsv1alpha1.IPAMClaimSpec{Network: "vms", Interface: "ovn-udn1"}})
	if err != nil {
		t.Fatal(err)
	}
}

func TestPodPredefinedAddresses(t *testing.T) {
	env := startEnv(t)
	c := synced(env.Client)
	namespace(t, c, "vms", true, nil)
	if err := c.Create(ctx, testobj.MakeUDN("vms", "vms").Spec(predefinedNetwork()).Obj()); err != nil {
		t.Fatal(err)
	}
	claim(t, c, "vms", "my-claim")

	t.Run("the OKEP example is created", func(t *testing.T) {
		p := testobj.MakePod("vms", "migrated-app").Annotations(nse(`{"name": "default", "namespace": "ovn-kubernetes", "ips": ["192.168.100.205"], "mac": "00:1A:2B:3C:4D:5E", "ipam-claim-reference": "my-claim"}`)).Obj()
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	})
	const path = "metadata.annotations[v1.multus-cni.io/default-network]"
	for _, tc := range []struct {
		name, value string
		want        []string
	}{
		{"malformed JSON", `{"name": "default", "ips": [`, []string{path, "must be a NetworkSelectionElement: unexpected end of JSON input"}},
		{"wrong NAD", `{"name": "blue", "namespace": "vms", "ips": ["192.168.100.205"]}`, []string{path + ".name", "must reference ovn-kubernetes/default"}},
		{"outside the subnet", `{"name": "default", "namespace": "ovn-kubernetes", "ips": ["192.168.101.5/24"]}`, []string{path + ".ips[0]", "is not inside any of the network's subnets"}},
		{"infrastructure address", `{"name": "default", "namespace": "ovn-kubernetes", "ips": ["192.168.100.3"]}`, []string{path + ".ips[0]", "infrastructureSubnets entry 192.168.100.0/30"}},
		{"gateway", `{"name": "default", "namespace": "ovn-kubernetes", "ips": ["192.168.100.2"]}`, []string{path + ".ips[0]"}},
		{"broadcast", `{"name": "default", "namespace": "ovn-kubernetes", "ips": ["192.168.100.255"]}`, []string{"broadcast address of subnet 192.168.100.0/24"}},
		{"two IPv4", `{"name": "default", "namespace": "ovn-kubernetes", "ips": ["192.168.100.10", "192.168.100.11"]}`, []string{path + ".ips[1]", "at most one IP per IP family"}},
		{"multicast MAC", `{"name": "default", "namespace": "ovn-kubernetes", "mac": "01:00:5e:00:00:01"}`, []string{path + ".mac", "unicast"}},
		{"all-zero MAC", `{"name": "default", "namespace": "ovn-kubernetes", "mac": "00:00:00:00:00:00"}`, []string{path + ".mac", `Invalid value: "00:00:00:00:00:00": must not be the all-zero MAC address`}},
		{"missing IPAMClaim", `{"name": "default", "namespace": "ovn-kubernetes", "ipam-claim-reference": "nope"}`, []string{path + ".ipam-claim-reference", "IPAMClaim vms/nope does not exist"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testobj.MakePod("vms", "bad-"+strings.ReplaceAll(strings.ToLower(tc.name), " ", "-")).Annotations(nse(tc.value)).Obj()
			expectInvalid(t, c.Create(ctx, p), tc.want...)
			expectAbsent(t, c, p)
		})
	}
	t.Run("a Primary Layer2 CUDN's namespace is checked the same way", func(t *testing.T) {
		namespace(t, c, "vms-cudn", true, map[string]string{"vms": "cudn"})
		if err := c.Create(ctx, testobj.MakeCUDN("vms-cudn").SelectLabels(map[string]string{"vms": "cudn"}).Spec(predefinedNetwork()).Obj()); err != nil {
			t.Fatal(err)
		}
		p := testobj.MakePod("vms-cudn", "bad").Annotations(nse(`{"name": "default", "namespace": "ovn-kubernetes", "ips": ["192.168.100.1"]}`)).Obj()
		expectInvalid(t, c.Create(ctx, p), path+".ips[0]", "infrastructureSubnets entry 192.168.100.0/30")
		expectAbsent(t, c, p)
		if err := c.Create(ctx, testobj.MakePod("vms-cudn", "good").Annotations(nse(`{"name": "default", "namespace": "ovn-kubernetes", "ips": ["192.168.100.201"]}`)).Obj()); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("pods without the annotation are untouched", func(t *testing.T) {
		if err := c.Create(ctx, testobj.MakePod("vms", "plain").Obj()); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("namespaces without a Primary Layer2 network keep Multus' meaning", func(t *testing.T) {
		namespace(t, c, "l3", true, nil)
		if err := c.Create(ctx, testobj.MakeUDN("l3", "n").Spec(testobj.Layer3(udnv1.NetworkRolePrimary, "10.60.0.0/16")).Obj()); err != nil {
			t.Fatal(err)
		}
		namespace(t, c, "labelled-empty", true, nil)
		namespace(t, c, "default-network", false, nil)
		for _, ns := range []string{"l3", "labelled-empty", "default-network"} {
			if err := c.Create(ctx, testobj.MakePod(ns, "p").Annotations(nse(`{"name": "macvlan", "ips": ["10.0.0.5/24"]}`)).Obj()); err != nil {
				t.Errorf("%s: %v", ns, err)
			}
		}
	})
}

func TestPodDefaultNetworkCannotChange(t *testing.T) {
	env := startEnv(t)
	c := synced(env.Client)
	namespace(t, c, "immutable", true, nil)
	if err := c.Create(ctx, testobj.MakeUDN("immutable", "n").Spec(predefinedNetwork()).Obj()); err != nil {
		t.Fatal(err)
	}
	namespace(t, c, "immutable-plain", false, nil) // only the policy sees it
	value := `{"name": "default", "namespace": "ovn-kubernetes", "ips": ["192.168.100.10"]}`
	for _, ns := range []string{"immutable", "immutable-plain"} {
		t.Run(ns, func(t *testing.T) {
			with := testobj.MakePod(ns, "with").Annotations(nse(value)).Obj()
			without := testobj.MakePod(ns, "without").Obj()
			for _, p := range []*corev1.Pod{with, without} {
				if err := c.Create(ctx, p); err != nil {
					t.Fatal(err)
				}
			}
			for _, tc := range []struct {
				name   string
				pod    *corev1.Pod
				mutate func(map[string]string)
			}{
				{"changed", with, func(a map[string]string) { a[ovnk.AnnotationDefaultNetwork] = strings.Replace(value, ".10", ".11", 1) }},
				{"removed", with, func(a map[string]string) { delete(a, ovnk.AnnotationDefaultNetwork) }},
				{"added", without, func(a map[string]string) { a[ovnk.AnnotationDefaultNetwork] = value }},
			} {
				t.Run(tc.name, func(t *testing.T) {
					testenv.Eventually(t, "the pod annotation change is refused", func() error {
						var cur corev1.Pod
						if err := c.Get(ctx, client.ObjectKeyFromObject(tc.pod), &cur); err != nil {
							return err
						}
						if cur.Annotations == nil {
							cur.Annotations = map[string]string{}
						}
						tc.mutate(cur.Annotations)
						err := c.Update(ctx, &cur)
						if err == nil {
							t.Fatalf("update %s the annotation was accepted", tc.name)
						}
						if !strings.Contains(err.Error(), "annotation cannot be added, removed or changed after the pod was created") {
							return err
						}
						return nil
					})
					var after corev1.Pod
					if err := c.Get(ctx, client.ObjectKeyFromObject(tc.pod), &after); err != nil {
						t.Fatal(err)
					}
					if after.Annotations[ovnk.AnnotationDefaultNetwork] != tc.pod.Annotations[ovnk.AnnotationDefaultNetwork] {
						t.Errorf("annotation is now %q", after.Annotations[ovnk.AnnotationDefaultNetwork])
					}
				})
			}
			t.Run("other changes are allowed", func(t *testing.T) {
				var cur corev1.Pod
				if err := c.Get(ctx, client.ObjectKeyFromObject(with), &cur); err != nil {
					t.Fatal(err)
				}
				cur.Labels = map[string]string{"touched": "yes"}
				if err := c.Update(ctx, &cur); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

func TestNamespacePrimaryLabelCannotChange(t *testing.T) {
	env := startEnv(t)
	c := synced(env.Client)
	namespace(t, c, "label-add", false, nil)
	namespace(t, c, "label-remove", true, nil)
	for _, tc := range []struct {
		ns     string
		mutate func(map[string]string)
	}{
		{"label-add", func(l map[string]string) { l[ovnk.LabelPrimaryUserDefinedNetwork] = "" }},
		{"label-remove", func(l map[string]string) { delete(l, ovnk.LabelPrimaryUserDefinedNetwork) }},
	} {
		t.Run(tc.ns, func(t *testing.T) {
			testenv.Eventually(t, "the namespace label change is refused", func() error {
				var ns corev1.Namespace
				if err := c.Get(ctx, client.ObjectKey{Name: tc.ns}, &ns); err != nil {
					return err
				}
				tc.mutate(ns.Labels)
				err := c.Update(ctx, &ns)
				if err == nil {
					t.Fatal("label change accepted")
				}
				if !strings.Contains(err.Error(), "The k8s.ovn.org/primary-user-defined-network label cannot be added or removed after the namespace was created.") {
					return err
				}
				return nil
			})
			var ns corev1.Namespace
			if err := c.Get(ctx, client.ObjectKey{Name: tc.ns}, &ns); err != nil {
				t.Fatal(err)
			}
			_, has := ns.Labels[ovnk.LabelPrimaryUserDefinedNetwork]
			if has != (tc.ns == "label-remove") {
				t.Errorf("label present = %v after the rejected update", has)
			}
			ns.Labels["team"] = "blue"
			if err := c.Update(ctx, &ns); err != nil {
				t.Errorf("changing another label: %v", err)
			}
		})
	}
}

func TestPodIPAMClaimAnnotationMigration(t *testing.T) {
	env := startEnv(t)
	c, warns := clientWithWarnings(t, env)
	namespace(t, c, "legacy", true, nil)
	if err := c.Create(ctx, testobj.MakeUDN("legacy", "n").Spec(predefinedNetwork()).Obj()); err != nil {
		t.Fatal(err)
	}
	claim(t, c, "legacy", "vm-a")
	warns.take()

	t.Run("old annotation alone becomes a NetworkSelectionElement", func(t *testing.T) {
		p := testobj.MakePod("legacy", "old").Annotations(map[string]string{ovnk.AnnotationPrimaryUDNIPAMClaim: "vm-a"}).Obj()
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		if got, want := p.Annotations[ovnk.AnnotationDefaultNetwork], `[{"name":"default","namespace":"ovn-kubernetes","ipam-claim-reference":"vm-a"}]`; got != want {
			t.Errorf("default-network = %q, want %q", got, want)
		}
		if w := warns.take(); len(w) != 1 || !strings.Contains(w[0], "k8s.ovn.org/primary-udn-ipamclaim is deprecated") {
			t.Errorf("warnings = %q", w)
		}
	})
	t.Run("with both, the NetworkSelectionElement wins", func(t *testing.T) {
		value := `[{"name":"default","namespace":"ovn-kubernetes","ips":["192.168.100.20"]}]`
		p := testobj.MakePod("legacy", "both").Annotations(map[string]string{ovnk.AnnotationPrimaryUDNIPAMClaim: "vm-a", ovnk.AnnotationDefaultNetwork: value}).Obj()
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		if got := p.Annotations[ovnk.AnnotationDefaultNetwork]; got != value {
			t.Errorf("default-network = %q, want it unchanged", got)
		}
		if w := warns.take(); len(w) != 1 || !strings.Contains(w[0], "deprecated and ignored") {
			t.Errorf("warnings = %q", w)
		}
	})
	t.Run("the written element is validated: a missing claim is refused", func(t *testing.T) {
		p := testobj.MakePod("legacy", "missing").Annotations(map[string]string{ovnk.AnnotationPrimaryUDNIPAMClaim: "gone"}).Obj()
		expectInvalid(t, c.Create(ctx, p), "IPAMClaim legacy/gone does not exist")
		expectAbsent(t, c, p)
	})
	t.Run("outside a Primary Layer2 namespace nothing is written", func(t *testing.T) {
		namespace(t, c, "legacy-empty", true, nil)
		p := testobj.MakePod("legacy-empty", "old").Annotations(map[string]string{ovnk.AnnotationPrimaryUDNIPAMClaim: "vm-a"}).Obj()
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		if _, ok := p.Annotations[ovnk.AnnotationDefaultNetwork]; ok {
			t.Errorf("annotations = %v", p.Annotations)
		}
	})
}

// TestPodUpdateRuleOverTLS checks the pod webhook's own update rule (the
// ValidatingAdmissionPolicy enforces the same in the apiserver, so only a
// direct request shows the webhook's verdict, for clusters without VAP).
func TestPodUpdateRuleOverTLS(t *testing.T) {
	env := startEnv(t)
	value := `{"name":"default","namespace":"ovn-kubernetes","ips":["192.168.100.10"]}`
	old := testobj.MakePod("tls", "p").Annotations(nse(value)).Obj()
	changed := testobj.MakePod("tls", "p").Annotations(nse(strings.Replace(value, ".10", ".12", 1))).Obj()
	resp := review(t, env, "/validate--v1-pod", admissionv1.Update, changed, old)
	if resp.Allowed || resp.Result == nil || resp.Result.Code != 422 ||
		!strings.Contains(resp.Result.Message, "the v1.multus-cni.io/default-network annotation cannot be added, removed or changed after the pod was created") {
		t.Fatalf("response %+v", resp.Result)
	}
	same := testobj.MakePod("tls", "p").Annotations(nse(value)).Obj()
	same.Labels = map[string]string{"x": "y"}
	if resp := review(t, env, "/validate--v1-pod", admissionv1.Update, same, old); !resp.Allowed {
		t.Fatalf("unrelated update refused: %+v", resp.Result)
	}
}

// webhookCalls is how many requests the in-process webhook server has
// served on path (controller-runtime's controller_runtime_webhook_requests_total).
func webhookCalls(t *testing.T, path string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0.0
	for _, f := range families {
		if f.GetName() != "controller_runtime_webhook_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "webhook" && l.GetValue() == path {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

// TestPodWebhooksAreCalledOnlyForTheirAnnotations: in a namespace with a
// Primary Layer2 network, a pod without udnkit's annotations is created and
// updated without a webhook call (the webhooks' matchConditions); the
// validating webhook is called for a pod with v1.multus-cni.io/default-network
// and for an update that changes it, the mutating one for a pod with
// k8s.ovn.org/primary-udn-ipamclaim.
func TestPodWebhooksAreCalledOnlyForTheirAnnotations(t *testing.T) {
	env := startEnv(t)
	c := env.Client
	namespace(t, c, "quiet", true, nil)
	if err := c.Create(ctx, testobj.MakeUDN("quiet", "n").Spec(predefinedNetwork()).Obj()); err != nil {
		t.Fatal(err)
	}
	claim(t, c, "quiet", "vm-a")
	const validate, mutate = "/validate--v1-pod", "/mutate--v1-pod"
	expect := func(path string, want float64) {
		t.Helper()
		testenv.Eventually(t, path+"'s requests", func() error {
			if got := webhookCalls(t, path); got != want {
				return fmt.Errorf("%s served %v requests, want %v", path, got, want)
			}
			return nil
		})
	}
	v0, m0 := webhookCalls(t, validate), webhookCalls(t, mutate)

	plain := testobj.MakePod("quiet", "plain").Annotations(map[string]string{"team": "a"}).Obj()
	if err := c.Create(ctx, plain); err != nil {
		t.Fatal(err)
	}
	plain.Annotations["team"] = "b"
	plain.Labels = map[string]string{"app": "x"}
	if err := c.Update(ctx, plain); err != nil {
		t.Fatal(err)
	}
	// Then one call each, so a call for the plain pod would show as two.
	static := testobj.MakePod("quiet", "static").Annotations(nse(`[{"name":"default","namespace":"ovn-kubernetes","ips":["192.168.100.20"]}]`)).Obj()
	if err := c.Create(ctx, static); err != nil {
		t.Fatal(err)
	}
	expect(validate, v0+1)
	legacy := testobj.MakePod("quiet", "legacy").Annotations(map[string]string{ovnk.AnnotationPrimaryUDNIPAMClaim: "vm-a"}).Obj()
	if err := c.Create(ctx, legacy); err != nil {
		t.Fatal(err)
	}
	expect(mutate, m0+1)
	expect(validate, v0+2) // the mutated pod carries the default-network annotation

	// An update that keeps the annotation is not the webhook's; one that
	// changes it is (and is refused, by the policy or the webhook).
	static.Labels = map[string]string{"app": "y"}
	if err := c.Update(ctx, static); err != nil {
		t.Fatal(err)
	}
	expect(validate, v0+2)
	static.Annotations[ovnk.AnnotationDefaultNetwork] = `[{"name":"default","namespace":"ovn-kubernetes","ips":["192.168.100.21"]}]`
	if err := c.Update(ctx, static); err == nil {
		t.Error("changing the default-network annotation was admitted")
	}
}
