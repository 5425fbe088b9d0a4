package reconcilers_test

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/reconcilers"
	"github.com/udnkit/udnkit/reconcilers/netids"
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
		ids[u.Namespace] = u.Annotations[udnv1.AnnotationNetworkID] + " " + u.Annotations[udnv1.AnnotationTunnelKeys]
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
		g.Expect(u.Annotations[udnv1.AnnotationNetworkID] + " " + u.Annotations[udnv1.AnnotationTunnelKeys]).To(Equal(ids[u.Namespace]))
		g.Expect(getNAD(g, u.Namespace, "net").Annotations[udnv1.AnnotationNetworkID]).To(Equal(u.Annotations[udnv1.AnnotationNetworkID]))
	}
	expectUniqueAllocations(t)
	g.Expect(k8s.Delete(ctx, cudn)).To(Succeed())
	expectGone(t, cudn)
}

func TestTunnelKeyExhaustion(t *testing.T) {
	g := NewWithT(t)
	// Three keys: the first Primary Layer2 network takes two, the second
	// cannot get its pair.
	cfg := reconcilers.DefaultConfig()
	cfg.TunnelKeyFirst, cfg.TunnelKeyLast = netids.LastInterconnectKey-2, netids.LastInterconnectKey
	restartManager(t, cfg)
	defer restartManager(t, reconcilers.DefaultConfig())

	first := createPrimaryL2(t, "keys", 1)[0]
	expectCondition(t, first, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	g.Expect(first.Annotations[udnv1.AnnotationTunnelKeys]).To(Equal(fmt.Sprintf("[%d,%d]", netids.LastInterconnectKey-2, netids.LastInterconnectKey-1)))

	second := createPrimaryL2(t, "keys", 1)[0]
	expectCondition(t, second, metav1.ConditionFalse, udnv1.ReasonSyncError,
		fmt.Sprintf("failed to allocate network IDs: all 3 tunnel keys in [%d, %d] are in use: exhausted", netids.LastInterconnectKey-2, netids.LastInterconnectKey))
	// Nothing partial: no IDs on the CR, no NAD.
	g.Expect(second.Annotations).NotTo(HaveKey(udnv1.AnnotationNetworkID))
	g.Expect(second.Annotations).NotTo(HaveKey(udnv1.AnnotationTunnelKeys))
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
