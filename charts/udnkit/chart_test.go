package udnkitchart_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/cmd/udnkit/app"
	"github.com/udnkit/udnkit/dataplane/controllers/networkpolicy"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/internal/testenv"
)

const releaseNamespace = "udnkit-system"

func chartDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

func load(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := envtest.LoadChart()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// render renders the chart as `helm template` would, with user values vals.
func render(t *testing.T, vals map[string]any) ([]*unstructured.Unstructured, error) {
	t.Helper()
	return renderChart(t, load(t), vals)
}

// renderChart renders c as `helm template` would, with user values vals
// (envtest.RenderChart, which the harness's policies come from too).
func renderChart(t *testing.T, c *chart.Chart, vals map[string]any) ([]*unstructured.Unstructured, error) {
	t.Helper()
	return envtest.RenderChart(c, vals, releaseNamespace)
}

func find(objs []*unstructured.Unstructured, kind, nameSuffix string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && strings.HasSuffix(o.GetName(), nameSuffix) {
			return o
		}
	}
	return nil
}

func kinds(objs []*unstructured.Unstructured) map[string]int {
	m := map[string]int{}
	for _, o := range objs {
		m[o.GetKind()]++
	}
	return m
}

func managerArgs(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	if find(objs, "Deployment", "udnkit") == nil {
		t.Fatal("no Deployment rendered")
	}
	return containerArgs(objs, "Deployment", "udnkit")
}

// containerArgs are the first container's arguments of the object of kind
// whose name ends in nameSuffix (none when the chart renders none).
func containerArgs(objs []*unstructured.Unstructured, kind, nameSuffix string) []string {
	o := find(objs, kind, nameSuffix)
	if o == nil {
		return nil
	}
	containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	return args
}

func TestLintStrict(t *testing.T) {
	for name, vals := range map[string]map[string]any{
		"defaults":     nil,
		"cert-manager": {"webhook": map[string]any{"tls": map[string]any{"mode": "cert-manager"}}},
	} {
		t.Run(name, func(t *testing.T) {
			linter := lint.AllWithKubeVersion(chartDir(), vals, releaseNamespace, &chartutil.KubeVersion{Version: "v1.37.2", Major: "1", Minor: "37"})
			for _, m := range linter.Messages {
				// --strict: warnings fail too; INFO (e.g. "icon is recommended") does not.
				if m.Severity >= support.WarningSev {
					t.Errorf("helm lint --strict: %s", m)
				}
			}
		})
	}
}

func TestRenderDefaults(t *testing.T) {
	objs, err := render(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := kinds(objs)
	if k["CustomResourceDefinition"] != 2 {
		t.Errorf("want the UDN and CUDN CRDs by default, got %d CRDs", k["CustomResourceDefinition"])
	}
	for _, crd := range objs {
		if crd.GetKind() == "CustomResourceDefinition" && crd.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
			t.Errorf("CRD %s lacks helm.sh/resource-policy: keep", crd.GetName())
		}
	}
	for _, kind := range []string{"Deployment", "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding",
		"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
		if k[kind] == 0 {
			t.Errorf("no %s rendered", kind)
		}
	}
	if k["ValidatingAdmissionPolicy"] != 10 || k["ValidatingAdmissionPolicyBinding"] != 10 {
		t.Errorf("want 10 ValidatingAdmissionPolicies with bindings, got %v", k)
	}
	for _, kind := range []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
		cfg := find(objs, kind, "")
		hooks, _, _ := unstructured.NestedSlice(cfg.Object, "webhooks")
		if len(hooks) == 0 {
			t.Fatalf("%s has no webhooks", kind)
		}
		for _, h := range hooks {
			hm := h.(map[string]any)
			svc, _, _ := unstructured.NestedString(hm, "clientConfig", "service", "name")
			ns, _, _ := unstructured.NestedString(hm, "clientConfig", "service", "namespace")
			ca, _, _ := unstructured.NestedString(hm, "clientConfig", "caBundle")
			if svc != "udnkit-webhook" || ns != releaseNamespace || len(ca) < 100 {
				t.Errorf("%s webhook %v points at %s/%s with caBundle of %d bytes", kind, hm["name"], ns, svc, len(ca))
			}
			if hm["failurePolicy"] != "Fail" || hm["sideEffects"] != "None" || fmt.Sprint(hm["timeoutSeconds"]) != "5" {
				t.Errorf("%s webhook %v: failurePolicy %v, sideEffects %v, timeout %v", kind, hm["name"], hm["failurePolicy"], hm["sideEffects"], hm["timeoutSeconds"])
			}
		}
	}
	secret := find(objs, "Secret", "-webhook-tls")
	vcfg := find(objs, "ValidatingWebhookConfiguration", "")
	hooks, _, _ := unstructured.NestedSlice(vcfg.Object, "webhooks")
	if ca, _, _ := unstructured.NestedString(hooks[0].(map[string]any), "clientConfig", "caBundle"); ca != secret.Object["data"].(map[string]any)["ca.crt"] {
		t.Error("the webhooks' caBundle is not the CA in the serving Secret")
	}
	args := strings.Join(managerArgs(t, objs), " ")
	for _, want := range []string{"--controllers=admission,nad,nodes,ipam,dataplane", "--leader-elect=true",
		"--cluster-subnets=10.244.0.0/16", "--masquerade-subnets=169.254.0.0/17,fd69::/112",
		"--preconfigured-udn-addresses-enable=false", "--ovn-nb-address=unix:/var/run/ovn/ovnnb_db.sock",
		"--max-networks-per-namespace=100"} {
		if !strings.Contains(args, want) {
			t.Errorf("manager args %q lack %q", args, want)
		}
	}
	d := find(objs, "Deployment", "udnkit")
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	sc := containers[0].(map[string]any)["securityContext"].(map[string]any)
	if sc["readOnlyRootFilesystem"] != true || sc["allowPrivilegeEscalation"] != false {
		t.Errorf("manager container is not locked down: %v", sc)
	}
	if nonRoot, _, _ := unstructured.NestedBool(d.Object, "spec", "template", "spec", "securityContext", "runAsNonRoot"); !nonRoot {
		t.Error("pod does not require a non-root user")
	}
	for _, o := range objs {
		if o.GetKind() == "ClusterRole" || o.GetKind() == "Role" {
			rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
			for _, r := range rules {
				rm := r.(map[string]any)
				for _, key := range []string{"verbs", "resources", "apiGroups"} {
					for _, v := range toStrings(rm[key]) {
						if v == "*" {
							t.Errorf("%s %s grants a wildcard %s", o.GetKind(), o.GetName(), key)
						}
					}
				}
			}
		}
	}
}

// TestManagerAcceptsRenderedArgs parses the Deployment's arguments with the
// manager's own flag set, for each values combination, so the chart can never
// pass a flag the binary does not know.
func TestManagerAcceptsRenderedArgs(t *testing.T) {
	for name, vals := range map[string]map[string]any{
		"defaults":                nil,
		"admission only":          {"controllers": []any{"admission"}},
		"admission-only profile":  {"profile": "admission-only"},
		"udn-controllers profile": {"profile": "udn-controllers"},
		"every option": {"features": map[string]any{"preconfiguredUDNAddresses": true}, "metrics": map[string]any{"enabled": false},
			"network": map[string]any{"nodeSubnets": []any{"192.168.0.0/24"}, "udnAllowedDefaultServices": []any{"openshift-dns/dns-default"}}},
	} {
		t.Run(name, func(t *testing.T) {
			objs, err := render(t, vals)
			if err != nil {
				t.Fatal(err)
			}
			opts := app.NewOptions()
			fs := flag.NewFlagSet("udnkit", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			opts.BindFlags(fs)
			if err := fs.Parse(managerArgs(t, objs)); err != nil {
				t.Fatalf("the manager refuses the chart's arguments: %v", err)
			}
			if _, err := opts.Selected(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func toStrings(v any) []string {
	var out []string
	if l, ok := v.([]any); ok {
		for _, x := range l {
			out = append(out, x.(string))
		}
	}
	return out
}

// mnpCRD is the MultiNetworkPolicy CRD's name.
const mnpCRD = "multi-networkpolicies.k8s.cni.cncf.io"

func TestRenderOptions(t *testing.T) {
	cases := []struct {
		name  string
		vals  map[string]any
		check func(t *testing.T, objs []*unstructured.Unstructured)
	}{
		{"CRDs disabled", map[string]any{"crds": map[string]any{"enabled": false}}, func(t *testing.T, objs []*unstructured.Unstructured) {
			if n := kinds(objs)["CustomResourceDefinition"]; n != 0 {
				t.Errorf("%d CRDs rendered with crds.enabled=false", n)
			}
		}},
		{"CRDs without keep", map[string]any{"crds": map[string]any{"keep": false}}, func(t *testing.T, objs []*unstructured.Unstructured) {
			for _, o := range objs {
				if _, ok := o.GetAnnotations()["helm.sh/resource-policy"]; ok && o.GetKind() == "CustomResourceDefinition" {
					t.Errorf("%s keeps the resource-policy annotation", o.GetName())
				}
			}
		}},
		{"IPAMClaim and NAD CRDs", map[string]any{"crds": map[string]any{"ipamClaims": true, "networkAttachmentDefinitions": true}}, func(t *testing.T, objs []*unstructured.Unstructured) {
			if find(objs, "CustomResourceDefinition", "ipamclaims.k8s.cni.cncf.io") == nil || find(objs, "CustomResourceDefinition", "network-attachment-definitions.k8s.cni.cncf.io") == nil {
				t.Errorf("IPAMClaim or NAD CRD missing: %v", kinds(objs))
			}
		}},
		{"MultiNetworkPolicy CRD off by default", nil, func(t *testing.T, objs []*unstructured.Unstructured) {
			if find(objs, "CustomResourceDefinition", mnpCRD) != nil {
				t.Errorf("the MultiNetworkPolicy CRD rendered without crds.multiNetworkPolicies")
			}
		}},
		{"MultiNetworkPolicy CRD", map[string]any{"crds": map[string]any{"multiNetworkPolicies": true}}, func(t *testing.T, objs []*unstructured.Unstructured) {
			crd := find(objs, "CustomResourceDefinition", mnpCRD)
			if crd == nil {
				t.Fatalf("no MultiNetworkPolicy CRD with crds.multiNetworkPolicies: %v", kinds(objs))
			}
			if crd.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
				t.Errorf("the MultiNetworkPolicy CRD lacks helm.sh/resource-policy: keep")
			}
			// the kind and version the dataplane watches
			kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
			versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
			served := map[string]bool{}
			for _, v := range versions {
				if m, ok := v.(map[string]any); ok && m["served"] == true {
					served[m["name"].(string)] = true
				}
			}
			if gvk := networkpolicy.MultiNetworkPolicyGVK; kind != gvk.Kind || !served[gvk.Version] {
				t.Errorf("the CRD serves %s in %v, the dataplane watches %s", kind, served, gvk)
			}
		}},
		{"UDN-enabled services: upstream's by default", nil, func(t *testing.T, objs []*unstructured.Unstructured) {
			if !slices.Contains(managerArgs(t, objs), "--udn-allowed-default-services=default/kubernetes,kube-system/kube-dns") {
				t.Errorf("the dataplane does not get upstream's default services: %v", managerArgs(t, objs))
			}
		}},
		{"UDN-enabled services set", map[string]any{"network": map[string]any{"udnAllowedDefaultServices": []any{"default/kubernetes", "openshift-dns/dns-default"}}},
			func(t *testing.T, objs []*unstructured.Unstructured) {
				if !slices.Contains(managerArgs(t, objs), "--udn-allowed-default-services=default/kubernetes,openshift-dns/dns-default") {
					t.Errorf("network.udnAllowedDefaultServices not passed: %v", managerArgs(t, objs))
				}
			}},
		{"feature flag on", map[string]any{"features": map[string]any{"preconfiguredUDNAddresses": true}}, func(t *testing.T, objs []*unstructured.Unstructured) {
			if !strings.Contains(strings.Join(managerArgs(t, objs), " "), "--preconfigured-udn-addresses-enable=true") {
				t.Error("flag not passed to the manager")
			}
		}},
		{"admission only", map[string]any{"controllers": []any{"admission"}}, func(t *testing.T, objs []*unstructured.Unstructured) {
			args := strings.Join(managerArgs(t, objs), " ")
			if !strings.Contains(args, "--controllers=admission ") || strings.Contains(args, "--ovn-nb-address") {
				t.Errorf("admission-only args: %s", args)
			}
			if !slices.Contains(managerArgs(t, objs), "--admission-params-namespace="+releaseNamespace) {
				t.Errorf("the manager does not write the policies' params where their bindings read them: %s", args)
			}
			if find(objs, "Role", "-admission-params") == nil || find(objs, "RoleBinding", "-admission-params") == nil {
				t.Error("the manager may not write the policies' params")
			}
		}},
		{"profile admission-only: only admission, whatever controllers and the dataplane mode say", map[string]any{"profile": "admission-only",
			"dataplane": map[string]any{"mode": "daemonset"}}, func(t *testing.T, objs []*unstructured.Unstructured) {
			args := strings.Join(managerArgs(t, objs), " ")
			if !strings.Contains(args, "--controllers=admission ") || strings.Contains(args, "--ovn-") {
				t.Errorf("admission-only profile args: %s", args)
			}
			if find(objs, "DaemonSet", "") != nil {
				t.Error("the admission-only profile renders the dataplane DaemonSet")
			}
			if find(objs, "Service", "-webhook") == nil || find(objs, "ValidatingWebhookConfiguration", "") == nil {
				t.Error("the admission-only profile renders no webhooks")
			}
		}},
		{"no admission: no webhook Service or certificate", map[string]any{"controllers": []any{"nad", "nodes"}}, func(t *testing.T, objs []*unstructured.Unstructured) {
			if find(objs, "Service", "-webhook") != nil || find(objs, "Secret", "-webhook-tls") != nil {
				t.Error("webhook Service or Secret rendered without the admission controller")
			}
			// Nothing writes the params the network policies read: they
			// would refuse every network.
			for _, o := range objs {
				if o.GetLabels()["udnkit.k8s.ovn.org/component"] == "admission" || o.GetKind() == "Role" && strings.HasSuffix(o.GetName(), "-admission-params") {
					t.Errorf("%s %s rendered without the admission controller", o.GetKind(), o.GetName())
				}
			}
			if n := kinds(objs)["ValidatingAdmissionPolicy"]; n != 7 {
				t.Errorf("%d policies without the admission controller, want the 7 others", n)
			}
		}},
		{"OVN sockets from the host", map[string]any{"ovn": map[string]any{"socketHostPath": "/var/run/ovn"}}, func(t *testing.T, objs []*unstructured.Unstructured) {
			d := find(objs, "Deployment", "udnkit")
			volumes, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
			found := false
			for _, v := range volumes {
				if p, _, _ := unstructured.NestedString(v.(map[string]any), "hostPath", "path"); p == "/var/run/ovn" {
					found = true
				}
			}
			if !found {
				t.Errorf("no hostPath volume for the OVN sockets: %v", volumes)
			}
			if objs, _ := render(t, nil); find(objs, "Deployment", "udnkit") != nil {
				vols, _, _ := unstructured.NestedSlice(find(objs, "Deployment", "udnkit").Object, "spec", "template", "spec", "volumes")
				if len(vols) != 1 {
					t.Errorf("the default mounts %d volumes, want only the webhook certificate", len(vols))
				}
			}
		}},
		{"metrics off", map[string]any{"metrics": map[string]any{"enabled": false}}, func(t *testing.T, objs []*unstructured.Unstructured) {
			if find(objs, "Service", "-metrics") != nil {
				t.Error("metrics Service rendered with metrics.enabled=false")
			}
			if find(objs, "ClusterRole", "-metrics-reader") != nil || find(objs, "ClusterRole", "udnkit-view") == nil {
				t.Error("metrics off should drop the metrics reader and keep the tenant roles")
			}
			if !strings.Contains(strings.Join(managerArgs(t, objs), " "), "--metrics-bind-address=0") {
				t.Error("metrics endpoint not disabled")
			}
		}},
		{"cert-manager with a self-signed issuer", map[string]any{"webhook": map[string]any{"tls": map[string]any{"mode": "cert-manager"}}}, func(t *testing.T, objs []*unstructured.Unstructured) {
			k := kinds(objs)
			if k["Certificate"] != 1 || k["Issuer"] != 1 {
				t.Errorf("want one Certificate and one Issuer, got %v", k)
			}
			if find(objs, "Secret", "-webhook-tls") != nil {
				t.Error("a Helm-generated Secret was rendered in cert-manager mode")
			}
		}},
		{"cert-manager with a ClusterIssuer", map[string]any{"webhook": map[string]any{"tls": map[string]any{"mode": "cert-manager", "certManager": map[string]any{"issuerRef": map[string]any{"name": "corp-ca", "kind": "ClusterIssuer"}}}}}, func(t *testing.T, objs []*unstructured.Unstructured) {
			if kinds(objs)["Issuer"] != 0 {
				t.Error("an Issuer was rendered although issuerRef names one")
			}
			cert := find(objs, "Certificate", "-webhook")
			if name, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name"); name != "corp-ca" {
				t.Errorf("issuerRef.name = %q", name)
			}
		}},
		{"one replica without leader election", map[string]any{"replicas": 1, "leaderElection": map[string]any{"enabled": false}}, func(t *testing.T, objs []*unstructured.Unstructured) {
			if !strings.Contains(strings.Join(managerArgs(t, objs), " "), "--leader-elect=false") {
				t.Error("leader election not disabled")
			}
			if find(objs, "Role", "-leader-election") != nil {
				t.Error("leader-election Role rendered without leader election")
			}
		}},
		{"metrics over HTTPS for authorized callers", nil, func(t *testing.T, objs []*unstructured.Unstructured) {
			if !strings.Contains(strings.Join(managerArgs(t, objs), " "), "--metrics-bind-address=:8443 --metrics-secure=true") {
				t.Errorf("manager args %v do not serve secure metrics on 8443", managerArgs(t, objs))
			}
			svc := find(objs, "Service", "-metrics")
			ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
			if len(ports) != 1 || ports[0].(map[string]any)["name"] != "https" || ports[0].(map[string]any)["targetPort"] != "https" {
				t.Errorf("metrics Service ports %v, want one named https", ports)
			}
			reader := find(objs, "ClusterRole", "udnkit-metrics-reader")
			if reader == nil {
				t.Fatal("no udnkit-metrics-reader ClusterRole")
			}
			rules, _, _ := unstructured.NestedSlice(reader.Object, "rules")
			if len(rules) != 1 || fmt.Sprint(rules[0].(map[string]any)["nonResourceURLs"]) != "[/metrics]" || fmt.Sprint(rules[0].(map[string]any)["verbs"]) != "[get]" {
				t.Errorf("udnkit-metrics-reader rules %v, want get on /metrics only", rules)
			}
			manager := find(objs, "ClusterRole", "udnkit-manager")
			var reviews []string
			managerRules, _, _ := unstructured.NestedSlice(manager.Object, "rules")
			for _, r := range managerRules {
				for _, res := range toStrings(r.(map[string]any)["resources"]) {
					if res == "tokenreviews" || res == "subjectaccessreviews" {
						reviews = append(reviews, res+":"+strings.Join(toStrings(r.(map[string]any)["verbs"]), ","))
					}
				}
			}
			if strings.Join(reviews, " ") != "tokenreviews:create subjectaccessreviews:create" {
				t.Errorf("the manager may %v, want to create tokenreviews and subjectaccessreviews", reviews)
			}
		}},
		{"metrics over plain HTTP", map[string]any{"metrics": map[string]any{"secure": false, "port": 8080}}, func(t *testing.T, objs []*unstructured.Unstructured) {
			if !strings.Contains(strings.Join(managerArgs(t, objs), " "), "--metrics-bind-address=:8080 --metrics-secure=false") {
				t.Errorf("manager args %v", managerArgs(t, objs))
			}
			ports, _, _ := unstructured.NestedSlice(find(objs, "Service", "-metrics").Object, "spec", "ports")
			if ports[0].(map[string]any)["name"] != "http" {
				t.Errorf("metrics Service ports %v, want one named http", ports)
			}
		}},
		{"aggregated tenant roles", nil, func(t *testing.T, objs []*unstructured.Unstructured) {
			for _, c := range []struct{ name, label string }{{"udnkit-admin", "admin"}, {"udnkit-edit", "edit"}, {"udnkit-view", "view"}} {
				role := find(objs, "ClusterRole", c.name)
				if role == nil {
					t.Errorf("no %s ClusterRole", c.name)
					continue
				}
				if role.GetLabels()["rbac.authorization.k8s.io/aggregate-to-"+c.label] != "true" || role.GetLabels()["app.kubernetes.io/instance"] != "udnkit" {
					t.Errorf("%s labels %v", c.name, role.GetLabels())
				}
			}
		}},
		{"Helm-generated TLS", nil, func(t *testing.T, objs []*unstructured.Unstructured) {
			s := find(objs, "Secret", "-webhook-tls")
			if s == nil {
				t.Fatal("no TLS Secret")
			}
			for _, key := range []string{"ca.crt", "tls.crt", "tls.key"} {
				if v, _, _ := unstructured.NestedString(s.Object, "data", key); len(v) < 100 {
					t.Errorf("Secret %s is empty or short: %q", key, v)
				}
			}
			checkServingCert(t, s)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			objs, err := render(t, c.vals)
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, objs)
		})
	}
}

func TestRenderRejectsBadValues(t *testing.T) {
	for name, c := range map[string]struct {
		vals map[string]any
		want string
	}{
		"unknown top-level key":    {map[string]any{"replica": 3}, "replica"},
		"unknown nested key":       {map[string]any{"webhook": map[string]any{"tlsMode": "helm"}}, "tlsMode"},
		"unknown TLS mode":         {map[string]any{"webhook": map[string]any{"tls": map[string]any{"mode": "vault"}}}, "mode"},
		"unknown controller":       {map[string]any{"controllers": []any{"admission", "magic"}}, "controllers"},
		"unknown profile":          {map[string]any{"profile": "admission"}, "profile"},
		"misspelt udn-controllers": {map[string]any{"profile": "udn-controller"}, "profile"},
		"bad OVN address":          {map[string]any{"ovn": map[string]any{"nbAddress": "10.0.0.1"}}, "nbAddress"},
		"dataplane without OVN":    {map[string]any{"ovn": map[string]any{"nbAddress": ""}}, "ovn.nbAddress is required"},
		"webhook timeout over 30":  {map[string]any{"webhook": map[string]any{"timeoutSeconds": 31}}, "timeoutSeconds"},
		"relative socket path":     {map[string]any{"ovn": map[string]any{"socketHostPath": "var/run/ovn"}}, "socketHostPath"},
		"connect timeout no unit":  {map[string]any{"ovn": map[string]any{"connectTimeout": "300"}}, "connectTimeout"},
		"replicas without leader election": {map[string]any{"replicas": 2, "leaderElection": map[string]any{"enabled": false}},
			"replicas is 2 but leaderElection.enabled is false"},
		"service without namespace": {map[string]any{"network": map[string]any{"udnAllowedDefaultServices": []any{"kube-dns"}}}, "udnAllowedDefaultServices"},
		"no UDN-enabled service":    {map[string]any{"network": map[string]any{"udnAllowedDefaultServices": []any{}}}, "udnAllowedDefaultServices"},
		"empty trusted user":        {map[string]any{"policies": map[string]any{"ovnAnnotationWriters": map[string]any{"users": []any{""}}}}, "users"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := render(t, c.vals)
			if err == nil {
				t.Fatal("rendered without error")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not mention %q", err, c.want)
			}
		})
	}
}

// TestServerSideDryRun applies every rendered object to a real apiserver with
// server-side apply in dry-run mode, which runs the apiserver's full
// validation (schemas, CEL of CRDs, webhook configuration rules, RBAC
// objects, ValidatingAdmissionPolicy expressions) without persisting anything.
func TestServerSideDryRun(t *testing.T) {
	testenv.Real(t, "kube-apiserver")
	env, err := envtest.Start(envtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNamespace}}); err != nil {
		t.Fatal(err)
	}
	for name, vals := range map[string]map[string]any{
		"defaults":           nil,
		"admission only":     {"controllers": []any{"admission"}, "crds": map[string]any{"ipamClaims": true, "multiNetworkPolicies": true}},
		"dataplane per node": daemonSetValues,
	} {
		t.Run(name, func(t *testing.T) {
			objs, err := render(t, vals)
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) < 8 {
				t.Fatalf("only %d objects rendered", len(objs))
			}
			for _, o := range objs {
				err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o),
					client.FieldOwner("udnkit-chart-test"), client.ForceOwnership, client.DryRunAll)
				if err != nil {
					t.Errorf("%s %s: %v", o.GetKind(), o.GetName(), err)
				}
			}
		})
	}
}

// TestPoliciesMatchHarness: the chart fills the annotation-writer policies'
// trusted identities from its values (and the manager's ServiceAccount), and
// envtest.PolicyObjects, which renders the chart from the harness's
// AnnotationWriters, hands the suites the same policies.
func TestPoliciesMatchHarness(t *testing.T) {
	for name, c := range map[string]struct {
		vals    map[string]any
		writers envtest.AnnotationWriters
	}{
		"defaults": {nil, envtest.AnnotationWriters{
			Users: []string{"system:serviceaccount:udnkit-system:udnkit",
				"system:serviceaccount:ovn-kubernetes:ovnkube-cluster-manager", "system:serviceaccount:ovn-kubernetes:ovnkube-node"},
			NodeGroup: "system:ovn-nodes"}},
		"own writers, no node group": {map[string]any{
			"serviceAccount": map[string]any{"name": "net-manager"},
			"policies": map[string]any{"ovnAnnotationWriters": map[string]any{
				"users": []any{"system:serviceaccount:udnkit-system:net-manager", "ovn-admin"}, "groups": []any{"ovn-operators"}, "nodeGroup": ""}}},
			envtest.AnnotationWriters{Users: []string{"system:serviceaccount:udnkit-system:net-manager", "ovn-admin"}, Groups: []string{"ovn-operators"},
				ServiceAccount: "net-manager"}},
	} {
		t.Run(name, func(t *testing.T) {
			objs, err := render(t, c.vals)
			if err != nil {
				t.Fatal(err)
			}
			want, err := envtest.PolicyObjects(c.writers, releaseNamespace)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, w := range want {
				got := find(objs, w.GetKind(), w.GetName())
				if got == nil {
					t.Errorf("the chart renders no %s %s", w.GetKind(), w.GetName())
					continue
				}
				if !equality.Semantic.DeepEqual(got.Object["spec"], w.Object["spec"]) {
					t.Errorf("%s %s differs:\nchart:   %v\nharness: %v", w.GetKind(), w.GetName(), got.Object["spec"], w.Object["spec"])
				}
				variables, _, _ := unstructured.NestedSlice(got.Object, "spec", "variables")
				for _, v := range variables {
					if v.(map[string]any)["name"] == "trustedUsers" {
						n++
						if e := v.(map[string]any)["expression"].(string); !strings.Contains(e, `"`+c.writers.Users[0]+`"`) {
							t.Errorf("%s trusts %s, not the manager %s", w.GetName(), e, c.writers.Users[0])
						}
					}
				}
			}
			if n != 5 {
				t.Errorf("%d policies with trusted users, want 5 (pods, nodes, networks, NADs, mirrored EndpointSlices)", n)
			}
		})
	}
}

// TestPolicyInliningRefusesBadVariables: templates/policies.yaml inlines
// the variables a match condition names (the apiserver refuses variables
// there); a name the policy does not define, or variables that name each
// other in a cycle, fail the render with the policy's and the condition's
// names instead of shipping a condition the apiserver would refuse.
func TestPolicyInliningRefusesBadVariables(t *testing.T) {
	policy := func(condition string, variables ...[2]string) []byte {
		var b strings.Builder
		b.WriteString("apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata:\n  name: zz-bad\nspec:\n")
		b.WriteString("  matchConstraints:\n    resourceRules:\n    - apiGroups: [\"\"]\n      apiVersions: [v1]\n      operations: [CREATE]\n      resources: [configmaps]\n")
		b.WriteString("  matchConditions:\n  - name: refused\n    expression: " + strconv.Quote(condition) + "\n  variables:\n")
		for _, v := range variables {
			b.WriteString("  - name: " + v[0] + "\n    expression: " + strconv.Quote(v[1]) + "\n")
		}
		b.WriteString("  validations:\n  - expression: \"true\"\n")
		return []byte(b.String())
	}
	for name, c := range map[string]struct {
		file []byte
		want string // in the error; "" = renders
	}{
		"nested variables": {policy("variables.a", [2]string{"a", "variables.b || false"}, [2]string{"b", "true"}), ""},
		"unknown variable": {policy("variables.a && variables.nope", [2]string{"a", "true"}),
			"policy zz-bad, match condition refused: a variable it refers to is not defined"},
		"cycle": {policy("variables.a", [2]string{"a", "variables.b"}, [2]string{"b", "!variables.a"}),
			"policy zz-bad, match condition refused: a variable it refers to is not defined, or variables refer to each other in a cycle"},
	} {
		t.Run(name, func(t *testing.T) {
			ch := load(t)
			ch.Files = append(ch.Files, &chart.File{Name: "files/policies/zz-bad.yaml", Data: c.file})
			objs, err := renderChart(t, ch, nil)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				got := find(objs, "ValidatingAdmissionPolicy", "zz-bad")
				if got == nil {
					t.Fatal("the chart renders no policy zz-bad")
				}
				conditions, _, _ := unstructured.NestedSlice(got.Object, "spec", "matchConditions")
				if e := conditions[0].(map[string]any)["expression"]; e != "((true) || false)" {
					t.Errorf("match condition %q, want the variables inlined: ((true) || false)", e)
				}
				// The variables themselves are left as written.
				variables, _, _ := unstructured.NestedSlice(got.Object, "spec", "variables")
				if e := variables[0].(map[string]any)["expression"]; e != "variables.b || false" {
					t.Errorf("variable a changed to %q", e)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("render error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// checkServingCert checks the Helm-generated webhook Secret as the
// apiserver and the manager use it: the serving certificate and key form a
// pair (the manager's tls.LoadX509KeyPair), the certificate verifies against
// ca.crt (the webhooks' caBundle) for the Service's in-cluster name, and
// both keys are ECDSA P-256.
func checkServingCert(t *testing.T, secret *unstructured.Unstructured) {
	t.Helper()
	data := func(key string) []byte {
		v, _, _ := unstructured.NestedString(secret.Object, "data", key)
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			t.Fatalf("Secret %s: %v", key, err)
		}
		return b
	}
	pair, err := tls.X509KeyPair(data("tls.crt"), data("tls.key"))
	if err != nil {
		t.Fatalf("tls.crt and tls.key: %v", err)
	}
	if k, ok := pair.PrivateKey.(*ecdsa.PrivateKey); !ok || k.Curve != elliptic.P256() {
		t.Errorf("serving key is %T, want ECDSA P-256", pair.PrivateKey)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(data("ca.crt")) {
		t.Fatal("ca.crt holds no certificate")
	}
	block, _ := pem.Decode(data("ca.crt"))
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := ca.PublicKey.(*ecdsa.PublicKey); !ok || k.Curve != elliptic.P256() {
		t.Errorf("CA key is %T, want ECDSA P-256", ca.PublicKey)
	}
	name := "udnkit-webhook." + releaseNamespace + ".svc"
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("serving certificate for %s: %v", name, err)
	}
}
