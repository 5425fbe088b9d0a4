package layer2

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/dataplane/topology"
)

// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch

// NewServiceCache returns a cache of exactly the UDN-enabled services
// (--udn-allowed-default-services), not of every Service in the cluster: per
// namespace, a field selector on the name when one service of it is listed,
// the namespace's services otherwise. The manager runs it (mgr.Add).
func NewServiceCache(mgr ctrl.Manager, services []types.NamespacedName) (cache.Cache, error) {
	names := map[string][]string{}
	for _, s := range services {
		names[s.Namespace] = append(names[s.Namespace], s.Name)
	}
	namespaces := map[string]cache.Config{}
	for ns, n := range names {
		c := cache.Config{}
		if len(n) == 1 {
			c.FieldSelector = fields.OneTermEqualSelector("metadata.name", n[0])
		}
		namespaces[ns] = c
	}
	return cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), DefaultNamespaces: namespaces,
		ByObject: map[client.Object]cache.ByObject{&corev1.Service{}: {Transform: trimService}},
	})
}

// trimService keeps what the dataplane reads of a Service: its name and ClusterIPs.
func trimService(obj any) (any, error) {
	if svc, ok := obj.(*corev1.Service); ok {
		svc.ManagedFields, svc.Annotations, svc.Labels = nil, nil, nil
		svc.Spec = corev1.ServiceSpec{ClusterIP: svc.Spec.ClusterIP, ClusterIPs: svc.Spec.ClusterIPs}
		svc.Status = corev1.ServiceStatus{}
	}
	return obj, nil
}

// watchServices requeues every udnkit NAD when a UDN-enabled service
// appears, goes or changes its ClusterIPs: each network's routes follow.
func (r *Reconciler) watchServices() source.Source { return zone.WatchServices(r.Client, r.Services) }

// enabledServices reads the UDN-enabled services that exist, in the flag's
// order, with the ClusterIPs they have: a listed service that does not
// exist is left out (its routes go, or never come), and a headless or
// ExternalName service has no ClusterIP to route.
func (r *Reconciler) enabledServices(ctx context.Context) ([]topology.UDNEnabledService, error) {
	reader := client.Reader(r.Client)
	if r.Services != nil {
		reader = r.Services
	}
	return zone.EnabledServices(ctx, reader, r.Cluster.UDNAllowedDefaultServices)
}
