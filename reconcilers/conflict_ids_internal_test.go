package reconcilers

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers/networkids"
)

// TestConflictedWriteKeepsTheNextIDs: a network whose writes of its IDs
// meet conflicts (another client updated the UDN meanwhile, twice: the
// reconcile writes once more itself) records, on the next reconcile, the
// IDs the failed writes carried, and the next network gets the ID after
// them: the failed writes skip no network ID or tunnel key.
func TestConflictedWriteKeepsTheNextIDs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	blue, green := primaryLayer2UDN("blue"), primaryLayer2UDN("green")
	conflicts := 2
	c := fakeNetworkClient(t, func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
		if obj.GetNamespace() == "blue" && conflicts > 0 {
			conflicts--
			return apierrors.NewConflict(udnv1.GroupVersion.WithResource("userdefinednetworks").GroupResource(), obj.GetName(), nil)
		}
		return c.Update(ctx, obj, opts...)
	}, blue, green)

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
