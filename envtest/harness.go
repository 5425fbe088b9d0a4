// Package envtest is udnkit's shared test harness: it starts a real
// kube-apiserver and etcd (controller-runtime's envtest, with binaries built
// from the Go module proxy by build-binaries.sh), installs the CRDs the Helm
// chart ships, and hands out clients. The end-to-end suites and `make run` use
// it too.
package envtest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/apis/scheme"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/ovnk"
)

// EtcdVersion is the etcd that Kubernetes 1.37 pins; build-binaries.sh builds it.
const EtcdVersion = "3.7.0"

// RepoRoot is the root of the udnkit checkout this package was compiled from.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// CRDDirs are the chart's generated k8s.ovn.org CRDs and the IPAMClaim,
// NetworkAttachmentDefinition and MultiNetworkPolicy CRDs copied from their
// modules.
func CRDDirs() []string {
	root := RepoRoot()
	return []string{
		filepath.Join(root, "charts", "udnkit", "files", "crds"),
		filepath.Join(root, "charts", "udnkit", "files", "external-crds"),
	}
}

// WebhookDir holds the generated webhook configurations (make manifests).
func WebhookDir() string {
	return filepath.Join(RepoRoot(), "charts", "udnkit", "files", "webhook")
}

// AccessDir holds the chart's ClusterRoles for people and Prometheus: the
// UDN roles aggregated into admin, edit and view, and the metrics reader.
func AccessDir() string {
	return filepath.Join(RepoRoot(), "charts", "udnkit", "files", "access")
}

// KubernetesVersion is the envtest Kubernetes version, derived from the
// k8s.io/api version as the Makefile does (v0.37.2 -> 1.37.2): from the
// binary's build information, or from the checkout's go.mod (test binaries
// carry no dependency list).
func KubernetesVersion() (string, error) {
	apiVersion := ""
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "k8s.io/api" {
				apiVersion = dep.Version
			}
		}
	}
	if apiVersion == "" {
		data, err := os.ReadFile(filepath.Join(RepoRoot(), "go.mod"))
		if err != nil {
			return "", fmt.Errorf("finding the k8s.io/api version: %w", err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "k8s.io/api" {
				apiVersion = f[1]
			}
		}
	}
	if !strings.HasPrefix(apiVersion, "v0.") {
		return "", fmt.Errorf("cannot derive the Kubernetes version from k8s.io/api %q", apiVersion)
	}
	return "1." + strings.TrimPrefix(apiVersion, "v0."), nil
}

// AssetsDir finds kube-apiserver, etcd and kubectl: KUBEBUILDER_ASSETS if set,
// otherwise the per-version cache that `make envtest` fills.
func AssetsDir() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, checkAssets(dir)
	}
	version, err := KubernetesVersion()
	if err != nil {
		return "", err
	}
	base := os.Getenv("XDG_DATA_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		base = filepath.Join(home, ".local", "share")
	}
	dir := filepath.Join(base, "kubebuilder-envtest", "k8s", version+"-linux-"+runtime.GOARCH)
	return dir, checkAssets(dir)
}

func checkAssets(dir string) error {
	for _, bin := range []string{"kube-apiserver", "etcd", "kubectl"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return fmt.Errorf("envtest binary %s missing in %s (run `make envtest` to build it): %w", bin, dir, err)
		}
	}
	return nil
}

// Scheme returns the scheme every udnkit binary uses (apis/scheme).
func Scheme() *k8sruntime.Scheme { return scheme.New() }

// Environment is a running control plane with udnkit's CRDs installed.
type Environment struct {
	env *crenvtest.Environment
	// Config is an admin connection to the apiserver.
	Config *rest.Config
	// Scheme knows the built-ins, apiextensions and k8s.ovn.org/v1.
	Scheme *k8sruntime.Scheme
	// Client is an admin client that asks for strict field validation, as
	// kubectl does, so unknown fields are errors rather than dropped.
	Client client.Client
	// CRDs are the installed CustomResourceDefinitions.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// AssetsDir holds kube-apiserver, etcd and kubectl.
	AssetsDir string
	// Webhook is where the apiserver calls udnkit's webhooks when
	// Options.Webhooks is set (zero otherwise).
	Webhook WebhookServing
}

// WebhookServing is the local address and serving certificate the installed
// webhook configurations point at: serve the webhooks there (for
// controller-runtime, webhook.Options{Host, Port, CertDir}).
type WebhookServing struct {
	Host string
	Port int
	// CertDir holds tls.crt and tls.key, signed by the CA the webhook
	// configurations trust.
	CertDir string
}

// WebhookServerOptions are controller-runtime webhook server options that
// serve where the installed webhook configurations call.
func (w WebhookServing) WebhookServerOptions() webhook.Options {
	return webhook.Options{Host: w.Host, Port: w.Port, CertDir: w.CertDir}
}

// Options configure Start.
type Options struct {
	// AttachOutput streams the apiserver's and etcd's logs to this process.
	AttachOutput bool
	// Webhooks installs the generated webhook configurations (WebhookDir),
	// rewritten to call Environment.Webhook over TLS, and the
	// ValidatingAdmissionPolicies (PolicyObjects). Requests the webhooks match
	// fail (failurePolicy Fail) until something serves them there.
	Webhooks bool
	// Policies installs the ValidatingAdmissionPolicies without the webhook
	// configurations (Webhooks implies it).
	Policies bool
	// AnnotationWriters are the identities the policies trust to write the
	// OVN annotations udnkit trusts. Nil: the harness's own admin identity
	// (Environment.Config's user, which the suites' managers run as) only.
	AnnotationWriters *AnnotationWriters
	// ServiceClusterIPRange is the apiserver's --service-cluster-ip-range,
	// e.g. "10.0.0.0/24,fd00:10:96::/112" for dual-stack Services (empty:
	// envtest's 10.0.0.0/24).
	ServiceClusterIPRange string
}

// AnnotationWriters are the identities trusted to add, change or remove the
// OVN annotations of files/policies/ovn-annotation-writers.yaml, and (Users
// and Groups) to write the NADs of UDNs and CUDNs
// (files/policies/nad-writers.yaml): the chart's
// policies.ovnAnnotationWriters, which PolicyObjects renders them from.
type AnnotationWriters struct {
	// Users are trusted for every protected annotation.
	Users []string
	// Groups: any member is trusted for every protected annotation.
	Groups []string
	// NodeGroup is OVN-Kubernetes' per-node identity group: its users
	// system:ovn-node:<node> are trusted for their own node only. Empty: none.
	NodeGroup string
	// ServiceAccount names the release's manager ServiceAccount, which the
	// chart always trusts (system:serviceaccount:<params namespace>:<name>).
	// Empty: the chart's default, udnkit, which no suite authenticates as.
	ServiceAccount string
}

// Start starts etcd and kube-apiserver and installs the CRDs. Stop it with Stop.
func Start(opts Options) (*Environment, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	scheme := Scheme()
	env := &crenvtest.Environment{
		BinaryAssetsDirectory: assets,
		Scheme:                scheme,
		CRDInstallOptions: crenvtest.CRDInstallOptions{
			Paths:              CRDDirs(),
			ErrorIfPathMissing: true,
			Scheme:             scheme,
		},
		AttachControlPlaneOutput: opts.AttachOutput,
		ControlPlaneStartTimeout: startTimeout(),
	}
	if opts.Webhooks {
		env.WebhookInstallOptions = crenvtest.WebhookInstallOptions{Paths: []string{WebhookDir()}}
	}
	if opts.ServiceClusterIPRange != "" {
		env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", opts.ServiceClusterIPRange)
	}
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("starting the control plane from %s: %w", assets, err)
	}
	// No client-side throttling against a local test apiserver: client-go's
	// default (5 QPS, burst 10) would dominate every latency measured here.
	cfg.QPS, cfg.Burst = -1, -1
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	e := &Environment{
		env:       env,
		Config:    cfg,
		Scheme:    scheme,
		Client:    client.WithFieldValidation(c, metav1.FieldValidationStrict),
		CRDs:      env.CRDs,
		AssetsDir: assets,
	}
	if opts.Webhooks {
		w := env.WebhookInstallOptions
		e.Webhook = WebhookServing{Host: w.LocalServingHost, Port: w.LocalServingPort, CertDir: w.LocalServingCertDir}
	}
	if opts.Webhooks || opts.Policies {
		ctx := context.Background()
		writers := opts.AnnotationWriters
		if writers == nil {
			admin, err := e.Whoami(ctx, cfg)
			if err != nil {
				_ = env.Stop()
				return nil, err
			}
			writers = &AnnotationWriters{Users: []string{admin}}
		}
		if err := c.Create(ctx, ovnk.DefaultClusterConfig().AdmissionParamsObject(ParamsNamespace)); err != nil {
			_ = env.Stop()
			return nil, fmt.Errorf("writing the policies' params: %w", err)
		}
		if err := InstallPolicies(ctx, c, *writers, ParamsNamespace); err != nil {
			_ = env.Stop()
			return nil, err
		}
		if err := waitForPolicies(ctx, c); err != nil {
			_ = env.Stop()
			return nil, err
		}
	}
	return e, nil
}

// waitForPolicies returns once the apiserver enforces the policies just
// installed: it applies them only after its informers have seen each policy,
// binding and params object (0.1–1 s, longer on a loaded machine), and a test
// that creates a network before then would see a bad one admitted. The probe
// is a dry-run create of a UDN over the default cluster subnet, which
// udnkit-network-config refuses once it reads its params.
func waitForPolicies(ctx context.Context, c client.Client) error {
	probe := &udnv1.UserDefinedNetwork{
		ObjectMeta: metav1.ObjectMeta{Name: "policy-probe", Namespace: ParamsNamespace},
		Spec: udnv1.UserDefinedNetworkSpec{Topology: udnv1.NetworkTopologyLayer2, Layer2: &udnv1.Layer2Config{
			Role: udnv1.NetworkRoleSecondary, Subnets: udnv1.DualStackCIDRs{udnv1.CIDR(ovnk.DefaultClusterConfig().ClusterSubnets[0].String())}}},
	}
	err := testenv.Poll("the admission policies", func() error {
		err := c.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		if apierrors.IsInvalid(err) && strings.Contains(err.Error(), "udnkit-network-config") {
			return nil
		}
		return fmt.Errorf("a UDN over the cluster subnet is not refused by udnkit-network-config yet: %v", err)
	})
	if err != nil {
		return fmt.Errorf("waiting for the admission policies: %w", err)
	}
	return nil
}

// Whoami returns the user name the apiserver authenticates cfg as (a
// SelfSubjectReview).
func (e *Environment) Whoami(ctx context.Context, cfg *rest.Config) (string, error) {
	c, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		return "", err
	}
	review := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, review); err != nil {
		return "", fmt.Errorf("who am I: %w", err)
	}
	return review.Status.UserInfo.Username, nil
}

// ParamsNamespace is where Start writes the policies' params, the ConfigMap
// ovnk.AdmissionParamsConfigMap (from ovnk.DefaultClusterConfig; a manager
// run with webhooks.SetupWithManager there overwrites it with its own).
const ParamsNamespace = "default"

// InstallPolicies creates every object (ValidatingAdmissionPolicies and
// their bindings) of PolicyObjects(writers, paramsNamespace). A policy is
// enforced 0.1-1 s after it is created.
func InstallPolicies(ctx context.Context, c client.Client, writers AnnotationWriters, paramsNamespace string) error {
	objs, err := PolicyObjects(writers, paramsNamespace)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	return nil
}

// InstallObjects creates every object in the YAML files of dir (for example
// AccessDir's ClusterRoles).
func InstallObjects(ctx context.Context, c client.Client, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no objects in %s", dir)
	}
	for _, file := range files {
		objs, err := decodeFile(file)
		if err != nil {
			return err
		}
		for _, obj := range objs {
			if err := c.Create(ctx, obj); err != nil {
				return fmt.Errorf("%s: creating %s %s: %w", file, obj.GetKind(), obj.GetName(), err)
			}
		}
	}
	return nil
}

// AggregateClusterRoles does once what kube-controller-manager's
// clusterrole-aggregation controller does continuously, and envtest runs no
// controller manager: every ClusterRole with an aggregationRule gets the
// rules of the ClusterRoles its selectors match, until nothing changes (admin
// aggregates edit, which aggregates view). Call it after installing
// ClusterRoles with aggregate-to-* labels.
func AggregateClusterRoles(ctx context.Context, c client.Client) error {
	for pass := 0; pass < 10; pass++ {
		var roles rbacv1.ClusterRoleList
		if err := c.List(ctx, &roles); err != nil {
			return err
		}
		changed := false
		for i := range roles.Items {
			role := &roles.Items[i]
			if role.AggregationRule == nil {
				continue
			}
			var rules []rbacv1.PolicyRule
			for _, sel := range role.AggregationRule.ClusterRoleSelectors {
				selector, err := metav1.LabelSelectorAsSelector(&sel)
				if err != nil {
					return err
				}
				for _, other := range roles.Items {
					if other.Name == role.Name || !selector.Matches(labels.Set(other.Labels)) {
						continue
					}
					for _, r := range other.Rules {
						if !slices.ContainsFunc(rules, func(have rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(have, r) }) {
							rules = append(rules, r)
						}
					}
				}
			}
			if equality.Semantic.DeepEqual(rules, role.Rules) {
				continue
			}
			role.Rules = rules
			if err := c.Update(ctx, role); err != nil {
				return fmt.Errorf("aggregating ClusterRole %s: %w", role.Name, err)
			}
			changed = true
		}
		if !changed {
			return nil
		}
	}
	return errors.New("ClusterRole aggregation did not settle in 10 passes")
}

// decodeFile returns the objects of a multi-document YAML file.
func decodeFile(file string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if len(obj.Object) > 0 {
			out = append(out, obj)
		}
	}
}

// WaitForWebhookServer polls until something serves TLS at e.Webhook, with
// the certificate the webhook configurations trust, or ctx ends.
func (e *Environment) WaitForWebhookServer(ctx context.Context) error {
	addr := net.JoinHostPort(e.Webhook.Host, fmt.Sprint(e.Webhook.Port))
	dialer := &tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // only checks that the server is up
	var last error
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		conn, err := dialer.DialContext(ctx, "tcp", addr)
		if err != nil {
			last = err
			return false, nil
		}
		return true, conn.Close()
	})
	if err != nil {
		return fmt.Errorf("webhook server at %s not serving: %w (last error: %v)", addr, err, last)
	}
	return nil
}

func startTimeout() time.Duration {
	if v := os.Getenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT"); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	// Two cores shared by parallel test packages need more than envtest's 20 s.
	return 90 * time.Second
}

// Stop stops the apiserver and etcd and removes their temporary directories.
func (e *Environment) Stop() error { return e.env.Stop() }

// KubeconfigUser is the system:masters user of WriteKubeconfig's kubeconfig.
const KubeconfigUser = "udnkit-admin"

// WriteKubeconfig writes a kubeconfig for a system:masters user
// (KubeconfigUser) to path.
func (e *Environment) WriteKubeconfig(path string) error {
	user, err := e.env.ControlPlane.AddUser(crenvtest.User{Name: KubeconfigUser, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	data, err := user.KubeConfig()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// WaitForAPI polls /readyz until the apiserver answers ok or ctx ends.
func (e *Environment) WaitForAPI(ctx context.Context) error {
	rc, err := rest.RESTClientFor(restConfigForRaw(e.Config))
	if err != nil {
		return err
	}
	var last error
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		var body []byte
		body, last = rc.Get().AbsPath("/readyz").DoRaw(ctx)
		return last == nil && string(body) == "ok", nil
	})
	if err != nil {
		return fmt.Errorf("apiserver not ready: %w (last error: %v)", err, last)
	}
	return nil
}

func restConfigForRaw(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &metav1.SchemeGroupVersion
	c.APIPath = "/"
	c.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	return c
}
