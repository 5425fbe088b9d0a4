package reconcilers

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/nsselect"
	"github.com/udnkit/udnkit/reconcilers/networkids"
)

// eventSink is a recorder that keeps the reasons of the events it is given.
type eventSink struct{ reasons []string }

func (s *eventSink) Eventf(_ runtime.Object, _ runtime.Object, _, reason, _, _ string, _ ...any) {
	s.reasons = append(s.reasons, reason)
}

func (s *eventSink) AnnotatedEventf(_ runtime.Object, _ runtime.Object, _ map[string]string, _, reason, _, _ string, _ ...any) {
	s.reasons = append(s.reasons, reason)
}

var _ events.EventRecorder = (*eventSink)(nil)

// TestYieldThenStaleCache replays, step by step, the interleaving behind
// TestTwoManagersRacing's rare duplicate. This process gives network X the
// next free IDs and writes them; another writer gives the same IDs to network
// Y in between; this process's check sees the clash and yields (removes X's
// IDs). Its cache still shows X with the IDs it just removed, and X is
// reconciled once more from that stale copy (a NAD event, an earlier requeue).
// That reconcile must not publish Y's network ID in X's NAD.
func TestYieldThenStaleCache(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	x, y := primaryLayer2UDN("x"), primaryLayer2UDN("y")

	var stale *udnv1.UserDefinedNetwork // X as this process's cache last saw it
	c := fakeNetworkClient(t, func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
		if err := c.Update(ctx, obj, opts...); err != nil {
			return err
		}
		if u, ok := obj.(*udnv1.UserDefinedNetwork); ok && u.Name == x.Name && u.Namespace == x.Namespace && stale == nil {
			// The other writer, whose allocator did not know X's
			// IDs, gives Y the same ones right after X's write.
			stale = u.DeepCopy()
			var other udnv1.UserDefinedNetwork
			if err := c.Get(ctx, client.ObjectKeyFromObject(y), &other); err != nil {
				return err
			}
			other.Annotations = map[string]string{
				ovnk.AnnotationNetworkID:  u.Annotations[ovnk.AnnotationNetworkID],
				ovnk.AnnotationTunnelKeys: u.Annotations[ovnk.AnnotationTunnelKeys],
			}
			return c.Update(ctx, &other)
		}
		return nil
	}, x, y)

	cfg := DefaultConfig()
	sink := &eventSink{}
	r := &networkReconciler{client: c, reader: c, cfg: &cfg, ids: networkids.New(c, cfg.networkIDOptions(), nil), recorder: sink, owner: "test"}
	reconcileX := func(obj *udnv1.UserDefinedNetwork) {
		t.Helper()
		_, err := r.reconcileNetwork(ctx, network{obj: obj, kind: kindUDN, spec: obj.Spec.Network(), status: &obj.Status}, []string{obj.Namespace})
		g.Expect(err).NotTo(HaveOccurred())
	}
	get := func(u *udnv1.UserDefinedNetwork) *udnv1.UserDefinedNetwork {
		t.Helper()
		var cur udnv1.UserDefinedNetwork
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(u), &cur)).To(Succeed())
		return &cur
	}
	// nadIDs returns the network ID X's NAD publishes ("" without a NAD).
	nadID := func() string {
		t.Helper()
		var nad nadv1.NetworkAttachmentDefinition
		if err := c.Get(ctx, client.ObjectKey{Namespace: "x", Name: "net"}, &nad); err != nil {
			return ""
		}
		return nad.Annotations[ovnk.AnnotationNetworkID]
	}

	// X gets IDs, Y gets the same ones from the other writer, X yields.
	reconcileX(get(x))
	g.Expect(stale).NotTo(BeNil())
	yID := get(y).Annotations[ovnk.AnnotationNetworkID]
	g.Expect(yID).NotTo(BeEmpty())
	g.Expect(get(x).Annotations).NotTo(HaveKey(ovnk.AnnotationNetworkID), "X should have yielded")
	g.Expect(sink.reasons).To(ContainElement("NetworkIDConflict"))
	g.Expect(nadID()).To(BeEmpty(), "no NAD before X's IDs are verified")

	// The stale copy still records Y's IDs on X.
	g.Expect(stale.Annotations[ovnk.AnnotationNetworkID]).To(Equal(yID))
	reconcileX(stale)
	g.Expect(nadID()).NotTo(Equal(yID), "X's NAD publishes network ID %s, which Y holds", yID)

	// With fresh reads X settles on IDs of its own, and its NAD agrees.
	for range 3 {
		reconcileX(get(x))
	}
	xID := get(x).Annotations[ovnk.AnnotationNetworkID]
	g.Expect(xID).NotTo(BeEmpty())
	g.Expect(xID).NotTo(Equal(yID))
	g.Expect(get(x).Annotations[ovnk.AnnotationTunnelKeys]).NotTo(Equal(get(y).Annotations[ovnk.AnnotationTunnelKeys]))
	g.Expect(nadID()).To(Equal(xID))
	g.Expect(get(y).Annotations[ovnk.AnnotationNetworkID]).To(Equal(yID), "Y keeps its IDs")
}

// primaryLayer2UDN is a Primary Layer2 UDN "net" of namespace ns.
func primaryLayer2UDN(ns string) *udnv1.UserDefinedNetwork {
	spec := udnv1.UserDefinedNetworkSpec{Topology: udnv1.NetworkTopologyLayer2,
		Layer2: &udnv1.Layer2Config{Role: udnv1.NetworkRolePrimary, Subnets: []udnv1.CIDR{"10.30.0.0/16"}}}
	return &udnv1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "net", UID: types.UID("uid-" + ns)}, Spec: spec}
}

// fakeNetworkClient is a fake client holding objs, with the indexes the
// network reconciler reads (NAD controller, CUDN conflicts), whose updates
// go through update (nil: stored as they are);
// status writes are dropped (not what these tests look at).
func fakeNetworkClient(t *testing.T, update func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error, objs ...client.Object) client.WithWatch {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, udnv1.AddToScheme, nadv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithIndex(&nadv1.NetworkAttachmentDefinition{}, indexNADController, func(o client.Object) []string {
			if ref := metav1.GetControllerOf(o); ref != nil {
				return []string{string(ref.UID)}
			}
			return nil
		}).
		WithIndex(&udnv1.ClusterUserDefinedNetwork{}, indexCUDNNamespaces, nsselect.IndexKeys).
		WithIndex(&udnv1.ClusterUserDefinedNetwork{}, indexCUDNSubnetConflict, cudnSubnetConflictKeys).
		WithInterceptorFuncs(interceptor.Funcs{
			Update: update,
			SubResourceApply: func(context.Context, client.Client, string, runtime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
				return nil
			},
		}).Build()
}
