package webhooks_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ipamclaimsv1alpha1 "github.com/k8snetworkplumbingwg/ipamclaims/pkg/crd/ipamclaims/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/envtest/manager"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/internal/testmgr"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/webhooks"
	"github.com/udnkit/udnkit/webhooks/network"
)

// One control plane serves every envtest test of this package: udnkit's
// webhook configurations and ValidatingAdmissionPolicies installed, and a
// controller-runtime manager serving webhooks.SetupWithManager's webhooks over
// TLS at the address the configurations point to (and writing testConfig()
// as the policies' params). It starts on first use, so the unit tests and
// the fuzz target run without it.
var shared struct {
	once sync.Once
	env  *envtest.Environment
	mgr  ctrl.Manager
	run  *testmgr.Running
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.env != nil {
		if shared.run != nil {
			_ = shared.run.Stop()
		}
		if err := shared.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
	}
	os.Exit(code)
}

// testLimits are the admission limits of the suite's manager: none per
// namespace (BenchmarkCreateUDN fills one namespace), the cluster as many
// networks as it has network IDs. The limit tests build validators of their
// own on the manager's cache.
var testLimits = network.Limits{PerNamespace: 0, Cluster: ovnk.MaxNetworkID}

func testConfig() ovnk.ClusterConfig {
	cfg := ovnk.DefaultClusterConfig()
	cfg.PreconfiguredUDNAddresses = true
	return cfg
}

func startEnv(tb testing.TB) *envtest.Environment {
	tb.Helper()
	testenv.Real(tb, "kube-apiserver")
	shared.once.Do(func() {
		ctrl.SetLogger(logr.Discard())
		env, err := envtest.Start(envtest.Options{Webhooks: true})
		if err != nil {
			shared.err = err
			return
		}
		shared.env = env
		mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
			Scheme:                 env.Scheme,
			Metrics:                metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress: "0",
			WebhookServer:          webhook.NewServer(serverOptions(env.Webhook.WebhookServerOptions())),
		})
		if err == nil {
			err = webhooks.SetupWithManager(mgr, testConfig(), envtest.ParamsNamespace, testLimits)
		}
		shared.mgr = mgr
		if err != nil {
			shared.err = err
			return
		}
		shared.run = testmgr.Run(context.Background(), mgr)
		if shared.err = manager.WaitForWebhooks(context.Background(), env); shared.err == nil {
			shared.err = waitForPolicies(env)
		}
	})
	if shared.err != nil {
		tb.Fatal(shared.err)
	}
	return shared.env
}

// serverOptions are o with the TLS options the manager's webhook server
// has (app.Options), so calls cost what they cost in a cluster.
func serverOptions(o webhook.Options) webhook.Options {
	o.TLSOpts = append(o.TLSOpts, webhooks.ServeHTTP1)
	return o
}

// warnings collects the apiserver's warning headers for one client.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.list
	w.list = nil
	return out
}

// clientWithWarnings is an admin client whose warnings land in the result.
func clientWithWarnings(t testing.TB, env *envtest.Environment) (client.Client, *warnings) {
	t.Helper()
	w := &warnings{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = w
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return synced(client.WithFieldValidation(c, metav1.FieldValidationStrict)), w
}

// syncedClient returns from a write of a kind the webhooks read (namespaces,
// UDNs, CUDNs, IPAMClaims) once the webhooks' informer cache reflects it, so
// a test's next request is judged on what the test just wrote. (The window
// in which the cache lags is the reconcilers' to settle; their suite races
// two creates on purpose.)
type syncedClient struct {
	client.Client
}

func synced(c client.Client) client.Client { return syncedClient{c} }

func (c syncedClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := c.Client.Create(ctx, obj, opts...); err != nil {
		return err
	}
	if o := (&client.CreateOptions{}).ApplyOptions(opts); len(o.DryRun) > 0 {
		return nil // nothing was written
	}
	return waitCached(ctx, obj, false)
}

func (c syncedClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if err := c.Client.Update(ctx, obj, opts...); err != nil {
		return err
	}
	return waitCached(ctx, obj, false)
}

func (c syncedClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if err := c.Client.Delete(ctx, obj, opts...); err != nil {
		return err
	}
	return waitCached(ctx, obj, true)
}

// waitCached polls the webhooks' cache until it holds obj at obj's
// resourceVersion or later (gone or being deleted, when deleted).
func waitCached(ctx context.Context, obj client.Object, deleted bool) error {
	switch obj.(type) {
	case *corev1.Namespace, *udnv1.UserDefinedNetwork, *udnv1.ClusterUserDefinedNetwork, *ipamclaimsv1alpha1.IPAMClaim:
	default:
		return nil
	}
	want, _ := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	// Every create of the suite waits here: poll every millisecond, not
	// testenv.PollInterval.
	deadline := time.Now().Add(testenv.EventuallyTimeout)
	for {
		cur := obj.DeepCopyObject().(client.Object)
		err := shared.mgr.GetCache().Get(ctx, client.ObjectKeyFromObject(obj), cur)
		switch {
		case deleted && (apierrors.IsNotFound(err) || err == nil && cur.GetDeletionTimestamp() != nil):
			return nil
		case !deleted && err == nil:
			if have, _ := strconv.ParseUint(cur.GetResourceVersion(), 10, 64); have >= want {
				return nil
			}
		case err != nil && !apierrors.IsNotFound(err):
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the webhooks' cache did not catch up with %T %s in %v", obj, client.ObjectKeyFromObject(obj), testenv.EventuallyTimeout)
		}
		time.Sleep(time.Millisecond)
	}
}

var ctx = context.Background()

func namespace(t testing.TB, c client.Client, name string, primaryLabel bool, labels map[string]string) {
	t.Helper()
	ns := testobj.MakeNamespace(name).Labels(labels)
	if primaryLabel {
		ns.Primary()
	}
	if err := c.Create(ctx, ns.Obj()); err != nil {
		t.Fatal(err)
	}
}

// expectInvalid checks that err is a 422 whose message holds every want.
func expectInvalid(t testing.TB, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted, want rejected with %q", want)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("err = %v (%T), want 422 Invalid", err, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err.Error(), w)
		}
	}
}

// expectAbsent checks that a rejected create left nothing behind.
func expectAbsent(t testing.TB, c client.Client, obj client.Object) {
	t.Helper()
	err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
	if !apierrors.IsNotFound(err) {
		t.Errorf("%s %s: get after a rejected create: %v, want NotFound", obj.GetObjectKind().GroupVersionKind().Kind, client.ObjectKeyFromObject(obj), err)
	}
}

// review posts an AdmissionReview straight to the webhook server over TLS
// (for rules the apiserver's CEL refuses before any webhook is called).
func review(t testing.TB, env *envtest.Environment, path string, op admissionv1.Operation, obj, old runtime.Object) *admissionv1.AdmissionResponse {
	t.Helper()
	raw := func(o runtime.Object) runtime.RawExtension {
		if o == nil {
			return runtime.RawExtension{}
		}
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		return runtime.RawExtension{Raw: b}
	}
	gvks, _, err := env.Scheme.ObjectKinds(obj)
	if err != nil {
		t.Fatal(err)
	}
	gvk := gvks[0]
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "test", Operation: op, Object: raw(obj), OldObject: raw(old),
			Kind:     metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
			Resource: metav1.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: strings.ToLower(gvk.Kind) + "s"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // local test server
	resp, err := hc.Post(fmt.Sprintf("https://%s:%d%s", env.Webhook.Host, env.Webhook.Port, path), "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out.Response
}

// waitForPolicies returns once the apiserver enforces every UDN and CUDN
// policy with testConfig()'s params (a policy is enforced 0.1-1 s after it is
// created, a param seen a moment after it is written): a UDN in the cluster
// subnet is refused, one with reservedSubnets admitted without a warning
// (PreconfiguredUDNAddresses), and names that collide with an existing UDN
// and CUDN are refused.
func waitForPolicies(env *envtest.Environment) error {
	w := &warnings{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = w
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		return err
	}
	const ns = "policy-probe"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{ovnk.LabelPrimaryUserDefinedNetwork: ""}}}); err != nil {
		return err
	}
	reserved := testobj.Layer2(udnv1.NetworkRolePrimary, "10.100.0.0/16")
	reserved.Layer2.ReservedSubnets = []udnv1.NetworkCIDR{"10.100.0.0/24"}
	peer := testobj.MakeUDN(ns, "probe-a").Spec(reserved).Obj()
	peerCUDN := testobj.MakeCUDN("probe-a").SelectLabels(map[string]string{"none": "none"}).Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.101.0.0/16")).Obj()
	return testenv.Poll("the policies and webhooks", func() error {
		if err := c.Create(ctx, testobj.MakeUDN(ns, "overlap").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.244.0.0/24")).Obj(), client.DryRunAll); err == nil {
			return errors.New("udnkit-network-config not enforced yet")
		}
		w.take()
		// AlreadyExists: an earlier try created it below, after this check
		// had passed.
		if err := c.Create(ctx, peer, client.DryRunAll); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		if got := w.take(); len(got) > 0 {
			return fmt.Errorf("the policies do not see testConfig() yet: %q", got)
		}
		for _, obj := range []client.Object{peer, peerCUDN} {
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object)); apierrors.IsNotFound(err) {
				err = c.Create(ctx, obj.DeepCopyObject().(client.Object))
			}
			if err != nil {
				return err
			}
		}
		if err := c.Create(ctx, testobj.MakeUDN(ns, "probe.a").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.103.0.0/16")).Obj(), client.DryRunAll); err == nil {
			return errors.New("the UDN webhook's name check is not served yet")
		}
		if err := c.Create(ctx, testobj.MakeCUDN("probe.a").SelectLabels(map[string]string{"none": "none"}).Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.102.0.0/16")).Obj(), client.DryRunAll); err == nil {
			return errors.New("the CUDN webhook's name check is not served yet")
		}
		return nil
	})
}

// createRefused creates obj once a dry run of it is refused (for up to 10 s)
// and returns the create's error: the policies read other networks from the
// apiserver's informer, a moment behind what a test just wrote.
func createRefused(t testing.TB, c client.Client, obj client.Object) error {
	t.Helper()
	_ = testenv.Poll("a dry run refused", func() error {
		if c.Create(ctx, obj.DeepCopyObject().(client.Object), client.DryRunAll) == nil {
			return errors.New("admitted")
		}
		return nil
	})
	return c.Create(ctx, obj)
}
