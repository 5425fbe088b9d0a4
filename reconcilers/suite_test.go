package reconcilers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers"
	"github.com/udnkit/udnkit/reconcilers/internal/rtest"
)

// The suite runs one real control plane and a real controller-runtime
// manager with the reconcilers (rtest); tests that restart the manager swap
// it.

var (
	suite *rtest.Suite
	env   *envtest.Environment
	k8s   client.Client
	ctx   = context.Background()
)

// timeout and interval bound the suites' waits (testenv's one timeout set).
const (
	timeout  = testenv.EventuallyTimeout
	interval = testenv.PollInterval
)

func TestMain(m *testing.M) {
	os.Exit(rtest.Main(m, "reconcilers", func(s *rtest.Suite) { suite, env, k8s = s, s.Env, s.K8s }))
}

func startManager(cfg reconcilers.Config) error           { return suite.StartManager(cfg) }
func stopManager()                                        { suite.StopManager() }
func restartManager(t *testing.T, cfg reconcilers.Config) { t.Helper(); suite.RestartManager(t, cfg) }

func newNamespace(t *testing.T, prefix string, labels map[string]string) string {
	t.Helper()
	return suite.NewNamespace(t, prefix, labels)
}

func createNodes(t *testing.T, names ...string) { t.Helper(); suite.CreateNodes(t, names...) }
func nodeID(g Gomega, name string) int          { return suite.NodeID(g, name) }
func tunnelIDs(g Gomega, name string) []int     { return suite.TunnelIDs(g, name) }
func hostSubnets(g Gomega, node, network string) []string {
	return suite.HostSubnets(g, node, network)
}
func hostSubnetCondition(g Gomega, udn *udnv1.UserDefinedNetwork) *metav1.Condition {
	return suite.HostSubnetCondition(g, udn)
}
func setNodeAnnotation(t *testing.T, name, key, value string) {
	t.Helper()
	suite.SetNodeAnnotation(t, name, key, value)
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
	return suite.Condition(g, obj, udnv1.ConditionNetworkCreated)
}

func expectCondition(t *testing.T, obj client.Object, status metav1.ConditionStatus, reason string, msg ...string) {
	t.Helper()
	suite.ExpectCondition(t, obj, status, reason, msg...)
}

func expectGone(t *testing.T, obj client.Object) { t.Helper(); suite.ExpectGone(t, obj) }

// usePod creates a pod on node whose k8s.ovn.org/pod-networks annotation has
// an entry for the NAD nadKey ("ns/name").
func usePod(t *testing.T, ns, name, nadKey string) *corev1.Pod {
	t.Helper()
	pod := testobj.MakePod(ns, name).Node("node-x").Annotation(ovnk.AnnotationPodNetworks,
		fmt.Sprintf(`{%q:{"ip_addresses":["10.100.0.5/16"],"mac_address":"0a:58:0a:64:00:05","role":"primary"}}`, nadKey)).Obj()
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
	rtest.UpdateObject(t, suite, obj, mutate)
}
