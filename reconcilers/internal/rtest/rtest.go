// Package rtest is the reconcilers' end-to-end test suite support: one real
// control plane, a real controller-runtime manager running the reconcilers
// (restarted by the tests that need it), and the objects and checks the
// suites share. Only tests import it.
package rtest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/internal/testmgr"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers"
)

const (
	// NodeListPage is the nodes per LIST of every manager the suites start:
	// every rebuild reads the nodes over several pages.
	NodeListPage = 2
)

// Suite is one control plane and the manager running the reconcilers.
type Suite struct {
	Env *envtest.Environment
	K8s client.Client
	Ctx context.Context

	mu      sync.Mutex
	running *testmgr.Running
	ns      int
}

// Main runs the package's tests. Without -short it first starts the
// control plane and a manager with the default configuration, hands the
// suite to started, and stops both after the tests; under -short it starts
// nothing, the pure tests run and every test that needs the apiserver skips
// (Require). name names the package in a start-up failure.
func Main(m *testing.M, name string, started func(*Suite)) int {
	flag.Parse()
	if testing.Short() {
		return m.Run()
	}
	if os.Getenv("UDNKIT_TEST_LOG") != "" {
		log.SetLogger(zap.New(zap.UseDevMode(true)))
	} else {
		log.SetLogger(zap.New(zap.WriteTo(discard{})))
	}
	env, err := envtest.Start(envtest.Options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 1
	}
	s := &Suite{Env: env, K8s: env.Client, Ctx: context.Background()}
	if err := s.StartManager(reconcilers.DefaultConfig()); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		_ = env.Stop()
		return 1
	}
	running = s
	started(s)
	code := m.Run()
	s.StopManager()
	_ = env.Stop()
	return code
}

// running is the suite Main started (nil under -short).
var running *Suite

// Require marks tb as needing the suite's control plane and manager: under
// -short it skips tb (testenv.Real). It returns the suite Main started.
func Require(tb testing.TB) *Suite {
	tb.Helper()
	testenv.Real(tb, "kube-apiserver")
	if running == nil {
		tb.Fatal("rtest.Require: the package's TestMain does not run rtest.Main")
	}
	return running
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// StartManager starts a manager running the reconcilers with cfg (its
// NodeListPage set to NodeListPage when zero).
func (s *Suite) StartManager(cfg reconcilers.Config) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	mgr, err := testmgr.New(s.Env.Config, s.Env.Scheme)
	if err != nil {
		return err
	}
	if cfg.NodeListPage == 0 {
		cfg.NodeListPage = NodeListPage
	}
	if err := reconcilers.SetupWithManager(mgr, cfg); err != nil {
		return err
	}
	s.running = testmgr.Run(s.Ctx, mgr)
	return nil
}

// StopManager stops the running manager, if any.
func (s *Suite) StopManager() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running != nil {
		_ = s.running.Stop()
		s.running = nil
	}
}

// RestartManager stops the running manager and starts one with cfg.
func (s *Suite) RestartManager(t *testing.T, cfg reconcilers.Config) {
	t.Helper()
	s.StopManager()
	if err := s.StartManager(cfg); err != nil {
		t.Fatal(err)
	}
}

// NewNamespace creates a namespace with a unique name and labels.
func (s *Suite) NewNamespace(t testing.TB, prefix string, labels map[string]string) string {
	t.Helper()
	s.mu.Lock()
	s.ns++
	name := fmt.Sprintf("%s-%d", prefix, s.ns)
	s.mu.Unlock()
	if err := s.K8s.Create(s.Ctx, testobj.MakeNamespace(name).Labels(labels).Obj()); err != nil {
		t.Fatal(err)
	}
	return name
}

// Condition returns the condition typ of a UDN or CUDN, as read now.
func (s *Suite) Condition(g Gomega, obj client.Object, typ string) *metav1.Condition {
	g.Expect(s.K8s.Get(s.Ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	var conds []metav1.Condition
	switch o := obj.(type) {
	case *udnv1.UserDefinedNetwork:
		conds = o.Status.Conditions
	case *udnv1.ClusterUserDefinedNetwork:
		conds = o.Status.Conditions
	}
	c := meta.FindStatusCondition(conds, typ)
	g.Expect(c).NotTo(BeNil(), "no %s condition yet", typ)
	return c
}

// ExpectCondition waits for obj's NetworkCreated condition to have status
// and reason, and its message every one of msg.
func (s *Suite) ExpectCondition(t *testing.T, obj client.Object, status metav1.ConditionStatus, reason string, msg ...string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		c := s.Condition(g, obj, udnv1.ConditionNetworkCreated)
		g.Expect(c.Status).To(Equal(status), c.Message)
		g.Expect(c.Reason).To(Equal(reason), c.Message)
		for _, m := range msg {
			g.Expect(c.Message).To(ContainSubstring(m))
		}
	}).WithTimeout(testenv.EventuallyTimeout).WithPolling(testenv.PollInterval).Should(Succeed())
}

// ExpectGone waits for obj to be deleted.
func (s *Suite) ExpectGone(t *testing.T, obj client.Object) {
	t.Helper()
	NewWithT(t).Eventually(func() bool {
		return apierrors.IsNotFound(s.K8s.Get(s.Ctx, client.ObjectKeyFromObject(obj), obj))
	}).WithTimeout(testenv.EventuallyTimeout).WithPolling(testenv.PollInterval).Should(BeTrue(), "%s still exists", client.ObjectKeyFromObject(obj))
}

// UpdateObject re-reads obj and applies mutate until the update wins over
// the controllers' concurrent writes.
func UpdateObject[T client.Object](t *testing.T, s *Suite, obj T, mutate func(T)) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		if err := s.K8s.Get(s.Ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate(obj)
		return s.K8s.Update(s.Ctx, obj)
	}).WithTimeout(testenv.EventuallyTimeout).Should(Succeed())
}

// CreateNodes creates plain Node objects, deleted when the test ends.
func (s *Suite) CreateNodes(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		node := testobj.MakeNode(name).Obj()
		if err := s.K8s.Create(s.Ctx, node); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.K8s.Delete(s.Ctx, node) })
	}
}

// NodeAnnotations are the node's annotations as read now.
func (s *Suite) NodeAnnotations(g Gomega, name string) map[string]string {
	var node corev1.Node
	g.Expect(s.K8s.Get(s.Ctx, client.ObjectKey{Name: name}, &node)).To(Succeed())
	return node.Annotations
}

// NodeID is the node's k8s.ovn.org/node-id; it fails g while it has none.
func (s *Suite) NodeID(g Gomega, name string) int {
	v, ok := s.NodeAnnotations(g, name)[ovnk.AnnotationNodeID]
	g.Expect(ok).To(BeTrue(), "node %s has no node ID yet", name)
	id, err := strconv.Atoi(v)
	g.Expect(err).NotTo(HaveOccurred())
	return id
}

// SetNodeAnnotation sets (or, value "", removes) one of the node's
// annotations.
func (s *Suite) SetNodeAnnotation(t *testing.T, name, key, value string) {
	t.Helper()
	UpdateObject(t, s, testobj.MakeNode(name).Obj(), func(node *corev1.Node) {
		if node.Annotations == nil {
			node.Annotations = map[string]string{}
		}
		if value == "" {
			delete(node.Annotations, key)
		} else {
			node.Annotations[key] = value
		}
	})
}

// TunnelIDs is the node's k8s.ovn.org/node-transit-switch-port-tunnel-ids
// (nil when it has none).
func (s *Suite) TunnelIDs(g Gomega, name string) []int {
	ids, err := ovnk.DecodeNodeTunnelIDs(s.annotatedNode(g, name))
	g.Expect(err).NotTo(HaveOccurred())
	return ids
}

// HostSubnets is the node's host subnets of network (nil when it has none).
func (s *Suite) HostSubnets(g Gomega, node, network string) []string {
	subnets, err := ovnk.DecodeNodeSubnets(s.annotatedNode(g, node))
	g.Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, p := range subnets[network] {
		out = append(out, p.String())
	}
	return out
}

// annotatedNode is the node name with only its annotations, for ovnk's
// decoders.
func (s *Suite) annotatedNode(g Gomega, name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: s.NodeAnnotations(g, name)}}
}

// HostSubnetCondition is the UDN's HostSubnetsAllocated condition.
func (s *Suite) HostSubnetCondition(g Gomega, udn *udnv1.UserDefinedNetwork) *metav1.Condition {
	return s.Condition(g, udn, udnv1.ConditionHostSubnetsAllocated)
}
