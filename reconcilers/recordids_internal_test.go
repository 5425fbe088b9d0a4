package reconcilers

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
)

// TestIDsRecordedOverAnUnrelatedWrite: another write lands on a new UDN
// between the reconcile's read and its write of the IDs (the node
// controller's status condition on a new Layer3 network does). When that
// write changed neither the spec nor the annotations the IDs were chosen
// from, the same reconcile writes the IDs again and creates the NAD; when
// it changed the annotations (another writer's IDs), nothing is written
// over it and the reconcile comes back later.
func TestIDsRecordedOverAnUnrelatedWrite(t *testing.T) {
	for _, c := range []struct {
		name    string
		meddle  func(*udnv1.UserDefinedNetwork)
		written bool
	}{
		{"a label", func(u *udnv1.UserDefinedNetwork) { u.Labels = map[string]string{"team": "blue"} }, true},
		{"another writer's network ID", func(u *udnv1.UserDefinedNetwork) {
			u.Annotations = map[string]string{ovnk.AnnotationNetworkID: "77"}
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			const ns = "raced"
			blue := testobj.MakeUDN(ns, "blue").Spec(testobj.Layer3Hosts(udnv1.NetworkRolePrimary, 24, "10.234.0.0/16")).Obj()
			blue.UID = "uid-blue"
			meddled := false
			apiserver := fakeNetworkClient(t, func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				if u, ok := obj.(*udnv1.UserDefinedNetwork); ok && !meddled {
					meddled = true
					var other udnv1.UserDefinedNetwork
					g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(u), &other)).To(Succeed())
					c.meddle(&other)
					g.Expect(cl.Update(ctx, &other)).To(Succeed())
				}
				return cl.Update(ctx, obj, opts...)
			}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, blue)
			r := testUDNReconciler(apiserver, apiserver, true)
			res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(blue)})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(meddled).To(BeTrue())

			var got udnv1.UserDefinedNetwork
			g.Expect(apiserver.Get(ctx, client.ObjectKeyFromObject(blue), &got)).To(Succeed())
			var nad nadv1.NetworkAttachmentDefinition
			nadErr := apiserver.Get(ctx, client.ObjectKeyFromObject(blue), &nad)
			if c.written {
				g.Expect(res.RequeueAfter).To(BeZero(), "the IDs waited for a requeue")
				g.Expect(got.Labels).To(HaveKeyWithValue("team", "blue"), "the other write was lost")
				g.Expect(got.Annotations).To(HaveKey(ovnk.AnnotationNetworkID))
				g.Expect(got.Finalizers).To(ContainElement(ovnk.FinalizerUserDefinedNetworkProtection))
				g.Expect(nadErr).NotTo(HaveOccurred())
				g.Expect(nad.Annotations[ovnk.AnnotationNetworkID]).To(Equal(got.Annotations[ovnk.AnnotationNetworkID]))
				return
			}
			g.Expect(res.RequeueAfter).To(Equal(conflictRetry))
			g.Expect(got.Annotations).To(Equal(map[string]string{ovnk.AnnotationNetworkID: "77"}), "written over another writer's IDs")
			g.Expect(got.Finalizers).To(BeEmpty())
			g.Expect(apierrors.IsNotFound(nadErr)).To(BeTrue(), "a NAD was created")
		})
	}
}
