package addresses_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"testing"
	"time"

	ipamclaimsv1alpha1 "github.com/k8snetworkplumbingwg/ipamclaims/pkg/crd/ipamclaims/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/internal/testmgr"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
	"github.com/udnkit/udnkit/reconcilers/addresses"
)

var (
	env       *envtest.Environment
	ctx       = context.Background()
	k8s       client.Client
	running   *testmgr.Running
	nodeNames = []string{"node-a", "node-b"}
)

func TestAddresses(t *testing.T) {
	testenv.Real(t, "kube-apiserver")
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(testenv.EventuallyTimeout)
	SetDefaultEventuallyPollingInterval(testenv.PollInterval)
	RunSpecs(t, "addresses: pod addresses on Primary Layer2 networks")
}

var _ = BeforeSuite(func() {
	var err error
	env, err = envtest.Start(envtest.Options{})
	Expect(err).NotTo(HaveOccurred())
	// 250 pods in one spec: lift client-go's default 5 QPS.
	fast := rest.CopyConfig(env.Config)
	fast.QPS, fast.Burst = 1000, 2000
	k8s, err = client.New(fast, client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())
	for _, n := range nodeNames {
		Expect(k8s.Create(ctx, testobj.MakeNode(n).Obj())).To(Succeed())
	}
	startManager(featureOn())
})

var _ = AfterSuite(func() {
	if running != nil {
		stopManager()
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

func featureOn() ovnk.ClusterConfig {
	cfg := ovnk.DefaultClusterConfig()
	cfg.PreconfiguredUDNAddresses = true
	cfg.ServiceCIDRs = []netip.Prefix{netip.MustParsePrefix("10.96.0.0/16"), netip.MustParsePrefix("fd00:10:96::/112")}
	return cfg
}

// startManager runs a fresh manager (a fresh allocator) with the address controllers.
func startManager(cfg ovnk.ClusterConfig) {
	fast := rest.CopyConfig(env.Config)
	fast.QPS, fast.Burst = 1000, 2000
	mgr, err := testmgr.New(fast, env.Scheme)
	Expect(err).NotTo(HaveOccurred())
	err = addresses.SetupWithManager(mgr, cfg)
	Expect(err).NotTo(HaveOccurred())
	running = testmgr.Run(ctx, mgr)
}

// stopManager stops the manager startManager started; it must have run
// without error.
func stopManager() {
	Expect(running.Stop()).To(Succeed())
	running = nil
}

// Object builders.

func namespace(name string, labels map[string]string) {
	Expect(k8s.Create(ctx, testobj.MakeNamespace(name).Labels(labels).Obj())).To(Succeed())
}

func primaryLayer2(subnets ...string) *udnv1.Layer2Config {
	l2 := &udnv1.Layer2Config{Role: udnv1.NetworkRolePrimary}
	for _, s := range subnets {
		l2.Subnets = append(l2.Subnets, udnv1.CIDR(s))
	}
	return l2
}

func createUDN(ns, name string, l2 *udnv1.Layer2Config) {
	Expect(k8s.Create(ctx, testobj.MakeNamespace(ns).Primary().Obj())).To(Succeed())
	Expect(k8s.Create(ctx, testobj.MakeUDN(ns, name).Spec(udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2, Layer2: l2}).Obj())).To(Succeed())
}

type podOpt func(*testobj.PodWrapper)

func onNode(n string) podOpt { return func(p *testobj.PodWrapper) { p.Node(n) } }

func annotated(k, v string) podOpt { return func(p *testobj.PodWrapper) { p.Annotation(k, v) } }

func labelled(k, v string) podOpt {
	return func(p *testobj.PodWrapper) { p.Labels(map[string]string{k: v}) }
}

// requesting sets the default-network NetworkSelectionElement.
func requesting(ips []string, mac, claim string) podOpt {
	nse := map[string]any{"name": ovnk.DefaultNetworkName, "namespace": ovnk.DefaultNetworkNamespace}
	if ips != nil {
		nse["ips"] = ips
	}
	if mac != "" {
		nse["mac"] = mac
	}
	if claim != "" {
		nse["ipam-claim-reference"] = claim
	}
	data, _ := json.Marshal([]any{nse}) // the list form, which upstream's parser reads too
	return annotated(ovnk.AnnotationDefaultNetwork, string(data))
}

func createPod(ns, name string, opts ...podOpt) *corev1.Pod {
	w := testobj.MakePod(ns, name).Node(nodeNames[0])
	for _, o := range opts {
		o(w)
	}
	p := w.Obj()
	Expect(k8s.Create(ctx, p)).To(Succeed())
	return p
}

func deletePod(ns, name string) {
	p := testobj.MakePod(ns, name).Obj()
	Expect(k8s.Delete(ctx, p, client.GracePeriodSeconds(0))).To(Succeed())
	Eventually(func() bool { return apiNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(p), p)) }).Should(BeTrue())
}

func apiNotFound(err error) bool { return client.IgnoreNotFound(err) == nil && err != nil }

// podNetwork waits for the pod's k8s.ovn.org/pod-networks entry under key.
func podNetwork(ns, name, key string) podannotation.PodNetwork {
	var pn podannotation.PodNetwork
	Eventually(func(g Gomega) {
		var p corev1.Pod
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p)).To(Succeed())
		g.Expect(p.Annotations).To(HaveKey(ovnk.AnnotationPodNetworks))
		entry, err := podannotation.DecodePodNetwork(p.Annotations, key)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(entry).NotTo(BeNil(), "no entry for %s", key)
		pn = *entry
	}).Should(Succeed(), "pod %s/%s never got its %s annotation", ns, name, ovnk.AnnotationPodNetworks)
	return pn
}

// warning waits for a Warning event on the pod with the reason and returns its note.
func warning(ns, name, reason string) string {
	var note string
	Eventually(func(g Gomega) {
		var list eventsv1.EventList
		g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Type == corev1.EventTypeWarning && e.Reason == reason {
				note = e.Note
				return
			}
		}
		// Not "any event with the reason in the namespace": another pod's
		// would end the wait with an empty note.
		g.Expect(false).To(BeTrue(), "no %s event on %s/%s", reason, ns, name)
	}).Should(Succeed())
	return note
}

// expectNoAnnotation checks the pod has no pod-networks annotation, after
// the warning event proved the reconciler handled it.
func expectNoAnnotation(ns, name string) {
	Consistently(func(g Gomega) {
		var p corev1.Pod
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p)).To(Succeed())
		g.Expect(p.Annotations).NotTo(HaveKey(ovnk.AnnotationPodNetworks))
	}, time.Second, 200*time.Millisecond).Should(Succeed())
}

func createClaim(ns, name, network string) {
	Expect(k8s.Create(ctx, &ipamclaimsv1alpha1.IPAMClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       ipamclaimsv1alpha1.IPAMClaimSpec{Network: network, Interface: "ovn-udn1"},
	})).To(Succeed())
}

// claimWith waits for the claim's IPsAllocated condition to have the status and reason.
func claimWith(ns, name string, status metav1.ConditionStatus, reason string) (ipamclaimsv1alpha1.IPAMClaim, metav1.Condition) {
	var c ipamclaimsv1alpha1.IPAMClaim
	var cond metav1.Condition
	Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &c)).To(Succeed())
		g.Expect(c.Status.Conditions).To(ContainElement(And(
			HaveField("Type", ovnk.ConditionIPsAllocated), HaveField("Status", status), HaveField("Reason", reason))))
		cond = c.Status.Conditions[0]
	}).Should(Succeed())
	return c, cond
}

func seq(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

func getPod(ns, name string) *corev1.Pod {
	var p corev1.Pod
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p)).To(Succeed())
	return &p
}

func listPods(ns string) []corev1.Pod {
	var pl corev1.PodList
	Expect(k8s.List(ctx, &pl, client.InNamespace(ns))).To(Succeed())
	return pl.Items
}
