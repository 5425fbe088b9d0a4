package reconcilers_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers"
	"github.com/udnkit/udnkit/reconcilers/internal/rtest"
)

// warningNotes returns the notes of Warning events with reason on obj.
func warningNotes(g Gomega, obj client.Object, reason string) []string {
	var evs eventsv1.EventList
	g.Expect(k8s.List(ctx, &evs, client.InNamespace(obj.GetNamespace()))).To(Succeed())
	var out []string
	for _, e := range evs.Items {
		if e.Regarding.UID == obj.GetUID() && e.Type == "Warning" && e.Reason == reason {
			out = append(out, e.Note)
		}
	}
	return out
}

// TestRebuildIgnoresAnotherNetworksIDs is network-ID theft: a UDN created,
// while no manager runs, with an existing CUDN's network ID and tunnel keys
// in its annotations. The older network keeps them, whatever its kind; the
// younger gets new ones and an Event that does not name the CUDN.
func TestRebuildIgnoresAnotherNetworksIDs(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	sel := map[string]string{"rebuild": "victim"}
	victimNS := newNamespace(t, "rebuild-victim", sel)
	cudn := testobj.MakeCUDN("rebuild-victim-net").SelectLabels(sel).Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.88.0.0/16")).Obj()
	g.Expect(k8s.Create(ctx, cudn)).To(Succeed())
	expectCondition(t, cudn, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cudn), cudn)).To(Succeed())
	victimID, victimKeys := cudn.Annotations[ovnk.AnnotationNetworkID], cudn.Annotations[ovnk.AnnotationTunnelKeys]
	g.Expect(victimKeys).NotTo(BeEmpty())
	// creationTimestamp has one-second resolution: make the thief younger.
	g.Eventually(func() bool { return time.Now().Truncate(time.Second).After(cudn.CreationTimestamp.Time) }).
		WithTimeout(timeout).Should(BeTrue())

	stopManager()
	thiefNS := newNamespace(t, "rebuild-thief", nil)
	thief := testobj.MakeUDN(thiefNS, "net").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.89.0.0/16")).Obj()
	thief.Annotations = map[string]string{ovnk.AnnotationNetworkID: victimID, ovnk.AnnotationTunnelKeys: victimKeys}
	g.Expect(k8s.Create(ctx, thief)).To(Succeed())
	if err := startManager(reconcilers.DefaultConfig()); err != nil {
		t.Fatal(err)
	}

	expectCondition(t, thief, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(thief), thief)).To(Succeed())
	g.Expect(thief.Annotations[ovnk.AnnotationNetworkID]).NotTo(Equal(victimID))
	g.Expect(getNAD(g, thiefNS, "net").Annotations[ovnk.AnnotationNetworkID]).To(Equal(thief.Annotations[ovnk.AnnotationNetworkID]))
	// The CUDN kept its IDs and its NAD.
	expectCondition(t, cudn, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cudn), cudn)).To(Succeed())
	g.Expect(cudn.Annotations[ovnk.AnnotationNetworkID]).To(Equal(victimID))
	g.Expect(cudn.Annotations[ovnk.AnnotationTunnelKeys]).To(Equal(victimKeys))
	g.Expect(getNAD(g, victimNS, cudn.Name).Annotations[ovnk.AnnotationNetworkID]).To(Equal(victimID))

	var notes []string
	g.Eventually(func(g Gomega) {
		notes = warningNotes(g, thief, "NetworkIDIgnored")
		g.Expect(notes).NotTo(BeEmpty())
	}).WithTimeout(timeout).Should(Succeed())
	for _, n := range notes {
		g.Expect(n).To(ContainSubstring("network ID " + victimID))
		g.Expect(n).NotTo(ContainSubstring(cudn.Name), "a tenant's event names another tenant's network")
	}
	d := countDuplicates(g)
	t.Logf("duplicates after restart: %+v", d)
	g.Expect(d.total()).To(BeZero())
	expectUniqueAllocations(t)

	g.Expect(k8s.Delete(ctx, cudn)).To(Succeed())
	expectGone(t, cudn)
}
