package reconcilers_test

import (
	"fmt"
	"strconv"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers"
)

func createPrimaryL2(t *testing.T, prefix string, n int) []*udnv1.UserDefinedNetwork {
	t.Helper()
	g := NewWithT(t)
	var out []*udnv1.UserDefinedNetwork
	for i := range n {
		ns := newNamespace(t, prefix, nil)
		u := makeUDN(ns, "net", l2Spec(udnv1.NetworkRolePrimary, udnv1.CIDR(fmt.Sprintf("10.%d.0.0/16", 10+i))))
		g.Expect(k8s.Create(ctx, u)).To(Succeed())
		out = append(out, u)
	}
	return out
}

func TestRestartKeepsAllocations(t *testing.T) {
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
	cudn := makeCUDN("restart-l2", sel, udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2,
		Layer2: layer2(udnv1.NetworkRolePrimary, "10.77.0.0/16")})
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
	g := NewWithT(t)
	startSecondManager(t)

	var wg sync.WaitGroup
	var udns []*udnv1.UserDefinedNetwork
	for i := range 16 {
		ns := newNamespace(t, "race", nil)
		udns = append(udns, makeUDN(ns, "net", l2Spec(udnv1.NetworkRolePrimary, udnv1.CIDR(fmt.Sprintf("10.%d.0.0/16", 30+i)))))
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
