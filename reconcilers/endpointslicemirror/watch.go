package endpointslicemirror

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/nsselect"
)

// Cache indexes: indexCUDNNamespaces, CUDNs by the namespaces their
// selector names (nsselect.IndexKeys); indexPods, default EndpointSlices by
// the names of the pods their endpoints reference.
const (
	indexCUDNNamespaces = "endpointslicemirror.cudn.selectedNamespaces"
	indexPods           = "endpointslicemirror.slice.pods"
)

func setupIndexes(mgr interface{ GetFieldIndexer() client.FieldIndexer }) error {
	indexer := mgr.GetFieldIndexer()
	if err := indexer.IndexField(context.Background(), &udnv1.ClusterUserDefinedNetwork{}, indexCUDNNamespaces, nsselect.IndexKeys); err != nil {
		return err
	}
	return indexer.IndexField(context.Background(), &discoveryv1.EndpointSlice{}, indexPods, func(o client.Object) []string {
		s, ok := o.(*discoveryv1.EndpointSlice)
		if !ok || !isDefault(s) {
			return nil
		}
		var out []string
		for _, ep := range s.Endpoints {
			if ep.TargetRef != nil && ep.TargetRef.Kind == "Pod" {
				out = append(out, ep.TargetRef.Name)
			}
		}
		return out
	})
}

// watch adds the controller's sources: every EndpointSlice (a default one
// is its own request, a mirror its source's), the pods whose
// k8s.ovn.org/pod-networks changes (the default slices listing them), and
// the namespaces, UDNs and CUDNs that decide a namespace's Primary network
// (every slice of the namespaces concerned).
func (r *Reconciler) watch(b *builder.TypedBuilder[reconcile.Request]) *builder.TypedBuilder[reconcile.Request] {
	return b.
		Watches(&discoveryv1.EndpointSlice{}, handler.EnqueueRequestsFromMapFunc(sourceOf)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.slicesOfPod), builder.WithPredicates(podNetworksChanged)).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.slicesOfNamespace), builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Watches(&udnv1.UserDefinedNetwork{}, handler.EnqueueRequestsFromMapFunc(r.slicesOfUDN), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&udnv1.ClusterUserDefinedNetwork{}, handler.EnqueueRequestsFromMapFunc(r.slicesOfCUDN), builder.WithPredicates(predicate.GenerationChangedPredicate{}))
}

// sourceOf is the request of a slice: a default slice's own name, a
// mirror's source annotation; none for other slices.
func sourceOf(_ context.Context, o client.Object) []reconcile.Request {
	s, ok := o.(*discoveryv1.EndpointSlice)
	if !ok {
		return nil
	}
	switch {
	case isMirror(s):
		if src, ok := s.Annotations[ovnk.AnnotationSourceEndpointSlice]; ok {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: s.Namespace, Name: src}}}
		}
	case isDefault(s):
		return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(s)}}
	}
	return nil
}

// podNetworksChanged passes a new pod and a pod whose
// k8s.ovn.org/pod-networks changed: the pod's address on its network is
// what the mirror reads from it (a host-network pod's addresses change its
// default slices, which bring it).
var podNetworksChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetAnnotations()[ovnk.AnnotationPodNetworks] != e.ObjectNew.GetAnnotations()[ovnk.AnnotationPodNetworks]
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

func (r *Reconciler) slicesOfPod(ctx context.Context, o client.Object) []reconcile.Request {
	var list discoveryv1.EndpointSliceList
	if err := r.client.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{indexPods: o.GetName()}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, len(list.Items))
	for i := range list.Items {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])}
	}
	return out
}

func (r *Reconciler) slicesOfNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	return r.slicesIn(ctx, o.GetName())
}

func (r *Reconciler) slicesOfUDN(ctx context.Context, o client.Object) []reconcile.Request {
	return r.slicesIn(ctx, o.GetNamespace())
}

// slicesOfCUDN maps a CUDN to the slices of the namespaces its selector
// matches (on an update the handler maps the old CUDN and the new one, so
// namespaces it stops selecting come too).
func (r *Reconciler) slicesOfCUDN(ctx context.Context, o client.Object) []reconcile.Request {
	cu, ok := o.(*udnv1.ClusterUserDefinedNetwork)
	if !ok {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(&cu.Spec.NamespaceSelector)
	if err != nil {
		return nil
	}
	namespaces, err := nsselect.Namespaces(ctx, r.client, sel)
	if err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, ns := range namespaces {
		out = append(out, r.slicesIn(ctx, ns.Name)...)
	}
	return out
}

// slicesIn is the requests of every default slice and mirror of namespace.
func (r *Reconciler) slicesIn(ctx context.Context, namespace string) []reconcile.Request {
	var list discoveryv1.EndpointSliceList
	if err := r.client.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil
	}
	seen := map[reconcile.Request]bool{}
	var out []reconcile.Request
	for i := range list.Items {
		for _, req := range sourceOf(ctx, &list.Items[i]) {
			if !seen[req] {
				seen[req] = true
				out = append(out, req)
			}
		}
	}
	return out
}
