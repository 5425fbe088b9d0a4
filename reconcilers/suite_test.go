package reconcilers_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers"
)

// The suite runs one real control plane and a real controller-runtime
// manager with the reconcilers; tests that restart the manager swap it.

var (
	env *envtest.Environment
	k8s client.Client
	ctx = context.Background()

	mgrMu   sync.Mutex
	mgrStop func()
)

const (
	// An upper bound, not a timing assertion: under make test every package
	// starts its own apiserver on 2 cores at once.
	timeout  = 90 * time.Second
	interval = 100 * time.Millisecond
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		// Every test of this package runs against the one control plane
		// and manager started here.
		fmt.Println("reconcilers: every test needs kube-apiserver (run without -short)")
		os.Exit(0)
	}
	if os.Getenv("UDNKIT_TEST_LOG") != "" {
		log.SetLogger(zap.New(zap.UseDevMode(true)))
	} else {
		log.SetLogger(zap.New(zap.WriteTo(discard{})))
	}
	var err error
	env, err = envtest.Start(envtest.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	k8s = env.Client
	// Every rebuild in these tests reads the nodes over several pages.
	reconcilers.SetNodePage(2)
	if err := startManager(reconcilers.DefaultConfig()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = env.Stop()
		os.Exit(1)
	}
	code := m.Run()
	stopManager()
	_ = env.Stop()
	os.Exit(code)
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// startManager starts a manager running the reconcilers with cfg.
func startManager(cfg reconcilers.Config) error {
	mgrMu.Lock()
	defer mgrMu.Unlock()
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return err
	}
	// One Setup per controller, as cmd/udnkit/app's components make them:
	// the calls share the allocators New built.
	shared, err := reconcilers.New(mgr, cfg)
	if err != nil {
		return err
	}
	for _, name := range cfg.Controllers {
		if err := shared.Setup(mgr, name); err != nil {
			return err
		}
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	mgrStop = func() {
		cancel()
		<-done
	}
	return nil
}

func stopManager() {
	mgrMu.Lock()
	defer mgrMu.Unlock()
	if mgrStop != nil {
		mgrStop()
		mgrStop = nil
	}
}

// restartManager stops the running manager and starts one with cfg.
func restartManager(t *testing.T, cfg reconcilers.Config) {
	t.Helper()
	stopManager()
	if err := startManager(cfg); err != nil {
		t.Fatal(err)
	}
}

var nsCounter struct {
	sync.Mutex
	n int
}

// newNamespace creates a namespace with a unique name and labels.
func newNamespace(t *testing.T, prefix string, labels map[string]string) string {
	t.Helper()
	nsCounter.Lock()
	nsCounter.n++
	name := fmt.Sprintf("%s-%d", prefix, nsCounter.n)
	nsCounter.Unlock()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := k8s.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	return name
}

func layer2(role udnv1.NetworkRole, subnets ...udnv1.CIDR) *udnv1.Layer2Config {
	return &udnv1.Layer2Config{Role: role, Subnets: subnets}
}

func makeUDN(ns, name string, spec udnv1.UserDefinedNetworkSpec) *udnv1.UserDefinedNetwork {
	return &udnv1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
}

func l2Spec(role udnv1.NetworkRole, subnets ...udnv1.CIDR) udnv1.UserDefinedNetworkSpec {
	return udnv1.UserDefinedNetworkSpec{Topology: udnv1.NetworkTopologyLayer2, Layer2: layer2(role, subnets...)}
}

func l3Spec(subnets ...udnv1.Layer3Subnet) udnv1.UserDefinedNetworkSpec {
	return udnv1.UserDefinedNetworkSpec{Topology: udnv1.NetworkTopologyLayer3, Layer3: &udnv1.Layer3Config{Role: udnv1.NetworkRolePrimary, Subnets: subnets}}
}

// getNAD fetches a NAD; Eventually(getNAD(...)) polls until it exists.
func getNAD(g Gomega, ns, name string) *nadv1.NetworkAttachmentDefinition {
	var nad nadv1.NetworkAttachmentDefinition
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &nad)).To(Succeed())
	return &nad
}

func nadConfig(g Gomega, ns, name string) map[string]any {
	nad := getNAD(g, ns, name)
	var m map[string]any
	g.Expect(json.Unmarshal([]byte(nad.Spec.Config), &m)).To(Succeed())
	return m
}

// condition returns the NetworkCreated condition of a UDN or CUDN.
func condition(g Gomega, obj client.Object) *metav1.Condition {
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	var conds []metav1.Condition
	switch o := obj.(type) {
	case *udnv1.UserDefinedNetwork:
		conds = o.Status.Conditions
	case *udnv1.ClusterUserDefinedNetwork:
		conds = o.Status.Conditions
	}
	c := meta.FindStatusCondition(conds, udnv1.ConditionNetworkCreated)
	g.Expect(c).NotTo(BeNil(), "no NetworkCreated condition yet")
	return c
}

func expectCondition(t *testing.T, obj client.Object, status metav1.ConditionStatus, reason string, msg ...string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		c := condition(g, obj)
		g.Expect(c.Status).To(Equal(status), c.Message)
		g.Expect(c.Reason).To(Equal(reason), c.Message)
		for _, m := range msg {
			g.Expect(c.Message).To(ContainSubstring(m))
		}
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

func expectGone(t *testing.T, obj client.Object) {
	t.Helper()
	NewWithT(t).Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj))
	}).WithTimeout(timeout).WithPolling(interval).Should(BeTrue(), "%s still exists", client.ObjectKeyFromObject(obj))
}

// usePod creates a pod on node whose k8s.ovn.org/pod-networks annotation has
// an entry for the NAD nadKey ("ns/name").
func usePod(t *testing.T, ns, name, nadKey string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{
			ovnk.AnnotationPodNetworks: fmt.Sprintf(`{%q:{"ip_addresses":["10.100.0.5/16"],"mac_address":"0a:58:0a:64:00:05","role":"primary"}}`, nadKey),
		}},
		Spec: corev1.PodSpec{NodeName: "node-x", Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
	}
	if err := k8s.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

func deletePod(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	if err := k8s.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
}

func newNAD() *nadv1.NetworkAttachmentDefinition { return &nadv1.NetworkAttachmentDefinition{} }

// updateObject re-reads obj and applies mutate until the update wins over
// the controllers' concurrent writes.
func updateObject[T client.Object](t *testing.T, obj T, mutate func(T)) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate(obj)
		return k8s.Update(ctx, obj)
	}).WithTimeout(timeout).Should(Succeed())
}
