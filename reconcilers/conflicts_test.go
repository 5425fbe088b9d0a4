package reconcilers_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/reconcilers/internal/rtest"
)

// These tests run without webhooks, as if both objects had been admitted in
// the window in which the webhooks' cache missed the other one.

const races = 20

// createConcurrently creates objs at once.
func createConcurrently(t *testing.T, objs ...client.Object) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(objs))
	for i, o := range objs {
		wg.Go(func() { errs[i] = k8s.Create(ctx, o) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// olderFirst orders two networks by the rule: creationTimestamp, then kind
// (ClusterUserDefinedNetwork before UserDefinedNetwork), then name.
func olderFirst(a, b client.Object, kindA, kindB string) (client.Object, client.Object) {
	ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
	switch {
	case ta.Before(&tb):
		return a, b
	case tb.Before(&ta):
		return b, a
	case kindA != kindB:
		if kindA < kindB {
			return a, b
		}
		return b, a
	case a.GetName() < b.GetName():
		return a, b
	}
	return b, a
}

// expectWarning waits for a Warning event about obj with reason and a note
// holding msg.
func expectWarning(t *testing.T, obj client.Object, reason, msg string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) []string {
		return eventNotes(g, obj, "Warning", reason)
	}).WithTimeout(timeout).WithPolling(interval).Should(ContainElement(ContainSubstring(msg)))
}

// eventNotes are the notes of obj's events of type and reason.
func eventNotes(g Gomega, obj client.Object, typ, reason string) []string {
	var evs eventsv1.EventList
	g.Expect(k8s.List(ctx, &evs)).To(Succeed())
	var notes []string
	for _, e := range evs.Items {
		if e.Regarding.UID == obj.GetUID() && e.Type == typ && e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

// expectNoNAD checks, for a while, that ns has no NAD named name.
func expectNoNAD(t *testing.T, ns, name string) {
	t.Helper()
	NewWithT(t).Consistently(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, newNAD()))
	}).WithTimeout(time.Second).WithPolling(interval).Should(BeTrue(), "NAD %s/%s exists", ns, name)
}

func ref(kind string, o client.Object) string {
	if o.GetNamespace() != "" {
		return kind + " " + o.GetNamespace() + "/" + o.GetName()
	}
	return kind + " " + o.GetName()
}

// race runs one races times, in parallel subtests; one creates two rival
// networks at once and returns them. It logs how many were created in the
// same second (decided by the tie-breakers).
func race(t *testing.T, one func(t *testing.T, i int) (a, b client.Object)) {
	var mu sync.Mutex
	ties := 0
	t.Run("races", func(t *testing.T) {
		for i := range races {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				a, b := one(t, i)
				if ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp(); ta.Equal(&tb) {
					mu.Lock()
					ties++
					mu.Unlock()
				}
			})
		}
	})
	t.Logf("%d of %d races created both networks in the same second", ties, races)
}

func TestTwoPrimaryUDNsCreatedTogether(t *testing.T) {
	rtest.Require(t)
	race(t, func(t *testing.T, _ int) (client.Object, client.Object) {
		g := NewWithT(t)
		ns := newNamespace(t, "race-udn", nil)
		a := testobj.MakeUDN(ns, "alpha").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.100.0.0/16")).Obj()
		b := testobj.MakeUDN(ns, "beta").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.101.0.0/16")).Obj()
		createConcurrently(t, a, b)
		w, l := olderFirst(a, b, "UserDefinedNetwork", "UserDefinedNetwork")
		winner, loser := w.(*udnv1.UserDefinedNetwork), l.(*udnv1.UserDefinedNetwork)

		expectCondition(t, winner, metav1.ConditionTrue, udnv1.ReasonNADCreated)
		msg := fmt.Sprintf("1 namespace(s) already have an older primary network: %s (%s)", ns, ref("UserDefinedNetwork", winner))
		expectCondition(t, loser, metav1.ConditionFalse, udnv1.ReasonPrimaryNetworkConflict, msg)
		expectWarning(t, loser, udnv1.ReasonPrimaryNetworkConflict, msg)
		getNAD(g, ns, winner.Name)
		expectNoNAD(t, ns, loser.Name)
		expectCondition(t, winner, metav1.ConditionTrue, udnv1.ReasonNADCreated) // still the winner

		// The loser takes over once the winner is gone.
		g.Expect(k8s.Delete(ctx, winner)).To(Succeed())
		expectGone(t, winner)
		expectCondition(t, loser, metav1.ConditionTrue, udnv1.ReasonNADCreated)
		g.Eventually(func(g Gomega) { getNAD(g, ns, loser.Name) }).WithTimeout(timeout).Should(Succeed())
		return a, b
	})
}

func TestPrimaryUDNAndCUDNCreatedTogether(t *testing.T) {
	rtest.Require(t)
	race(t, func(t *testing.T, i int) (client.Object, client.Object) {
		g := NewWithT(t)
		sel := map[string]string{"race-cudn": fmt.Sprint(i)}
		ns := newNamespace(t, "race-cudn", sel)
		u := testobj.MakeUDN(ns, "own").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.100.0.0/16")).Obj()
		cu := testobj.MakeCUDN(fmt.Sprintf("race-cudn-%d", i)).SelectLabels(sel).Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.102.0.0/16")).Obj()
		createConcurrently(t, u, cu)
		winner, loser := olderFirst(u, cu, "UserDefinedNetwork", "ClusterUserDefinedNetwork")
		kind := map[bool]string{true: "UserDefinedNetwork", false: "ClusterUserDefinedNetwork"}

		msg := fmt.Sprintf("1 namespace(s) already have an older primary network: %s (%s)", ns, ref(kind[winner == client.Object(u)], winner))
		if loser == client.Object(u) {
			// The UDN's tenant may not read CUDNs: the winner is not named.
			msg = fmt.Sprintf("1 namespace(s) already have an older primary network: %s (a ClusterUserDefinedNetwork);", ns)
		}
		expectCondition(t, loser, metav1.ConditionFalse, udnv1.ReasonPrimaryNetworkConflict, msg)
		expectWarning(t, loser, udnv1.ReasonPrimaryNetworkConflict, msg)
		if loser == client.Object(u) {
			g.Expect(condition(g, loser).Message).NotTo(ContainSubstring("ClusterUserDefinedNetwork " + cu.Name))
		}
		expectCondition(t, winner, metav1.ConditionTrue, udnv1.ReasonNADCreated)
		getNAD(g, ns, winner.GetName())
		expectNoNAD(t, ns, loser.GetName())

		g.Expect(k8s.Delete(ctx, winner)).To(Succeed())
		expectGone(t, winner)
		expectCondition(t, loser, metav1.ConditionTrue, udnv1.ReasonNADCreated)
		g.Eventually(func(g Gomega) { getNAD(g, ns, loser.GetName()) }).WithTimeout(timeout).Should(Succeed())
		g.Expect(k8s.Delete(ctx, loser)).To(Succeed())
		return u, cu
	})
}

// A Primary CUDN whose selector comes to match a namespace with an older
// Primary UDN (the webhook refuses that, but its cache may lag) takes
// nothing from it; narrowing the selector clears the conflict.
func TestCUDNWideningOverAnOlderUDN(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	ns := newNamespace(t, "widen", map[string]string{"widen": "yes"})
	mine := newNamespace(t, "widen-own", map[string]string{"widen-own": "yes"})
	u := testobj.MakeUDN(ns, "first").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.100.0.0/16")).Obj()
	g.Expect(k8s.Create(ctx, u)).To(Succeed())
	expectCondition(t, u, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	time.Sleep(1100 * time.Millisecond) // a later creationTimestamp, whatever the names
	cu := testobj.MakeCUDN("widening").SelectLabels(map[string]string{"widen-own": "yes"}).Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.103.0.0/16")).Obj()
	g.Expect(k8s.Create(ctx, cu)).To(Succeed())
	expectCondition(t, cu, metav1.ConditionTrue, udnv1.ReasonNADCreated)

	updateObject(t, cu, func(c *udnv1.ClusterUserDefinedNetwork) {
		c.Spec.NamespaceSelector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{ns, mine}}}}
	})
	expectCondition(t, cu, metav1.ConditionFalse, udnv1.ReasonPrimaryNetworkConflict,
		fmt.Sprintf("%s (UserDefinedNetwork %s/first)", ns, ns))
	expectNoNAD(t, ns, "widening")
	getNAD(g, mine, "widening")
	expectCondition(t, u, metav1.ConditionTrue, udnv1.ReasonNADCreated)

	updateObject(t, cu, func(c *udnv1.ClusterUserDefinedNetwork) {
		c.Spec.NamespaceSelector = metav1.LabelSelector{MatchLabels: map[string]string{"widen-own": "yes"}}
	})
	expectCondition(t, cu, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	g.Expect(k8s.Delete(ctx, cu)).To(Succeed())
}

// OKEP-5377: a Layer3 subnet appended over a range that is in use by then
// is reported and kept out of the NAD, which keeps its old subnets; once the
// range is free the NAD gets the appended subnet.
func TestLayer3AppendOverAUsedRange(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	ns := newNamespace(t, "append-conflict", nil)
	green := testobj.MakeUDN(ns, "green").Spec(testobj.Layer3(udnv1.NetworkRolePrimary, "10.200.0.0/16")).Obj()
	g.Expect(k8s.Create(ctx, green)).To(Succeed())
	expectCondition(t, green, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	g.Expect(nadConfig(g, ns, "green")).To(HaveKeyWithValue("subnets", "10.200.0.0/16/24"))

	// Another network of the namespace takes 10.210.0.0/16 after green was
	// admitted; then green appends an overlapping subnet.
	backend := testobj.MakeUDN(ns, "backend").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.210.0.0/16")).Obj()
	g.Expect(k8s.Create(ctx, backend)).To(Succeed())
	expectCondition(t, backend, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	updateObject(t, green, func(u *udnv1.UserDefinedNetwork) {
		u.Spec.Layer3.Subnets = append(u.Spec.Layer3.Subnets, udnv1.Layer3Subnet{CIDR: "10.210.0.0/16", HostSubnet: 24})
	})
	msg := fmt.Sprintf("spec.layer3.subnets[1] 10.210.0.0/16 overlaps subnet 10.210.0.0/16 of NetworkAttachmentDefinition %s/backend; the NetworkAttachmentDefinitions keep the subnets [10.200.0.0/16] until the conflict is resolved.", ns)
	expectCondition(t, green, metav1.ConditionFalse, udnv1.ReasonSubnetConflict, msg)
	expectWarning(t, green, udnv1.ReasonSubnetConflict, msg)
	g.Consistently(func(g Gomega) map[string]any { return nadConfig(g, ns, "green") }).
		WithTimeout(time.Second).WithPolling(interval).Should(HaveKeyWithValue("subnets", "10.200.0.0/16/24"))

	// The range is freed: the append goes through.
	g.Expect(k8s.Delete(ctx, backend)).To(Succeed())
	expectGone(t, backend)
	expectCondition(t, green, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	g.Eventually(func(g Gomega) map[string]any { return nadConfig(g, ns, "green") }).WithTimeout(timeout).
		Should(HaveKeyWithValue("subnets", "10.200.0.0/16/24,10.210.0.0/16/24"))

	// A cluster range: the transit subnet.
	updateObject(t, green, func(u *udnv1.UserDefinedNetwork) {
		u.Spec.Layer3.Subnets = append(u.Spec.Layer3.Subnets, udnv1.Layer3Subnet{CIDR: "100.88.0.0/16", HostSubnet: 24})
	})
	expectCondition(t, green, metav1.ConditionFalse, udnv1.ReasonSubnetConflict,
		"spec.layer3.subnets[2] 100.88.0.0/16 overlaps the transit subnet 100.88.0.0/16 (--transit-subnets)", "keep the subnets [10.200.0.0/16, 10.210.0.0/16]")
	g.Consistently(func(g Gomega) map[string]any { return nadConfig(g, ns, "green") }).
		WithTimeout(time.Second).WithPolling(interval).Should(HaveKeyWithValue("subnets", "10.200.0.0/16/24,10.210.0.0/16/24"))
}

// A CUDN reports the conflict with the spec.network path; the network's own
// join subnet and the cluster's ranges count as used.
func TestCUDNLayer3AppendOverAUsedRange(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	sel := map[string]string{"cudn-append": "yes"}
	ns := newNamespace(t, "cudn-append", sel)
	cu := testobj.MakeCUDN("cudn-append").SelectLabels(sel).Spec(udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer3, Layer3: &udnv1.Layer3Config{
		Role: udnv1.NetworkRolePrimary, Subnets: []udnv1.Layer3Subnet{{CIDR: "10.220.0.0/16", HostSubnet: 24}}}}).Obj()
	g.Expect(k8s.Create(ctx, cu)).To(Succeed())
	expectCondition(t, cu, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	updateObject(t, cu, func(c *udnv1.ClusterUserDefinedNetwork) {
		c.Spec.Network.Layer3.Subnets = append(c.Spec.Network.Layer3.Subnets,
			udnv1.Layer3Subnet{CIDR: "100.65.0.0/16", HostSubnet: 24}, udnv1.Layer3Subnet{CIDR: "10.244.0.0/16", HostSubnet: 24})
	})
	expectCondition(t, cu, metav1.ConditionFalse, udnv1.ReasonSubnetConflict,
		"spec.network.layer3.subnets[1] 100.65.0.0/16 overlaps the network's join subnet 100.65.0.0/16",
		"spec.network.layer3.subnets[2] 10.244.0.0/16 overlaps the cluster default network subnet 10.244.0.0/16 (--cluster-subnets)")
	g.Expect(nadConfig(g, ns, "cudn-append")).To(HaveKeyWithValue("subnets", "10.220.0.0/16/24"))
	g.Expect(k8s.Delete(ctx, cu)).To(Succeed())
	expectGone(t, cu)
}

// A Primary CUDN that names its namespaces is found through the cache index
// of named namespaces: when its selector comes to name a namespace after
// the index was built (it named another one before), the younger Primary
// UDN there loses the namespace to it, and gets it back when the CUDN goes.
func TestNamedCUDNRenamedOntoAYoungerUDN(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	elsewhere := newNamespace(t, "named-elsewhere", nil)
	ns := newNamespace(t, "named-target", nil)
	named := func(names ...string) metav1.LabelSelector {
		return metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: names}}}
	}
	cu := testobj.MakeCUDN("named-older").SelectLabels(nil).Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.104.0.0/16")).Obj()
	cu.Spec.NamespaceSelector = named(elsewhere)
	g.Expect(k8s.Create(ctx, cu)).To(Succeed())
	expectCondition(t, cu, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	time.Sleep(1100 * time.Millisecond) // the UDN is younger, whatever the names
	u := testobj.MakeUDN(ns, "younger").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.105.0.0/16")).Obj()
	g.Expect(k8s.Create(ctx, u)).To(Succeed())
	expectCondition(t, u, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	getNAD(g, ns, "younger")

	updateObject(t, cu, func(c *udnv1.ClusterUserDefinedNetwork) { c.Spec.NamespaceSelector = named(elsewhere, ns) })
	expectCondition(t, u, metav1.ConditionFalse, udnv1.ReasonPrimaryNetworkConflict,
		fmt.Sprintf("1 namespace(s) already have an older primary network: %s (a ClusterUserDefinedNetwork)", ns))
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "younger"}, newNAD()))
	}).WithTimeout(timeout).WithPolling(interval).Should(BeTrue(), "the younger UDN's NAD stays")
	g.Eventually(func(g Gomega) []string { return nadNamespaces(g, cu) }).WithTimeout(timeout).Should(ConsistOf(elsewhere, ns))

	g.Expect(k8s.Delete(ctx, cu)).To(Succeed())
	expectGone(t, cu)
	expectCondition(t, u, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	g.Eventually(func(g Gomega) { getNAD(g, ns, "younger") }).WithTimeout(timeout).Should(Succeed())
	g.Expect(k8s.Delete(ctx, u)).To(Succeed())
}
