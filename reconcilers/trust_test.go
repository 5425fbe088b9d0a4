package reconcilers_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/nadtrust"
	"github.com/udnkit/udnkit/reconcilers"
	"github.com/udnkit/udnkit/reconcilers/internal/rtest"
	"github.com/udnkit/udnkit/reconcilers/networkids"
)

// A tenant with NAD rights in its own namespace writes NADs carrying three
// victims' network IDs and tunnel keys while no manager runs (admission is
// not installed in this suite: the admin client stands in for a tenant that
// got past it): one controlled by the tenant's own older UDN under another
// name, one controlled by a UDN that does not exist, its own managed NAD
// edited, and the managed NAD of a younger network whose CR records no IDs.
// At the next start the rebuild counts none of them against the victims:
// every victim keeps its IDs on its CR and its NAD, each forged NAD gets a
// Warning Event naming the failed check (the younger network's NAD: that its
// claim lost), udnkit_untrusted_nads_total{consumer="network-ids"} moves for
// each, and the tenant's managed NADs get their own IDs back.
func TestRebuildTrustsOnlyVerifiedNADs(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	attackerNS := newNamespace(t, "trust-attacker", nil)
	old := testobj.MakeUDN(attackerNS, "old").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.91.0.0/16")).Obj()
	g.Expect(k8s.Create(ctx, old)).To(Succeed())
	expectCondition(t, old, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(old), old)).To(Succeed())
	// creationTimestamp has one-second resolution: the victims are younger
	// than the tenant's network, so a claim counted as old as it would win.
	g.Eventually(func() bool { return time.Now().Truncate(time.Second).After(old.CreationTimestamp.Time) }).
		WithTimeout(timeout).Should(BeTrue())
	victims := createPrimaryL2(t, "trust-victim", 3)
	ids := func(ann map[string]string) string {
		return ann[ovnk.AnnotationNetworkID] + " " + ann[ovnk.AnnotationTunnelKeys]
	}
	recorded := map[string]string{}
	for _, v := range victims {
		expectCondition(t, v, metav1.ConditionTrue, udnv1.ReasonNADCreated)
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(v), v)).To(Succeed())
		recorded[v.Namespace] = ids(v.Annotations)
		g.Expect(ids(getNAD(g, v.Namespace, "net").Annotations)).To(Equal(recorded[v.Namespace]))
	}
	g.Eventually(func() bool { return time.Now().Truncate(time.Second).After(victims[2].CreationTimestamp.Time) }).
		WithTimeout(timeout).Should(BeTrue())
	attackerNS2 := newNamespace(t, "trust-attacker", nil)
	late := testobj.MakeUDN(attackerNS2, "late").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.92.0.0/16")).Obj()
	g.Expect(k8s.Create(ctx, late)).To(Succeed())
	expectCondition(t, late, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(old), old)).To(Succeed())
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(late), late)).To(Succeed())
	oldIDs := ids(old.Annotations)
	count := func(reason string) float64 { return nadtrust.Count(networkids.Consumer, reason) }
	counted := map[string]float64{}
	for _, r := range []string{nadtrust.ReasonNameMismatch, nadtrust.ReasonOwnerNotFound, nadtrust.ReasonNetworkIDMismatch, nadtrust.ReasonClaimLost} {
		counted[r] = count(r)
	}

	stopManager()
	withIDs := func(nad *nadv1.NetworkAttachmentDefinition, v *udnv1.UserDefinedNetwork) {
		nad.Annotations[ovnk.AnnotationNetworkID] = v.Annotations[ovnk.AnnotationNetworkID]
		nad.Annotations[ovnk.AnnotationTunnelKeys] = v.Annotations[ovnk.AnnotationTunnelKeys]
	}
	forged := func(name string, ref metav1.OwnerReference, v *udnv1.UserDefinedNetwork) *nadv1.NetworkAttachmentDefinition {
		tmpl := getNAD(g, attackerNS, "old")
		nad := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: attackerNS, Name: name,
			Labels: tmpl.Labels, Annotations: tmpl.Annotations, OwnerReferences: []metav1.OwnerReference{ref}}, Spec: tmpl.Spec}
		withIDs(nad, v)
		g.Expect(k8s.Create(ctx, nad)).To(Succeed())
		return nad
	}
	yes := true
	oldRef := metav1.OwnerReference{APIVersion: udnv1.GroupVersion.String(), Kind: udnv1.KindUserDefinedNetwork, Name: "old", UID: old.UID, Controller: &yes}
	underOld := forged("x", oldRef, victims[0])
	ghostRef := oldRef
	ghostRef.Name, ghostRef.UID = "y", "0d9c2a4e-0000-4000-8000-000000000000"
	ghost := forged("y", ghostRef, victims[1])
	edited := getNAD(g, attackerNS, "old")
	withIDs(edited, victims[2])
	g.Expect(k8s.Update(ctx, edited)).To(Succeed())
	// The younger network's CR loses its IDs (as a network OVN-Kubernetes
	// created records them only on its NADs) and its NAD claims a victim's.
	delete(late.Annotations, ovnk.AnnotationNetworkID)
	delete(late.Annotations, ovnk.AnnotationTunnelKeys)
	g.Expect(k8s.Update(ctx, late)).To(Succeed())
	lateNAD := getNAD(g, attackerNS2, "late")
	withIDs(lateNAD, victims[1])
	g.Expect(k8s.Update(ctx, lateNAD)).To(Succeed())
	if err := startManager(reconcilers.DefaultConfig()); err != nil {
		t.Fatal(err)
	}

	for _, v := range victims {
		expectCondition(t, v, metav1.ConditionTrue, udnv1.ReasonNADCreated)
		g.Consistently(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(v), v)).To(Succeed())
			g.Expect(ids(v.Annotations)).To(Equal(recorded[v.Namespace]), "victim %s's CR", v.Namespace)
			g.Expect(ids(getNAD(g, v.Namespace, "net").Annotations)).To(Equal(recorded[v.Namespace]), "victim %s's NAD", v.Namespace)
		}).WithTimeout(2 * time.Second).Should(Succeed())
	}
	for nad, reason := range map[*nadv1.NetworkAttachmentDefinition]string{underOld: nadtrust.ReasonNameMismatch, ghost: nadtrust.ReasonOwnerNotFound,
		edited: nadtrust.ReasonNetworkIDMismatch, lateNAD: nadtrust.ReasonClaimLost} {
		g.Eventually(func(g Gomega) {
			notes := warningNotes(g, nad, nadtrust.EventReason)
			g.Expect(strings.Join(notes, "\n")).To(ContainSubstring("network-ids ignores this NetworkAttachmentDefinition (" + reason + ")"))
		}).WithTimeout(timeout).Should(Succeed(), "event on %s/%s", nad.Namespace, nad.Name)
		g.Expect(count(reason)).To(BeNumerically(">", counted[reason]), "udnkit_untrusted_nads_total{reason=%s}", reason)
	}
	// The tenant's managed NADs carry their own networks' IDs again.
	g.Eventually(func(g Gomega) { g.Expect(ids(getNAD(g, attackerNS, "old").Annotations)).To(Equal(oldIDs)) }).WithTimeout(timeout).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(late), late)).To(Succeed())
		g.Expect(late.Annotations).To(HaveKey(ovnk.AnnotationNetworkID))
		g.Expect(ids(late.Annotations)).NotTo(Equal(recorded[victims[1].Namespace]))
		g.Expect(ids(getNAD(g, attackerNS2, "late").Annotations)).To(Equal(ids(late.Annotations)))
	}).WithTimeout(timeout).Should(Succeed())
	for _, nad := range []client.Object{underOld, ghost} {
		g.Expect(k8s.Delete(ctx, nad)).To(Succeed())
	}
	expectUniqueAllocations(t)
}
