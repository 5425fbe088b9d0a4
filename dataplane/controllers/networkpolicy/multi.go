package networkpolicy

import (
	"context"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/dataplane/topology/networkpolicy"
)

// MultiNetworkPolicyGVK is the k8s.cni.cncf.io MultiNetworkPolicy's kind,
// read unstructured (its spec has NetworkPolicy's shape).
var MultiNetworkPolicyGVK = schema.GroupVersionKind{Group: "k8s.cni.cncf.io", Version: "v1beta1", Kind: "MultiNetworkPolicy"}

func multiNetworkPolicy() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(MultiNetworkPolicyGVK)
	return u
}

// multiPolicyChanged passes a MultiNetworkPolicy's creation after the
// initial list, its deletion, and a change of its spec or its policy-for.
var multiPolicyChanged = predicate.Funcs{CreateFunc: zone.CreatedLater, UpdateFunc: func(e event.UpdateEvent) bool {
	return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
		e.ObjectOld.GetAnnotations()[networkpolicy.AnnotationPolicyFor] != e.ObjectNew.GetAnnotations()[networkpolicy.AnnotationPolicyFor]
}}

// listMultiPolicies lists every MultiNetworkPolicy.
func (r *Reconciler) listMultiPolicies(ctx context.Context) (*unstructured.UnstructuredList, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(MultiNetworkPolicyGVK.GroupVersion().WithKind(MultiNetworkPolicyGVK.Kind + "List"))
	return list, r.Client.List(ctx, list)
}

// multiSelectsNamespaces says whether a MultiNetworkPolicy selects
// namespaces (or the list fails: then any may).
func (r *Reconciler) multiSelectsNamespaces(ctx context.Context) bool {
	list, err := r.listMultiPolicies(ctx)
	if err != nil {
		return true
	}
	for i := range list.Items {
		if np, err := networkpolicy.ConvertMultiNetworkPolicy(list.Items[i].Object); err == nil && networkpolicy.SelectsNamespaces(&np) {
			return true
		}
	}
	return false
}

// multiPolicies are the MultiNetworkPolicies whose policy-for names one of
// nadKeys, as NetworkPolicies; one that does not convert is logged and
// left out.
func (r *Reconciler) multiPolicies(ctx context.Context, nadKeys map[string]bool) ([]networkingv1.NetworkPolicy, error) {
	list, err := r.listMultiPolicies(ctx)
	if err != nil {
		return nil, err
	}
	var out []networkingv1.NetworkPolicy
	for i := range list.Items {
		u := &list.Items[i]
		if !networkpolicy.PolicyFor(u.GetNamespace(), u.GetAnnotations(), nadKeys) {
			continue
		}
		np, err := networkpolicy.ConvertMultiNetworkPolicy(u.Object)
		if err != nil {
			log.FromContext(ctx).Error(err, "MultiNetworkPolicy left out", "policy", u.GetNamespace()+"/"+u.GetName())
			continue
		}
		out = append(out, np)
	}
	return out, nil
}
