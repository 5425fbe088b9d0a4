package reconcilers_test

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers/internal/rtest"
)

func TestUDNCreatesNAD(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	ns := newNamespace(t, "blue", nil)
	udn := testobj.MakeUDN(ns, "blue").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.100.0.0/16", "fd00:100::/64")).Obj()
	udn.Labels = map[string]string{"team": "blue"}
	udn.Spec.Layer2.IPAM = &udnv1.IPAMConfig{Lifecycle: udnv1.IPAMLifecyclePersistent}
	g.Expect(k8s.Create(ctx, udn)).To(Succeed())

	expectCondition(t, udn, metav1.ConditionTrue, udnv1.ReasonNADCreated, "NetworkAttachmentDefinition has been created")
	nad := getNAD(g, ns, "blue")
	// Byte for byte what upstream's renderer writes (a marshalled map: sorted keys).
	g.Expect(nad.Spec.Config).To(Equal(fmt.Sprintf(`{"allowPersistentIPs":true,"cniVersion":"1.1.0",`+
		`"joinSubnet":"100.65.0.0/16,fd99::/64","name":"%[1]s_blue","netAttachDefName":"%[1]s/blue","role":"primary",`+
		`"subnets":"10.100.0.0/16,fd00:100::/64","topology":"layer2","transitSubnet":"100.88.0.0/16,fd97::/64","type":"ovn-k8s-cni-overlay"}`, ns)))
	g.Expect(nad.Annotations).To(HaveKeyWithValue(ovnk.AnnotationNetworkName, ns+"_blue"))
	g.Expect(nad.Labels).To(HaveKeyWithValue(ovnk.LabelUserDefinedNetwork, ""))
	g.Expect(nad.Labels).To(HaveKeyWithValue("team", "blue"))
	g.Expect(nad.Finalizers).To(ContainElement(ovnk.FinalizerUserDefinedNetworkProtection))
	ref := metav1.GetControllerOf(nad)
	g.Expect(ref).NotTo(BeNil())
	g.Expect(ref.Kind).To(Equal("UserDefinedNetwork"))
	g.Expect(ref.UID).To(Equal(udn.UID))

	// The CR carries the finalizer, and the CR and NAD the same network ID
	// and two tunnel keys above the legacy range.
	g.Expect(udn.Finalizers).To(ContainElement(ovnk.FinalizerUserDefinedNetworkProtection))
	id, err := strconv.Atoi(nad.Annotations[ovnk.AnnotationNetworkID])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(id).To(BeNumerically(">=", 1))
	g.Expect(id).To(BeNumerically("<=", ovnk.MaxNetworkID))
	g.Expect(udn.Annotations).To(HaveKeyWithValue(ovnk.AnnotationNetworkID, strconv.Itoa(id)))
	nadIDs, err := ovnk.DecodeNetworkIDs(nad.Annotations)
	g.Expect(err).NotTo(HaveOccurred())
	keys := nadIDs.TunnelKeys
	// OKEP-5094 option 3: the switch keeps the legacy key of its network ID,
	// the transit router's key comes from above the legacy range.
	g.Expect(keys).To(HaveLen(2))
	g.Expect(keys[0]).To(Equal(ovnk.BaseTransitSwitchTunnelKey + id))
	g.Expect(keys[1]).To(BeNumerically(">=", ovnk.FirstAllocatedTunnelKey))
	g.Expect(keys[1]).To(BeNumerically("<=", ovnk.LastInterconnectKey))
	g.Expect(udn.Status.TransitSubnets).To(Equal(udnv1.DualStackCIDRs{"100.88.0.0/16", "fd97::/64"}))
}

func TestUDNTransitSubnetAvoidsOverlap(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	ns := newNamespace(t, "overlap", nil)
	udn := testobj.MakeUDN(ns, "net").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "100.88.0.0/20")).Obj()
	g.Expect(k8s.Create(ctx, udn)).To(Succeed())
	expectCondition(t, udn, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	g.Expect(udn.Status.TransitSubnets).To(Equal(udnv1.DualStackCIDRs{"100.89.0.0/16"}))
	g.Expect(nadConfig(g, ns, "net")).To(HaveKeyWithValue("transitSubnet", "100.89.0.0/16"))
	// Admission does not warn about it: the reconciler says it, once.
	g.Eventually(func(g Gomega) []string { return eventNotes(g, udn, "Normal", "TransitSubnetsMoved") }).WithTimeout(timeout).WithPolling(interval).
		Should(Equal([]string{"the network's subnets overlap the default transit subnets 100.88.0.0/16,fd97::/64 (--transit-subnets); it uses 100.89.0.0/16 instead, shown in status.transitSubnets."}))

	// A network on the default transit subnets gets no such Event.
	other := testobj.MakeUDN(newNamespace(t, "no-overlap", nil), "net").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.100.0.0/16")).Obj()
	g.Expect(k8s.Create(ctx, other)).To(Succeed())
	expectCondition(t, other, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	g.Consistently(func(g Gomega) []string { return eventNotes(g, other, "Normal", "TransitSubnetsMoved") }).WithTimeout(time.Second).WithPolling(interval).
		Should(BeEmpty())
}

func TestUDNSecondaryLayer3(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	ns := newNamespace(t, "sec", nil)
	udn := testobj.MakeUDN(ns, "sec").Spec(testobj.Layer3(udnv1.NetworkRoleSecondary, "10.30.0.0/16")).Obj()
	g.Expect(k8s.Create(ctx, udn)).To(Succeed())
	expectCondition(t, udn, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	nad := getNAD(g, ns, "sec")
	g.Expect(nad.Spec.Config).To(MatchJSON(fmt.Sprintf(`{"cniVersion":"1.1.0","type":"ovn-k8s-cni-overlay","name":"%[1]s_sec",
		"netAttachDefName":"%[1]s/sec","topology":"layer3","role":"secondary","subnets":"10.30.0.0/16/24"}`, ns)))
	g.Expect(nad.Annotations).To(HaveKey(ovnk.AnnotationNetworkID))
	g.Expect(nad.Annotations).To(HaveKeyWithValue(ovnk.AnnotationTunnelKeys, "[]"), "only Primary Layer2 networks get central tunnel keys; upstream writes [] for the others")
	g.Expect(udn.Status.TransitSubnets).To(BeEmpty())
}

func TestUDNLayer3AppendUpdatesNADInPlace(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	ns := newNamespace(t, "green", nil)
	udn := testobj.MakeUDN(ns, "green").Spec(testobj.Layer3(udnv1.NetworkRolePrimary, "10.200.0.0/16")).Obj()
	g.Expect(k8s.Create(ctx, udn)).To(Succeed())
	expectCondition(t, udn, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	before := getNAD(g, ns, "green")

	updateObject(t, udn, func(u *udnv1.UserDefinedNetwork) {
		u.Spec.Layer3.Subnets = append(u.Spec.Layer3.Subnets, udnv1.Layer3Subnet{CIDR: "10.201.0.0/16", HostSubnet: 24})
	})
	g.Eventually(func(g Gomega) {
		g.Expect(nadConfig(g, ns, "green")).To(HaveKeyWithValue("subnets", "10.200.0.0/16/24,10.201.0.0/16/24"))
	}).WithTimeout(timeout).Should(Succeed())
	after := getNAD(g, ns, "green")
	g.Expect(after.UID).To(Equal(before.UID), "the NAD is updated in place, not recreated")
	g.Expect(after.Annotations[ovnk.AnnotationNetworkID]).To(Equal(before.Annotations[ovnk.AnnotationNetworkID]))
}

func TestUDNNADDriftRepair(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	ns := newNamespace(t, "drift", nil)
	udn := testobj.MakeUDN(ns, "net").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.40.0.0/16")).Obj()
	g.Expect(k8s.Create(ctx, udn)).To(Succeed())
	expectCondition(t, udn, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	orig := getNAD(g, ns, "net")

	// Edited config, label and network ID are put back.
	updateObject(t, orig.DeepCopy(), func(edited *nadv1.NetworkAttachmentDefinition) {
		edited.Spec.Config = `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"hijack"}`
		delete(edited.Labels, ovnk.LabelUserDefinedNetwork)
		edited.Annotations[ovnk.AnnotationNetworkID] = "4000"
	})
	g.Eventually(func(g Gomega) {
		nad := getNAD(g, ns, "net")
		g.Expect(nad.Spec.Config).To(Equal(orig.Spec.Config))
		g.Expect(nad.Labels).To(HaveKey(ovnk.LabelUserDefinedNetwork))
		g.Expect(nad.Annotations[ovnk.AnnotationNetworkID]).To(Equal(orig.Annotations[ovnk.AnnotationNetworkID]))
	}).WithTimeout(timeout).Should(Succeed())

	// An edited network ID on the UDN itself is put back too.
	updateObject(t, udn, func(u *udnv1.UserDefinedNetwork) { u.Annotations[ovnk.AnnotationNetworkID] = "4001" })
	g.Eventually(func(g Gomega) string {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(udn), udn)).To(Succeed())
		return udn.Annotations[ovnk.AnnotationNetworkID]
	}).WithTimeout(timeout).Should(Equal(orig.Annotations[ovnk.AnnotationNetworkID]))
	g.Consistently(func(g Gomega) string { return getNAD(g, ns, "net").Annotations[ovnk.AnnotationNetworkID] }).
		WithTimeout(time.Second).Should(Equal(orig.Annotations[ovnk.AnnotationNetworkID]))

	// A deleted NAD comes back (a new object with the same content).
	g.Expect(k8s.Delete(ctx, getNAD(g, ns, "net"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		nad := getNAD(g, ns, "net")
		g.Expect(nad.UID).NotTo(Equal(orig.UID))
		g.Expect(nad.DeletionTimestamp).To(BeNil())
		g.Expect(nad.Spec.Config).To(Equal(orig.Spec.Config))
	}).WithTimeout(timeout).Should(Succeed())
	expectCondition(t, udn, metav1.ConditionTrue, udnv1.ReasonNADCreated)
}

func TestUDNForeignNADIsNeverOverwritten(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	ns := newNamespace(t, "foreign", nil)
	foreign := testobj.MakeNAD(ns, "net").Config(`{"cniVersion":"0.4.0","name":"mine","type":"bridge"}`).Obj()
	g.Expect(k8s.Create(ctx, foreign)).To(Succeed())
	udn := testobj.MakeUDN(ns, "net").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.41.0.0/16")).Obj()
	g.Expect(k8s.Create(ctx, udn)).To(Succeed())
	expectCondition(t, udn, metav1.ConditionFalse, udnv1.ReasonSyncError,
		fmt.Sprintf("foreign NetworkAttachmentDefinition %s/net already exists", ns))
	g.Consistently(func(g Gomega) {
		nad := getNAD(g, ns, "net")
		g.Expect(nad.Spec.Config).To(Equal(foreign.Spec.Config))
		g.Expect(nad.OwnerReferences).To(BeEmpty())
		g.Expect(nad.Finalizers).To(BeEmpty())
	}).WithTimeout(1500 * time.Millisecond).Should(Succeed())

	// Once the foreign NAD is gone, udnkit creates its own.
	g.Expect(k8s.Delete(ctx, foreign)).To(Succeed())
	expectCondition(t, udn, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	g.Expect(metav1.GetControllerOf(getNAD(g, ns, "net")).UID).To(Equal(udn.UID))

	// Deleting a UDN never deletes the foreign NAD it could not take.
	ns2 := newNamespace(t, "foreign", nil)
	foreign2 := foreign.DeepCopy()
	foreign2.ResourceVersion, foreign2.Namespace = "", ns2
	g.Expect(k8s.Create(ctx, foreign2)).To(Succeed())
	udn2 := testobj.MakeUDN(ns2, "net").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.41.0.0/16")).Obj()
	g.Expect(k8s.Create(ctx, udn2)).To(Succeed())
	expectCondition(t, udn2, metav1.ConditionFalse, udnv1.ReasonSyncError, "not managed by this UserDefinedNetwork")
	g.Expect(k8s.Delete(ctx, udn2)).To(Succeed())
	expectGone(t, udn2)
	g.Expect(getNAD(g, ns2, "net").Spec.Config).To(Equal(foreign.Spec.Config))
}

func TestUDNDeletionWaitsForPods(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	ns := newNamespace(t, "inuse", nil)
	udn := testobj.MakeUDN(ns, "net").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.42.0.0/16")).Obj()
	g.Expect(k8s.Create(ctx, udn)).To(Succeed())
	expectCondition(t, udn, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	key := ns + "/net"
	var pods []*corev1.Pod
	for i := range 7 {
		pods = append(pods, usePod(t, ns, fmt.Sprintf("pod-%d", i), key))
	}
	other := usePod(t, ns, "other", ns+"/something-else")

	g.Expect(k8s.Delete(ctx, udn)).To(Succeed())
	expectCondition(t, udn, metav1.ConditionFalse, udnv1.ReasonSyncError,
		"is in use by pods ["+ns+"/pod-0, "+ns+"/pod-1, "+ns+"/pod-2, "+ns+"/pod-3, "+ns+"/pod-4] and 2 more")
	c := condition(g, udn)
	g.Expect(c.Message).NotTo(ContainSubstring("other"))
	g.Consistently(func(g Gomega) {
		g.Expect(getNAD(g, ns, "net").Finalizers).To(ContainElement(ovnk.FinalizerUserDefinedNetworkProtection))
	}).WithTimeout(time.Second).Should(Succeed())

	for _, p := range pods {
		deletePod(t, p)
	}
	expectGone(t, &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "net"}})
	expectGone(t, udn)
	deletePod(t, other)
}

func TestUDNConcurrentCreatesGetUniqueIDs(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	const n = 24
	var wg sync.WaitGroup
	udns := make([]*udnv1.UserDefinedNetwork, n)
	for i := range n {
		ns := newNamespace(t, "conc", nil)
		udns[i] = testobj.MakeUDN(ns, "net").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, udnv1.CIDR(fmt.Sprintf("10.%d.0.0/16", 100+i)))).Obj()
	}
	// CUDNs race the UDNs from the other controller, for the same pool; each
	// selects a namespace of its own (one Primary network per namespace).
	var cudns []*udnv1.ClusterUserDefinedNetwork
	for i := range n / 2 {
		sel := map[string]string{"conc-cudn": fmt.Sprint(i)}
		newNamespace(t, "conc-cudn", sel)
		cudns = append(cudns, testobj.MakeCUDN(fmt.Sprint("conc-", i)).SelectLabels(sel).Spec(testobj.Layer2(udnv1.NetworkRolePrimary, udnv1.CIDR(fmt.Sprintf("10.%d.0.0/16", 150+i)))).Obj())
	}
	for _, u := range udns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.Expect(k8s.Create(ctx, u)).To(Succeed())
		}()
	}
	for _, c := range cudns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.Expect(k8s.Create(ctx, c)).To(Succeed())
		}()
	}
	wg.Wait()
	for _, u := range udns {
		expectCondition(t, u, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	}
	for _, c := range cudns {
		expectCondition(t, c, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	}
	expectUniqueAllocations(t)
	for _, c := range cudns {
		g.Expect(k8s.Delete(ctx, c)).To(Succeed())
		expectGone(t, c)
	}
}

// expectUniqueAllocations checks that no two networks share a network ID or
// a tunnel key, across every UDN, CUDN and NAD in the cluster, and that NADs
// agree with their network.
func expectUniqueAllocations(t *testing.T) {
	t.Helper()
	g := NewWithT(t)
	ids := map[string]string{}
	keys := map[int]string{}
	record := func(owner string, ann map[string]string) {
		if v, ok := ann[ovnk.AnnotationNetworkID]; ok {
			if prev, dup := ids[v]; dup && prev != owner {
				t.Errorf("network ID %s held by %s and %s", v, prev, owner)
			}
			ids[v] = owner
		}
		if _, ok := ann[ovnk.AnnotationTunnelKeys]; ok {
			decoded, err := ovnk.DecodeNetworkIDs(ann)
			g.Expect(err).NotTo(HaveOccurred())
			for _, k := range decoded.TunnelKeys {
				if prev, dup := keys[k]; dup && prev != owner {
					t.Errorf("tunnel key %d held by %s and %s", k, prev, owner)
				}
				keys[k] = owner
			}
		}
	}
	var udns udnv1.UserDefinedNetworkList
	g.Expect(k8s.List(ctx, &udns)).To(Succeed())
	uids := map[string]string{}
	for _, u := range udns.Items {
		owner := "udn " + u.Namespace + "/" + u.Name
		uids[string(u.UID)] = owner
		record(owner, u.Annotations)
	}
	var cudns udnv1.ClusterUserDefinedNetworkList
	g.Expect(k8s.List(ctx, &cudns)).To(Succeed())
	for _, c := range cudns.Items {
		owner := "cudn " + c.Name
		uids[string(c.UID)] = owner
		record(owner, c.Annotations)
	}
	var nads nadv1.NetworkAttachmentDefinitionList
	g.Expect(k8s.List(ctx, &nads, client.HasLabels{ovnk.LabelUserDefinedNetwork})).To(Succeed())
	for _, n := range nads.Items {
		if ref := metav1.GetControllerOf(&n); ref != nil && uids[string(ref.UID)] != "" {
			record(uids[string(ref.UID)], n.Annotations)
		}
	}
	g.Expect(ids).NotTo(BeEmpty())
}
