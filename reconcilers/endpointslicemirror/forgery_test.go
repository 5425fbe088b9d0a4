package endpointslicemirror_test

import (
	"strings"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/ovnk"
)

// policyRule is the refusal of the policy udnkit-endpointslice-mirror-writers
// (charts/udnkit/files/policies/endpointslice-mirror-writers.yaml).
const policyRule = "Forbidden: only udnkit and OVN-Kubernetes write the mirrored EndpointSlices of Services on user-defined networks"

// TestForgedMirrors: a tenant with EndpointSlice rights in her own
// Primary-UDN namespace cannot forge a mirror (by the managed-by label, the
// network annotation or the service-name label) nor edit the mirror udnkit
// wrote; each refusal names the field and the rule. Her own slices, other
// labels on a mirror and deleting one stay open; udnkit may write them.
// Upstream's chart has no such policy (its ValidatingAdmissionPolicies
// guard the namespace label, the default-network annotation and EgressIP
// marks only).
func TestForgedMirrors(t *testing.T) {
	requireEnv(t)
	const ns, network = "alice", "alice_net"
	svc, b := oneBackend(t, ns, "10.160.0.0/16", "w", "10.244.1.60", "10.160.0.60")
	alice := tenant(t, "alice", ns)
	src := defaultSlice(svc, discoveryv1.AddressTypeIPv4, b)
	must(t, admin.Create(ctx, src))
	mirror := waitMirror(t, src, network, map[string]string{"w-0": "10.160.0.60"})

	forge := func(labels, annotations map[string]string) *discoveryv1.EndpointSlice {
		s := defaultSlice(svc, discoveryv1.AddressTypeIPv4, b)
		s.GenerateName, s.OwnerReferences = "forged-", nil
		s.Labels, s.Annotations = labels, annotations
		s.Endpoints[0].Addresses = []string{"10.160.0.99"}
		return s
	}
	refused := []struct {
		name  string
		write func(c client.Client) error
		field string
	}{
		{"a slice managed by the mirror controller", func(c client.Client) error {
			return c.Create(ctx, forge(map[string]string{discoveryv1.LabelManagedBy: ovnk.EndpointSliceMirrorControllerName}, nil), client.DryRunAll)
		}, "metadata.labels[endpointslice.kubernetes.io/managed-by]"},
		{"a slice naming the network", func(c client.Client) error {
			return c.Create(ctx, forge(nil, map[string]string{ovnk.AnnotationEndpointSliceNetwork: network}), client.DryRunAll)
		}, "metadata.annotations[k8s.ovn.org/endpointslice-network]"},
		{"a slice naming a Service of the network", func(c client.Client) error {
			return c.Create(ctx, forge(map[string]string{ovnk.LabelUserDefinedServiceName: "w"}, nil), client.DryRunAll)
		}, "metadata.labels[k8s.ovn.org/service-name]"},
		{"the mirror's endpoints", func(c client.Client) error {
			m := mirror.DeepCopy()
			m.Endpoints[0].Addresses = []string{"10.160.0.99"}
			return c.Update(ctx, m, client.DryRunAll)
		}, "endpoints"},
		{"the mirror's managed-by label", func(c client.Client) error {
			m := mirror.DeepCopy()
			m.Labels[discoveryv1.LabelManagedBy] = "alice"
			return c.Update(ctx, m, client.DryRunAll)
		}, "metadata.labels[endpointslice.kubernetes.io/managed-by]"},
	}
	for _, c := range refused {
		t.Run("refused: "+c.name, func(t *testing.T) {
			for who, cl := range map[string]client.Client{"alice": alice, "a cluster admin": admin} {
				err := c.write(cl)
				if err == nil || !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), c.field+": "+policyRule) {
					t.Errorf("%s: %v, want %q", who, err, c.field+": "+policyRule)
				}
			}
			if err := c.write(udnkit); err != nil {
				t.Errorf("udnkit refused: %v", err)
			}
		})
	}

	t.Run("allowed", func(t *testing.T) {
		own := forge(map[string]string{discoveryv1.LabelManagedBy: "alice-controller", discoveryv1.LabelServiceName: "w"}, nil)
		if err := alice.Create(ctx, own); err != nil {
			t.Errorf("her own slice: %v", err)
		}
		m := mirror.DeepCopy()
		m.Labels["team"] = "alice"
		if err := alice.Update(ctx, m); err != nil {
			t.Errorf("another label on the mirror: %v", err)
		}
		if err := alice.Delete(ctx, mirror); err != nil {
			t.Errorf("deleting the mirror: %v", err)
		}
		// The mirror controller writes it again; her own slice, not
		// Kubernetes', has none.
		again := waitMirror(t, src, network, map[string]string{"w-0": "10.160.0.60"})
		if again.UID == mirror.UID {
			t.Errorf("the deleted mirror %s is still there", mirror.Name)
		}
		waitNoMirror(t, ns, own.Name)
	})
}

// TestPolicyNamesAreOvnk: the policy protects exactly ovnk's names.
func TestPolicyNamesAreOvnk(t *testing.T) {
	objs, err := envtest.PolicyObjects(envtest.AnnotationWriters{}, envtest.ParamsNamespace)
	must(t, err)
	want := map[string]string{
		"managedBy":    "'" + discoveryv1.LabelManagedBy + "'",
		"controller":   "'" + ovnk.EndpointSliceMirrorControllerName + "'",
		"serviceLabel": "'" + ovnk.LabelUserDefinedServiceName + "'",
		"keys": "['" + ovnk.AnnotationEndpointSliceNetwork + "', '" + ovnk.AnnotationSourceEndpointSlice + "', '" +
			ovnk.LabelSourceEndpointSliceVersion + "']",
	}
	for _, o := range objs {
		if o.GetKind() != "ValidatingAdmissionPolicy" || o.GetName() != "udnkit-endpointslice-mirror-writers" {
			continue
		}
		variables, _, _ := unstructured.NestedSlice(o.Object, "spec", "variables")
		for _, v := range variables {
			v := v.(map[string]any)
			if w, ok := want[v["name"].(string)]; ok {
				if v["expression"] != w {
					t.Errorf("variable %s is %v, want %s", v["name"], v["expression"], w)
				}
				delete(want, v["name"].(string))
			}
		}
	}
	if len(want) != 0 {
		t.Errorf("the policy lacks the variables %v", want)
	}
}
