package reconcilers

import (
	"context"
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk/netconf"
)

// TestAppendedSubnetCheckedAgainstANADTheCacheMisses replays the
// interleaving behind TestHeldBackLayer3SubnetGetsNoHostSubnets' rare
// failure: another network's NAD is created and reported (its UDN says
// NADCreated), then a Layer3 network appends a subnet over it, and the
// append's reconcile runs before this process's NAD informer has delivered
// that NAD (informers of different kinds lag independently). The append
// must be held back all the same: once the NAD carries the appended subnet
// it is no longer "appended", so a check that lets it through is never
// made again and both networks stay True while they overlap.
func TestAppendedSubnetCheckedAgainstANADTheCacheMisses(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "held"
	green := testobj.MakeUDN(ns, "green").Spec(testobj.Layer3Hosts(udnv1.NetworkRolePrimary, 25, "10.230.0.0/24")).Obj()
	green.UID = "uid-green"
	backend := testobj.MakeUDN(ns, "backend").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.231.0.0/16")).Obj()
	backend.UID = "uid-backend"

	applied := map[string]metav1.Condition{} // UDN name → the NetworkCreated it was last given
	apiserver := fakeNetworkClient(t, nil, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, green, backend)
	apiserver = interceptor.NewClient(apiserver, interceptor.Funcs{
		SubResourceApply: func(_ context.Context, _ client.Client, _ string, obj runtime.ApplyConfiguration, _ ...client.SubResourceApplyOption) error {
			b, err := json.Marshal(obj)
			if err != nil {
				return err
			}
			var u udnv1.UserDefinedNetwork
			if err := json.Unmarshal(b, &u); err != nil {
				return err
			}
			if c := meta.FindStatusCondition(u.Status.Conditions, udnv1.ConditionNetworkCreated); c != nil {
				applied[u.Name] = *c
			}
			return nil
		},
	})
	// The cache: the apiserver's objects, but for the NADs not delivered
	// yet.
	undelivered := map[types.NamespacedName]bool{}
	cache := cacheMissingNADs(apiserver, undelivered)

	r := testUDNReconciler(cache, apiserver, false)
	reconcile := func(u *udnv1.UserDefinedNetwork) {
		t.Helper()
		_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(u)})
		g.Expect(err).NotTo(HaveOccurred())
	}
	greenSubnets := func() string {
		t.Helper()
		var nad nadv1.NetworkAttachmentDefinition
		g.Expect(apiserver.Get(ctx, client.ObjectKeyFromObject(green), &nad)).To(Succeed())
		nc, err := netconf.Parse(nad.Spec.Config)
		g.Expect(err).NotTo(HaveOccurred())
		return nc.Subnets
	}

	reconcile(green)
	reconcile(backend)
	g.Expect(greenSubnets()).To(Equal("10.230.0.0/24/25"))
	g.Expect(applied).To(HaveKeyWithValue("backend", HaveField("Reason", udnv1.ReasonNADCreated)))

	// backend's NAD exists and backend says so; the cache has not seen the
	// NAD yet when green's append is reconciled.
	undelivered[client.ObjectKeyFromObject(backend)] = true
	g.Expect(apiserver.Get(ctx, client.ObjectKeyFromObject(green), green)).To(Succeed())
	green.Spec.Layer3.Subnets = append(green.Spec.Layer3.Subnets, udnv1.Layer3Subnet{CIDR: "10.231.0.0/16", HostSubnet: 25})
	g.Expect(apiserver.Update(ctx, green)).To(Succeed())
	reconcile(green)

	g.Expect(greenSubnets()).To(Equal("10.230.0.0/24/25"), "the NAD got the appended subnet over backend's")
	g.Expect(applied["green"].Status).To(Equal(metav1.ConditionFalse))
	g.Expect(applied["green"].Reason).To(Equal(udnv1.ReasonSubnetConflict))
	g.Expect(applied["green"].Message).To(ContainSubstring("spec.layer3.subnets[1] 10.231.0.0/16 overlaps subnet 10.231.0.0/16 of NetworkAttachmentDefinition held/backend"))

	// With no NAD over the appended subnet, cached or not, it goes
	// through.
	var nad nadv1.NetworkAttachmentDefinition
	g.Expect(apiserver.Get(ctx, client.ObjectKeyFromObject(backend), &nad)).To(Succeed())
	nad.Finalizers = nil
	g.Expect(apiserver.Update(ctx, &nad)).To(Succeed())
	g.Expect(apiserver.Delete(ctx, &nad)).To(Succeed())
	g.Expect(apiserver.Get(ctx, client.ObjectKeyFromObject(green), green)).To(Succeed())
	reconcile(green)
	g.Expect(greenSubnets()).To(Equal("10.230.0.0/24/25,10.231.0.0/16/25"))
	g.Expect(applied["green"].Reason).To(Equal(udnv1.ReasonNADCreated))
}

// cacheMissingNADs is a cache over apiserver that has not delivered the NADs
// undelivered names: a Get says not found, a List leaves them out.
func cacheMissingNADs(apiserver client.WithWatch, undelivered map[types.NamespacedName]bool) client.WithWatch {
	return interceptor.NewClient(apiserver, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*nadv1.NetworkAttachmentDefinition); ok && undelivered[key] {
				return apierrors.NewNotFound(nadv1.Resource("network-attachment-definitions"), key.Name)
			}
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if err := c.List(ctx, list, opts...); err != nil {
				return err
			}
			if nads, ok := list.(*nadv1.NetworkAttachmentDefinitionList); ok {
				kept := nads.Items[:0]
				for _, nad := range nads.Items {
					if !undelivered[client.ObjectKeyFromObject(&nad)] {
						kept = append(kept, nad)
					}
				}
				nads.Items = kept
			}
			return nil
		},
	})
}
