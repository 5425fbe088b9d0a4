package reconcilers_test

import (
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers"
	"github.com/udnkit/udnkit/reconcilers/internal/rtest"
)

func createPrimaryL2(t *testing.T, prefix string, n int) []*udnv1.UserDefinedNetwork {
	t.Helper()
	g := NewWithT(t)
	var out []*udnv1.UserDefinedNetwork
	for i := range n {
		ns := newNamespace(t, prefix, nil)
		u := testobj.MakeUDN(ns, "net").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, udnv1.CIDR(fmt.Sprintf("10.%d.0.0/16", 10+i)))).Obj()
		g.Expect(k8s.Create(ctx, u)).To(Succeed())
		out = append(out, u)
	}
	return out
}

func TestRestartKeepsAllocations(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	before := createPrimaryL2(t, "restart", 3)
	for _, u := range before {
		expectCondition(t, u, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	}
	ids := map[string]string{}
	for _, u := range before {
		ids[u.Namespace] = u.Annotations[ovnk.AnnotationNetworkID] + " " + u.Annotations[ovnk.AnnotationTunnelKeys]
	}

	// A manager that runs only the CUDN controller never reconciles the
	// UDNs above, so only the start-up rebuild from annotations keeps it
	// from handing out their IDs and keys again.
	cfg := reconcilers.DefaultConfig()
	cfg.Controllers = []string{reconcilers.ControllerCUDN}
	restartManager(t, cfg)
	sel := map[string]string{"restart": "cudn"}
	newNamespace(t, "restart-cudn", sel)
	cudn := testobj.MakeCUDN("restart-l2").SelectLabels(sel).Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.77.0.0/16")).Obj()
	g.Expect(k8s.Create(ctx, cudn)).To(Succeed())
	expectCondition(t, cudn, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	expectUniqueAllocations(t)

	restartManager(t, reconcilers.DefaultConfig())
	after := createPrimaryL2(t, "restart", 3)
	for _, u := range after {
		expectCondition(t, u, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	}
	for _, u := range before {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(u), u)).To(Succeed())
		g.Expect(u.Annotations[ovnk.AnnotationNetworkID] + " " + u.Annotations[ovnk.AnnotationTunnelKeys]).To(Equal(ids[u.Namespace]))
		g.Expect(getNAD(g, u.Namespace, "net").Annotations[ovnk.AnnotationNetworkID]).To(Equal(u.Annotations[ovnk.AnnotationNetworkID]))
	}
	expectUniqueAllocations(t)
	g.Expect(k8s.Delete(ctx, cudn)).To(Succeed())
	expectGone(t, cudn)
}

func TestTunnelKeyExhaustion(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	// One allocatable key: the first Primary Layer2 network takes it for its
	// transit router (its switch keeps the legacy key derived from its network
	// ID, OKEP-5094 option 3); the second cannot get one.
	cfg := reconcilers.DefaultConfig()
	cfg.TunnelKeyFirst, cfg.TunnelKeyLast = ovnk.LastInterconnectKey, ovnk.LastInterconnectKey
	restartManager(t, cfg)
	defer restartManager(t, reconcilers.DefaultConfig())

	first := createPrimaryL2(t, "keys", 1)[0]
	expectCondition(t, first, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	id, err := strconv.Atoi(first.Annotations[ovnk.AnnotationNetworkID])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first.Annotations[ovnk.AnnotationTunnelKeys]).To(Equal(fmt.Sprintf("[%d,%d]", ovnk.BaseTransitSwitchTunnelKey+id, ovnk.LastInterconnectKey)))

	second := createPrimaryL2(t, "keys", 1)[0]
	expectCondition(t, second, metav1.ConditionFalse, udnv1.ReasonSyncError,
		fmt.Sprintf("failed to allocate network IDs: all 1 tunnel keys in [%d, %d] are in use: exhausted", ovnk.LastInterconnectKey, ovnk.LastInterconnectKey))
	// Nothing partial: no IDs on the CR, no NAD.
	g.Expect(second.Annotations).NotTo(HaveKey(ovnk.AnnotationNetworkID))
	g.Expect(second.Annotations).NotTo(HaveKey(ovnk.AnnotationTunnelKeys))
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: second.Namespace, Name: "net"}, newNAD())).NotTo(Succeed())
	// A Warning event says so too.
	g.Eventually(func(g Gomega) {
		var evs eventsv1.EventList
		g.Expect(k8s.List(ctx, &evs, client.InNamespace(second.Namespace))).To(Succeed())
		var reasons []string
		for _, e := range evs.Items {
			if e.Regarding.UID == second.UID && e.Type == "Warning" {
				reasons = append(reasons, e.Reason)
			}
		}
		g.Expect(reasons).To(ContainElement("NetworkIDAllocationFailed"))
	}).WithTimeout(timeout).Should(Succeed())

	// Back on the full range, the second network gets its keys.
	restartManager(t, reconcilers.DefaultConfig())
	expectCondition(t, second, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	expectUniqueAllocations(t)
}

// TestTwoManagersRacing runs a second manager beside the suite's, as happens
// without leader election or while an old leader winds down: each has its
// own allocators, so both hand out the same next IDs to different networks.
// Writes are checked against the apiserver before any NAD advertises them,
// and the writer that sees the clash yields.
func TestTwoManagersRacing(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	startSecondManager(t)

	var wg sync.WaitGroup
	var udns []*udnv1.UserDefinedNetwork
	for i := range 16 {
		ns := newNamespace(t, "race", nil)
		udns = append(udns, testobj.MakeUDN(ns, "net").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, udnv1.CIDR(fmt.Sprintf("10.%d.0.0/16", 30+i)))).Obj())
	}
	for _, u := range udns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.Expect(k8s.Create(ctx, u)).To(Succeed())
		}()
	}
	wg.Wait()
	for _, u := range udns {
		expectCondition(t, u, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	}
	expectUniqueAllocations(t)
}

// reconcileCounts sums controller_runtime_reconcile_total per controller and
// the reconciles running now, from the process's metrics registry (every
// manager the suite starts registers there).
func reconcileCounts(g Gomega) (total map[string]float64, running float64) {
	mfs, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	total = map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var controller string
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" {
					controller = l.GetValue()
				}
			}
			switch mf.GetName() {
			case "controller_runtime_reconcile_total":
				total[controller] += m.GetCounter().GetValue()
			case "controller_runtime_active_workers":
				running += m.GetGauge().GetValue()
			}
		}
	}
	return total, running
}

// TestRestartWritesNothing: a manager restarted over networks, NADs and nodes
// it left converged writes none of them; each write is one more request per
// object on the apiserver (at scale, a restart re-applied every Layer3
// network's status). A write shows as a changed resourceVersion.
func TestRestartWritesNothing(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	createNodes(t, "still-a", "still-b")
	l2 := createPrimaryL2(t, "still", 1)[0]
	l3 := testobj.MakeUDN(newNamespace(t, "still-l3", nil), "net").Spec(testobj.Layer3(udnv1.NetworkRolePrimary, "10.140.0.0/16")).Obj()
	g.Expect(k8s.Create(ctx, l3)).To(Succeed())
	sel := map[string]string{"still": "cudn"}
	cudnNS := []string{newNamespace(t, "still-cudn", sel), newNamespace(t, "still-cudn", sel)}
	cudn := testobj.MakeCUDN("still-l3").SelectLabels(sel).Spec(udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer3,
		Layer3: &udnv1.Layer3Config{Role: udnv1.NetworkRoleSecondary, Subnets: []udnv1.Layer3Subnet{{CIDR: "10.141.0.0/16", HostSubnet: 24}}}}).Obj()
	g.Expect(k8s.Create(ctx, cudn)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, cudn) })
	for _, o := range []client.Object{l2, l3, cudn} {
		expectCondition(t, o, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	}
	l3Name, cudnName := ovnk.UDNNetworkName(l3.Namespace, l3.Name), ovnk.CUDNNetworkName(cudn.Name)
	g.Eventually(func(g Gomega) {
		g.Expect(hostSubnetCondition(g, l3).Status).To(Equal(metav1.ConditionTrue))
		for _, n := range []string{"still-a", "still-b"} {
			nodeID(g, n)
			g.Expect(hostSubnets(g, n, l3Name)).To(HaveLen(1))
			g.Expect(hostSubnets(g, n, cudnName)).To(HaveLen(1))
		}
	}).WithTimeout(timeout).Should(Succeed())

	objects := []client.Object{l2, l3, cudn,
		testobj.MakeNode("still-a").Obj(), testobj.MakeNode("still-b").Obj(),
		newNADNamed(l2.Namespace, l2.Name), newNADNamed(l3.Namespace, l3.Name),
		newNADNamed(cudnNS[0], cudn.Name), newNADNamed(cudnNS[1], cudn.Name)}
	versions := func(g Gomega) map[string]string {
		out := map[string]string{}
		for _, o := range objects {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(o), o)).To(Succeed())
			out[fmt.Sprintf("%T %s", o, client.ObjectKeyFromObject(o))] = o.GetResourceVersion()
		}
		return out
	}
	// Converged: the manager has nothing left to do.
	g.Eventually(func(g Gomega) {
		_, running := reconcileCounts(g)
		g.Expect(running).To(BeZero())
	}).WithTimeout(timeout).Should(Succeed())
	stopManager()
	before := versions(g)
	counts, _ := reconcileCounts(g)
	var networks udnv1.UserDefinedNetworkList
	g.Expect(k8s.List(ctx, &networks)).To(Succeed())
	var cnetworks udnv1.ClusterUserDefinedNetworkList
	g.Expect(k8s.List(ctx, &cnetworks)).To(Succeed())
	var nodes corev1.NodeList
	g.Expect(k8s.List(ctx, &nodes)).To(Succeed())

	if err := startManager(reconcilers.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	// The restarted manager has reconciled every network and node once (its
	// informers' first lists enqueue each) and runs nothing.
	g.Eventually(func(g Gomega) {
		now, running := reconcileCounts(g)
		g.Expect(now["userdefinednetwork"] - counts["userdefinednetwork"]).To(BeNumerically(">=", len(networks.Items)))
		g.Expect(now["clusteruserdefinednetwork"] - counts["clusteruserdefinednetwork"]).To(BeNumerically(">=", len(cnetworks.Items)))
		g.Expect(now["node"] - counts["node"]).To(BeNumerically(">=", len(nodes.Items)))
		g.Expect(running).To(BeZero())
	}).WithTimeout(timeout).Should(Succeed())
	after := versions(g)
	var written []string
	for k, v := range before {
		if after[k] != v {
			written = append(written, k)
		}
	}
	sort.Strings(written)
	g.Expect(written).To(BeEmpty(), "the restarted manager wrote these")
}

func newNADNamed(namespace, name string) *nadv1.NetworkAttachmentDefinition {
	return &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
}
