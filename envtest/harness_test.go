package envtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ipamclaimsv1alpha1 "github.com/k8snetworkplumbingwg/ipamclaims/pkg/crd/ipamclaims/v1alpha1"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/ovnk"
)

// TestHarnessInstallsEveryCRD starts the shared control plane and creates one
// object of each kind udnkit installs: UDN, CUDN, NetworkAttachmentDefinition,
// IPAMClaim and MultiNetworkPolicy, all from files in the repository (no
// network).
func TestHarnessInstallsEveryCRD(t *testing.T) {
	env := start(t, envtest.Options{})
	ctx := context.Background()
	if len(env.CRDs) != 5 {
		t.Errorf("installed %d CRDs, want 5 (UDN, CUDN, NAD, IPAMClaim, MultiNetworkPolicy)", len(env.CRDs))
	}
	c := env.Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "harness"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	udn := &udnv1.UserDefinedNetwork{
		ObjectMeta: metav1.ObjectMeta{Name: "u", Namespace: "harness"},
		Spec: udnv1.UserDefinedNetworkSpec{Topology: udnv1.NetworkTopologyLayer2,
			Layer2: &udnv1.Layer2Config{Role: udnv1.NetworkRolePrimary, Subnets: udnv1.DualStackCIDRs{"10.0.0.0/24"}}},
	}
	cudn := &udnv1.ClusterUserDefinedNetwork{
		ObjectMeta: metav1.ObjectMeta{Name: "c"},
		Spec: udnv1.ClusterUserDefinedNetworkSpec{Network: udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer3,
			Layer3: &udnv1.Layer3Config{Role: udnv1.NetworkRolePrimary, Subnets: []udnv1.Layer3Subnet{{CIDR: "10.1.0.0/16", HostSubnet: 24}}}}},
	}
	nad := &nadv1.NetworkAttachmentDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "harness"},
		Spec:       nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"0.4.0","name":"ovn-kubernetes","type":"ovn-k8s-cni-overlay"}`},
	}
	claim := &ipamclaimsv1alpha1.IPAMClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "claim", Namespace: "harness"},
		Spec:       ipamclaimsv1alpha1.IPAMClaimSpec{Network: "blue", Interface: "ovn-udn1"},
	}
	if err := c.Create(ctx, udn); err != nil {
		t.Errorf("UDN: %v", err)
	}
	if err := c.Create(ctx, cudn); err != nil {
		t.Errorf("CUDN: %v", err)
	}
	if err := c.Create(ctx, nad); err != nil {
		t.Errorf("NAD: %v", err)
	}
	if err := c.Create(ctx, claim); err != nil {
		t.Errorf("IPAMClaim: %v", err)
	}
	if err := c.Create(ctx, multiNetworkPolicy("mnp", map[string]any{"podSelector": map[string]any{}, "policyTypes": []any{"Ingress"}})); err != nil {
		t.Errorf("MultiNetworkPolicy: %v", err)
	}
	// The module's schema, not a stand-in that keeps any field: a policy
	// without its required podSelector is refused.
	if err := c.Create(ctx, multiNetworkPolicy("bad-mnp", map[string]any{"policyTypes": []any{"Ingress"}})); !apierrors.IsInvalid(err) {
		t.Errorf("a MultiNetworkPolicy without podSelector: %v, want Invalid", err)
	}
	// The CRDs' rules are live: a broken object is refused.
	bad := udn.DeepCopy()
	bad.Name, bad.ResourceVersion = "bad", ""
	bad.Spec.Layer2.Subnets = udnv1.DualStackCIDRs{"10.0.0.0/24", "10.0.1.0/24"}
	if err := c.Create(ctx, bad); err == nil {
		t.Error("a UDN with two IPv4 subnets was accepted")
	}
}

// TestHarnessWebhooks starts the control plane with Options.Webhooks and
// nothing serving: the generated webhook configurations point at the
// harness's local TLS address (so, failurePolicy Fail, a Primary CUDN create
// fails there and leaves nothing behind), and the ValidatingAdmissionPolicies
// are installed with their bindings and params.
func TestHarnessWebhooks(t *testing.T) {
	env := start(t, envtest.Options{Webhooks: true})
	ctx := context.Background()
	if env.Webhook.Port == 0 || env.Webhook.Host == "" {
		t.Fatalf("webhook serving address %+v", env.Webhook)
	}
	for _, f := range []string{"tls.crt", "tls.key"} {
		if _, err := os.Stat(filepath.Join(env.Webhook.CertDir, f)); err != nil {
			t.Error(err)
		}
	}
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "validating-webhook-configuration"}, &vwc); err != nil {
		t.Fatal(err)
	}
	// envtest joins host and path with a double slash, which the server accepts.
	wantURL := fmt.Sprintf("https://%s/", net.JoinHostPort(env.Webhook.Host, fmt.Sprint(env.Webhook.Port)))
	found := false
	for _, w := range vwc.Webhooks {
		u := w.ClientConfig.URL
		if u != nil && strings.HasPrefix(*u, wantURL) && strings.HasSuffix(*u, "/validate-k8s-ovn-org-v1-clusteruserdefinednetwork") && len(w.ClientConfig.CABundle) > 0 {
			found = true
		}
	}
	if !found {
		t.Errorf("no webhook calls %s with a CA bundle", wantURL)
	}
	var policies admissionregistrationv1.ValidatingAdmissionPolicyList
	var bindings admissionregistrationv1.ValidatingAdmissionPolicyBindingList
	if err := env.Client.List(ctx, &policies); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.List(ctx, &bindings); err != nil {
		t.Fatal(err)
	}
	if len(policies.Items) != 10 || len(bindings.Items) != 10 {
		t.Errorf("%d policies and %d bindings installed, want 10 and 10", len(policies.Items), len(bindings.Items))
	}
	var params corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: envtest.ParamsNamespace, Name: ovnk.AdmissionParamsConfigMap}, &params); err != nil {
		t.Errorf("the policies' params: %v", err)
	} else if !equality.Semantic.DeepEqual(params.Data, ovnk.DefaultClusterConfig().AdmissionParams()) {
		t.Errorf("the policies' params %v, want the default configuration's", params.Data)
	}

	cudn := &udnv1.ClusterUserDefinedNetwork{
		ObjectMeta: metav1.ObjectMeta{Name: "nobody-serves"},
		Spec: udnv1.ClusterUserDefinedNetworkSpec{NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"none": "none"}},
			Network: udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2,
				Layer2: &udnv1.Layer2Config{Role: udnv1.NetworkRolePrimary, Subnets: udnv1.DualStackCIDRs{"10.0.0.0/24"}}}},
	}
	err := env.Client.Create(ctx, cudn)
	if err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
		t.Fatalf("create with no webhook server: %v, want a failed webhook call", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cudn), &udnv1.ClusterUserDefinedNetwork{}); !apierrors.IsNotFound(err) {
		t.Errorf("after the failed create: %v, want NotFound", err)
	}
}

// start starts the harness and stops it when the test ends.
// multiNetworkPolicy is a k8s.cni.cncf.io MultiNetworkPolicy in namespace
// harness for NAD blue with spec.
func multiNetworkPolicy(name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.cni.cncf.io/v1beta1", "kind": "MultiNetworkPolicy",
		"metadata": map[string]any{"namespace": "harness", "name": name, "annotations": map[string]any{"k8s.v1.cni.cncf.io/policy-for": "blue"}},
		"spec":     spec,
	}}
}

func start(t *testing.T, opts envtest.Options) *envtest.Environment {
	t.Helper()
	testenv.Real(t, "kube-apiserver")
	env, err := envtest.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	return env
}

// TestPolicyProtectsOVNKAnnotations: the annotation-writer policies protect
// exactly the annotations udnkit trusts, by ovnk's names, per kind.
func TestPolicyProtectsOVNKAnnotations(t *testing.T) {
	objs, err := envtest.PolicyObjects(envtest.AnnotationWriters{}, envtest.ParamsNamespace)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"udnkit-pod-ovn-annotation-writers": fmt.Sprintf("['%s']", ovnk.AnnotationPodNetworks),
		"udnkit-node-ovn-annotation-writers": fmt.Sprintf("['%s', '%s', '%s', '%s']", ovnk.AnnotationNodeID, ovnk.AnnotationNodeSubnets,
			ovnk.AnnotationNodeTransitSwitchPortTunnelIDs, ovnk.AnnotationLayer2TopologyVersion),
		"udnkit-network-ovn-annotation-writers": fmt.Sprintf("['%s', '%s', '%s']", ovnk.AnnotationNetworkID, ovnk.AnnotationTunnelKeys, ovnk.AnnotationNetworkIDsCommitted),
		"udnkit-nad-writers":                    fmt.Sprintf("['%s', '%s', '%s']", ovnk.AnnotationNetworkID, ovnk.AnnotationTunnelKeys, ovnk.AnnotationNetworkName),
	}
	// The NAD policy's label is ovnk's too.
	wantLabel := fmt.Sprintf("'%s'", ovnk.LabelUserDefinedNetwork)
	for _, o := range objs {
		if o.GetKind() != "ValidatingAdmissionPolicy" || want[o.GetName()] == "" {
			continue
		}
		variables, _, _ := unstructured.NestedSlice(o.Object, "spec", "variables")
		for _, v := range variables {
			v := v.(map[string]any)
			switch v["name"] {
			case "keys":
				if v["expression"] != want[o.GetName()] {
					t.Errorf("%s protects %v, want %s", o.GetName(), v["expression"], want[o.GetName()])
				}
				delete(want, o.GetName())
			case "label":
				if v["expression"] != wantLabel {
					t.Errorf("%s protects label %v, want %s", o.GetName(), v["expression"], wantLabel)
				}
			case "trustedUsers", "trustedGroups":
				// No writers: the release's manager only.
				want := "[]"
				if v["name"] == "trustedUsers" {
					want = `["system:serviceaccount:` + envtest.ParamsNamespace + `:` + envtest.ReleaseName + `"]`
				}
				if v["expression"] != want {
					t.Errorf("%s: no writers, yet %s is %v, want %s", o.GetName(), v["name"], v["expression"], want)
				}
			}
		}
	}
	for name := range want {
		t.Errorf("no policy %s with keys", name)
	}
}

// TestNetworkPoliciesUseOVNKNames: the UDN and CUDN policies read the
// ConfigMap, keys and flag that ovnk names (the namespace label is the UDN
// webhook's: a new Primary UDN is not theirs), and the harness points
// their bindings at the namespace it writes the ConfigMap to.
func TestNetworkPoliciesUseOVNKNames(t *testing.T) {
	objs, err := envtest.PolicyObjects(envtest.AnnotationWriters{}, "params-ns")
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	bindings := 0
	for _, o := range objs {
		if o.GetLabels()["udnkit.k8s.ovn.org/component"] != "admission" {
			continue
		}
		data, err := json.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		text.Write(data)
		if name, _, _ := unstructured.NestedString(o.Object, "spec", "paramRef", "name"); name != "" {
			bindings++
			if name != ovnk.AdmissionParamsConfigMap {
				t.Errorf("%s reads ConfigMap %s, want %s", o.GetName(), name, ovnk.AdmissionParamsConfigMap)
			}
			if ns, _, _ := unstructured.NestedString(o.Object, "spec", "paramRef", "namespace"); ns != "params-ns" {
				t.Errorf("%s reads its params from namespace %q, want params-ns", o.GetName(), ns)
			}
		}
	}
	if bindings != 2 {
		t.Errorf("%d bindings read %s, want 2 (udnkit-network-config, udnkit-network-warnings)", bindings, ovnk.AdmissionParamsConfigMap)
	}
	for _, want := range []string{"params.data.?" + ovnk.ParamInternalRanges, "params.data.?" + ovnk.ParamTransitRanges,
		"params.data." + ovnk.ParamInternalCIDRs4, "params.data." + ovnk.ParamTransitCIDRs4,
		"params.data." + ovnk.ParamInternalCIDRs6, "params.data." + ovnk.ParamTransitCIDRs6,
		"params.data.?" + ovnk.ParamPreconfiguredUDNAddresses, "--" + ovnk.FlagPreconfiguredUDNAddressesEnable} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the network policies never mention %q", want)
		}
	}
}

// TestGetShowsWhyANetworkIsNotCreated: `kubectl get udn,cudn` prints the
// NetworkCreated condition's status and reason, so a user sees why a network
// has no NADs without reading its YAML.
func TestGetShowsWhyANetworkIsNotCreated(t *testing.T) {
	env := start(t, envtest.Options{})
	ctx := context.Background()
	c := env.Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "columns"}}); err != nil {
		t.Fatal(err)
	}
	udn := &udnv1.UserDefinedNetwork{
		ObjectMeta: metav1.ObjectMeta{Name: "blocked", Namespace: "columns"},
		Spec: udnv1.UserDefinedNetworkSpec{Topology: udnv1.NetworkTopologyLayer2,
			Layer2: &udnv1.Layer2Config{Role: udnv1.NetworkRolePrimary, Subnets: udnv1.DualStackCIDRs{"10.0.0.0/24"}}},
	}
	if err := c.Create(ctx, udn); err != nil {
		t.Fatal(err)
	}
	udn.Status.Conditions = []metav1.Condition{{Type: udnv1.ConditionNetworkCreated, Status: metav1.ConditionFalse,
		Reason: udnv1.ReasonPrimaryNetworkConflict, Message: "another Primary network holds the namespace", LastTransitionTime: metav1.Now()}}
	if err := c.Status().Update(ctx, udn); err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		strings.TrimSuffix(env.Config.Host, "/")+"/apis/k8s.ovn.org/v1/namespaces/columns/userdefinednetworks", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var table metav1.Table
	if err := json.NewDecoder(resp.Body).Decode(&table); err != nil {
		t.Fatal(err)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("table rows: %d, want 1", len(table.Rows))
	}
	got := map[string]any{}
	for i, col := range table.ColumnDefinitions {
		got[col.Name] = table.Rows[0].Cells[i]
	}
	if got["Created"] != "False" || got["Reason"] != udnv1.ReasonPrimaryNetworkConflict {
		t.Errorf("kubectl get udn columns %v: want Created False and Reason %s", got, udnv1.ReasonPrimaryNetworkConflict)
	}
}
