package zone

import (
	"context"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/udnkit/udnkit/dataplane/topology"
)

// WatchServices is a source of the UDN-enabled services of services (a
// NewServiceCache) that requeues every udnkit NAD c lists when one appears,
// goes or changes its ClusterIPs: the Layer2 and Layer3 controllers' routes
// follow them.
func WatchServices(c client.Client, services cache.Cache) source.Source {
	nads := NADsIn(c, "")
	return source.Kind(services, &corev1.Service{},
		handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, s *corev1.Service) []reconcile.Request { return nads(ctx, s) }),
		predicate.TypedFuncs[*corev1.Service]{
			UpdateFunc: func(e event.TypedUpdateEvent[*corev1.Service]) bool {
				return !slices.Equal(e.ObjectOld.Spec.ClusterIPs, e.ObjectNew.Spec.ClusterIPs)
			},
		})
}

// EnabledServices reads the UDN-enabled services of keys that exist, in
// order, with the ClusterIPs they have: a listed service that does not
// exist is left out (its routes go, or never come), and a headless or
// ExternalName service has no ClusterIP to route. The Layer2 and Layer3
// controllers route them.
func EnabledServices(ctx context.Context, reader client.Reader, keys []types.NamespacedName) ([]topology.UDNEnabledService, error) {
	var out []topology.UDNEnabledService
	for _, key := range keys {
		var svc corev1.Service
		if err := reader.Get(ctx, key, &svc); apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return nil, err
		}
		s := topology.UDNEnabledService{Key: key.String()}
		for _, ip := range svc.Spec.ClusterIPs {
			if a, err := netip.ParseAddr(ip); err == nil {
				s.ClusterIPs = append(s.ClusterIPs, a.Unmap())
			}
		}
		out = append(out, s)
	}
	return out, nil
}
