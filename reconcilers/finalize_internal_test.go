package reconcilers

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers/networkids"
)

// TestDeletedUDNReleasesANADTheCacheMisses: a UDN deleted right after its
// NAD was created, before this process's NAD informer delivered the NAD,
// still has that NAD deleted before its own finalizer goes (the live read),
// and a NAD of the UDN's name that the UDN does not control is left alone.
func TestDeletedUDNReleasesANADTheCacheMisses(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "gone"
	blue := blueUDN(ns, "10.232.0.0/16")
	red := testobj.MakeUDN(ns, "red").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.233.0.0/16")).Obj()
	red.UID = "uid-red"
	foreign := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "red",
		Labels: map[string]string{ovnk.LabelUserDefinedNetwork: ""}}}
	apiserver := fakeNetworkClient(t, nil, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, blue, red, foreign)
	undelivered := map[types.NamespacedName]bool{}
	r := testUDNReconciler(cacheMissingNADs(apiserver, undelivered), apiserver, false)
	reconcile := func(u *udnv1.UserDefinedNetwork) { mustReconcile(t, r, u) }
	deleted := func(obj client.Object) bool {
		t.Helper()
		err := apiserver.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		g.Expect(client.IgnoreNotFound(err)).To(Succeed())
		return apierrors.IsNotFound(err)
	}

	reconcile(blue)
	var nad nadv1.NetworkAttachmentDefinition
	g.Expect(apiserver.Get(ctx, client.ObjectKeyFromObject(blue), &nad)).To(Succeed())
	g.Expect(nad.Finalizers).To(ContainElement(ovnk.FinalizerUserDefinedNetworkProtection))
	undelivered[client.ObjectKeyFromObject(&nad)] = true
	g.Expect(apiserver.Get(ctx, client.ObjectKeyFromObject(blue), blue)).To(Succeed())
	g.Expect(apiserver.Delete(ctx, blue)).To(Succeed())
	reconcile(blue)
	g.Expect(deleted(&nad)).To(BeTrue(), "the NAD the cache missed outlived its UDN")
	g.Expect(deleted(blue)).To(BeTrue(), "the UDN kept its finalizer")

	// red's NAD name is taken by a NAD red does not control: red never
	// gets a NAD, and deleting red leaves that NAD as it was.
	reconcile(red)
	g.Expect(apiserver.Get(ctx, client.ObjectKeyFromObject(red), red)).To(Succeed())
	g.Expect(apiserver.Delete(ctx, red)).To(Succeed())
	reconcile(red)
	g.Expect(deleted(red)).To(BeTrue(), "the UDN kept its finalizer")
	g.Expect(deleted(foreign)).To(BeFalse(), "a NAD the UDN does not control was deleted")
	g.Expect(foreign.Finalizers).To(BeEmpty())
}

// TestDeletedUDNWritesItsStatusOnlyWhileHeld: a deleted UDN that only
// udnkit's finalizer held goes without a status write (upstream's status
// write after its finalizer's removal finds nothing: no user sees it); one
// that another finalizer still holds loses udnkit's and says its NAD is
// being deleted.
func TestDeletedUDNWritesItsStatusOnlyWhileHeld(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns, hold = "held", "example.com/hold"
	blue := blueUDN(ns, "10.235.0.0/16")
	red := testobj.MakeUDN(ns, "red").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.237.0.0/16")).Obj()
	red.UID = "uid-red"
	apiserver := fakeNetworkClient(t, nil, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, blue, red)
	var statuses []string
	c := interceptor.NewClient(apiserver, interceptor.Funcs{
		SubResourceApply: func(ctx context.Context, c client.Client, _ string, obj runtime.ApplyConfiguration, _ ...client.SubResourceApplyOption) error {
			b, err := json.Marshal(obj)
			if err != nil {
				return err
			}
			statuses = append(statuses, string(b))
			return nil
		},
	})
	r := testUDNReconciler(c, c, false)
	for _, u := range []*udnv1.UserDefinedNetwork{blue, red} {
		mustReconcile(t, r, u)
		g.Expect(apiserver.Get(ctx, client.ObjectKeyFromObject(u), u)).To(Succeed())
		g.Expect(u.Finalizers).To(ContainElement(ovnk.FinalizerUserDefinedNetworkProtection))
	}
	red.Finalizers = append(red.Finalizers, hold)
	g.Expect(apiserver.Update(ctx, red)).To(Succeed())
	g.Expect(apiserver.Delete(ctx, blue)).To(Succeed())
	g.Expect(apiserver.Delete(ctx, red)).To(Succeed())

	statuses = nil
	mustReconcile(t, r, blue)
	g.Expect(apierrors.IsNotFound(apiserver.Get(ctx, client.ObjectKeyFromObject(blue), blue))).To(BeTrue(), "blue is still there: %v", blue.Finalizers)
	g.Expect(statuses).To(BeEmpty(), "a status write to a UDN its finalizer's removal deleted")

	mustReconcile(t, r, red)
	g.Expect(apiserver.Get(ctx, client.ObjectKeyFromObject(red), red)).To(Succeed())
	g.Expect(red.Finalizers).To(Equal([]string{hold}))
	g.Expect(statuses).To(HaveLen(1))
	g.Expect(statuses[0]).To(ContainSubstring(`"reason":"` + udnv1.ReasonNADDeleted + `"`))
	g.Expect(statuses[0]).To(ContainSubstring("NetworkAttachmentDefinition is being deleted"))
}

// TestDeletedUDNReadsItsNADFromTheCache: a deleted UDN whose NAD the
// cache holds with udnkit's finalizer releases it without reading the
// apiserver; a cached copy without the finalizer (older than the
// apiserver's) is not trusted: the NAD is read again and released.
func TestDeletedUDNReadsItsNADFromTheCache(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "cached"
	for _, stale := range []bool{false, true} {
		blue := blueUDN(ns, "10.238.0.0/16")
		apiserver := fakeNetworkClient(t, nil, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, blue)
		cache := interceptor.NewClient(apiserver, interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				err := c.Get(ctx, key, obj, opts...)
				if nad, ok := obj.(*nadv1.NetworkAttachmentDefinition); ok && err == nil && stale {
					nad.Finalizers = nil
				}
				return err
			},
		})
		liveNADReads := 0
		live := interceptor.NewClient(apiserver, interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if _, ok := obj.(*nadv1.NetworkAttachmentDefinition); ok {
					liveNADReads++
				}
				return c.Get(ctx, key, obj, opts...)
			},
		})
		r := testUDNReconciler(cache, live, false)
		mustReconcile(t, r, blue)
		g.Expect(apiserver.Get(ctx, client.ObjectKeyFromObject(blue), blue)).To(Succeed())
		g.Expect(apiserver.Delete(ctx, blue)).To(Succeed())
		liveNADReads = 0
		mustReconcile(t, r, blue)
		var nad nadv1.NetworkAttachmentDefinition
		g.Expect(apierrors.IsNotFound(apiserver.Get(ctx, client.ObjectKeyFromObject(blue), &nad))).To(BeTrue(), "stale cache %v: the NAD is still there: %v", stale, nad.Finalizers)
		g.Expect(apierrors.IsNotFound(apiserver.Get(ctx, client.ObjectKeyFromObject(blue), blue))).To(BeTrue(), "stale cache %v: the UDN is still there", stale)
		if stale {
			g.Expect(liveNADReads).To(Equal(1), "a cached NAD without the finalizer was trusted")
		} else {
			g.Expect(liveNADReads).To(BeZero(), "the NAD the cache holds was read from the apiserver")
		}
	}
}

// TestDeletedUDNSendsItsNADsDeletionWithoutWaiting: a deleted UDN's NAD
// deletion and its finalizer's removal are in flight at once (the zones'
// dataplanes start removing the network at the deletion), and the NAD ends
// gone.
func TestDeletedUDNSendsItsNADsDeletionWithoutWaiting(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "order"
	blue := blueUDN(ns, "10.236.0.0/16")
	apiserver := fakeNetworkClient(t, nil, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, blue)
	patching := make(chan struct{}, 1)
	waited := false
	c := interceptor.NewClient(apiserver, interceptor.Funcs{
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if _, ok := obj.(*nadv1.NetworkAttachmentDefinition); ok {
				select {
				case <-patching:
				case <-time.After(5 * time.Second):
					waited = true
				}
			}
			return c.Delete(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*nadv1.NetworkAttachmentDefinition); ok {
				patching <- struct{}{}
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	r := testUDNReconciler(c, c, false)
	mustReconcile(t, r, blue)
	g.Expect(apiserver.Get(ctx, client.ObjectKeyFromObject(blue), blue)).To(Succeed())
	g.Expect(apiserver.Delete(ctx, blue)).To(Succeed())
	mustReconcile(t, r, blue)
	g.Expect(waited).To(BeFalse(), "the NAD's deletion waited for its finalizer's removal")
	var nad nadv1.NetworkAttachmentDefinition
	err := apiserver.Get(ctx, client.ObjectKeyFromObject(blue), &nad)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the NAD is still there: %v", nad.Finalizers)
}

// TestRemoveFinalizerLeavesAReplacedObject: the finalizer's removal names
// the object's UID, so a NAD of the same name made since the read keeps
// its finalizer, and the caller hears of it.
func TestRemoveFinalizerLeavesAReplacedObject(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	nad := func(uid types.UID) *nadv1.NetworkAttachmentDefinition {
		return &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "net", UID: uid,
			Finalizers: []string{ovnk.FinalizerUserDefinedNetworkProtection}}}
	}
	apiserver := fakeNetworkClient(t, nil, nad("uid-new"))
	g.Expect(removeFinalizer(ctx, apiserver, nad("uid-old"), ovnk.FinalizerUserDefinedNetworkProtection)).NotTo(Succeed())
	got := nad("")
	g.Expect(apiserver.Get(ctx, client.ObjectKeyFromObject(got), got)).To(Succeed())
	g.Expect(got.Finalizers).To(ConsistOf(ovnk.FinalizerUserDefinedNetworkProtection))
	g.Expect(removeFinalizer(ctx, apiserver, got, ovnk.FinalizerUserDefinedNetworkProtection)).To(Succeed())
	g.Expect(got.Finalizers).To(BeEmpty())
}

// testUDNReconciler is the UDN reconciler over cache (its informers' view)
// and live (the apiserver), with the default configuration; singleWriter
// as under leader election.
func testUDNReconciler(cache, live client.Client, singleWriter bool) *udnReconciler {
	cfg := DefaultConfig()
	cfg.SingleWriter = singleWriter
	return &udnReconciler{&networkReconciler{client: cache, reader: live, cfg: &cfg,
		ids: networkids.New(live, cfg.networkIDOptions(), nil), recorder: &eventSink{}, owner: "test"}}
}

// blueUDN is the Primary Layer2 UDN blue of namespace ns, on cidr.
func blueUDN(ns, cidr string) *udnv1.UserDefinedNetwork {
	u := testobj.MakeUDN(ns, "blue").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, udnv1.CIDR(cidr))).Obj()
	u.UID = "uid-blue"
	return u
}

// mustReconcile reconciles u with r and fails the test on an error.
func mustReconcile(t *testing.T, r *udnReconciler, u client.Object) {
	t.Helper()
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(u)}); err != nil {
		t.Fatalf("reconcile %s: %v", client.ObjectKeyFromObject(u), err)
	}
}
