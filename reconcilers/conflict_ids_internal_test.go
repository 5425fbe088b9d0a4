package reconcilers

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers/networkids"
)

// TestConflictedWriteKeepsTheNextIDs: a network whose first write of its
// IDs meets a conflict (another client updated the UDN meanwhile) records,
// on the retry, the IDs the failed write carried, and the next network gets
// the ID after them: the failed write skips no network ID or tunnel key.
// (A live comparison once saw the second of two networks get ID 3 instead
// of upstream's 2.)
func TestConflictedWriteKeepsTheNextIDs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	scheme := runtime.NewScheme()
	g.Expect(corev1.AddToScheme(scheme)).To(Succeed())
	g.Expect(udnv1.AddToScheme(scheme)).To(Succeed())
	g.Expect(nadv1.AddToScheme(scheme)).To(Succeed())

	spec := udnv1.UserDefinedNetworkSpec{Topology: udnv1.NetworkTopologyLayer2,
		Layer2: &udnv1.Layer2Config{Role: udnv1.NetworkRolePrimary, Subnets: []udnv1.CIDR{"10.30.0.0/16"}}}
	blue := &udnv1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "blue", Name: "net", UID: "uid-blue"}, Spec: spec}
	green := &udnv1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "green", Name: "net", UID: "uid-green"}, Spec: spec}

	conflicts := 1
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(blue, green).
		WithIndex(&nadv1.NetworkAttachmentDefinition{}, indexNADController, func(o client.Object) []string {
			if ref := metav1.GetControllerOf(o); ref != nil {
				return []string{string(ref.UID)}
			}
			return nil
		}).
		WithInterceptorFuncs(interceptor.Funcs{
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				if obj.GetNamespace() == "blue" && conflicts > 0 {
					conflicts--
					return apierrors.NewConflict(udnv1.GroupVersion.WithResource("userdefinednetworks").GroupResource(), obj.GetName(), nil)
				}
				return c.Update(ctx, obj, opts...)
			},
			SubResourceApply: func(context.Context, client.Client, string, runtime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
				return nil
			},
		}).Build()

	cfg := DefaultConfig()
	r := &networkReconciler{client: c, reader: c, cfg: &cfg, ids: networkids.New(c, cfg.networkIDOptions(), nil), recorder: &eventSink{}, owner: "test"}
	reconcile := func(u *udnv1.UserDefinedNetwork) map[string]string {
		t.Helper()
		var cur udnv1.UserDefinedNetwork
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(u), &cur)).To(Succeed())
		_, err := r.reconcileNetwork(ctx, network{obj: &cur, kind: kindUDN, spec: cur.Spec.Network(), status: &cur.Status}, []string{cur.Namespace})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(u), &cur)).To(Succeed())
		return cur.Annotations
	}

	g.Expect(reconcile(blue)).NotTo(HaveKey(ovnk.AnnotationNetworkID), "the conflicted write records nothing")
	g.Expect(conflicts).To(BeZero())
	first := reconcile(blue)
	g.Expect(first).To(HaveKeyWithValue(ovnk.AnnotationNetworkID, "1"), "the retry records the IDs the failed write carried")
	next := reconcile(green)
	g.Expect(next).To(HaveKeyWithValue(ovnk.AnnotationNetworkID, "2"), "the next network gets the next ID")
	// Each Layer2 network's keys: its switch's legacy key (from its ID),
	// then its transit router's from the allocated range.
	keys := func(id, router int) string {
		legacy, err := ovnk.LegacyTransitSwitchKey(id)
		g.Expect(err).NotTo(HaveOccurred())
		return fmt.Sprintf("[%d,%d]", legacy, router)
	}
	g.Expect(first).To(HaveKeyWithValue(ovnk.AnnotationTunnelKeys, keys(1, cfg.TunnelKeyFirst)))
	g.Expect(next).To(HaveKeyWithValue(ovnk.AnnotationTunnelKeys, keys(2, cfg.TunnelKeyFirst+1)), "and the next transit router key")
}
