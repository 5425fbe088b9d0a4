package reconcilers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk/nsselect"
	"github.com/udnkit/udnkit/reconcilers/networkids"
)

// cudnReconciler keeps one NAD per ClusterUserDefinedNetwork in every
// namespace its selector matches.
type cudnReconciler struct{ *networkReconciler }

func (r *cudnReconciler) setup(mgr ctrl.Manager) error {
	return r.watchConflicts(ctrl.NewControllerManagedBy(mgr), kindCUDN).
		Named("clusteruserdefinednetwork").
		For(&udnv1.ClusterUserDefinedNetwork{}).
		Watches(&nadv1.NetworkAttachmentDefinition{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
			return []ctrl.Request{{NamespacedName: types.NamespacedName{Name: o.GetName()}}}
		})).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.cudnsSelecting)).
		WatchesMetadata(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
			return r.networksOfPod(ctx, o, kindCUDN)
		}), builder.WithPredicates(podNetworksChanged)).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.cfg.MaxConcurrentReconciles}).
		Complete(r)
}

// cudnsSelecting: a namespace that appears, goes, or changes labels changes
// the selection of the CUDNs whose selector matches it (for a label change
// the handler maps the old and the new namespace both). Not every CUDN: each
// namespace created would otherwise reconcile every CUDN.
func (r *cudnReconciler) cudnsSelecting(ctx context.Context, ns client.Object) []ctrl.Request {
	cudns, err := nsselect.Selecting(ctx, r.client, indexCUDNNamespaces, ns, func(*udnv1.ClusterUserDefinedNetwork) bool { return true })
	if err != nil {
		return nil
	}
	out := make([]ctrl.Request, 0, len(cudns))
	for _, cu := range cudns {
		out = append(out, ctrl.Request{NamespacedName: types.NamespacedName{Name: cu.Name}})
	}
	return out
}

// Reconcile drives the CUDN towards one NAD in each namespace it selects,
// one phase after another.
func (r *cudnReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.runNetwork(ctx, req, r.getCUDN, r.selectNamespaces)
}

// getCUDN reads the CUDN; one that is gone ends the reconcile.
func (r *cudnReconciler) getCUDN(ctx context.Context, s *networkScope) (ctrl.Result, error) {
	var cudn udnv1.ClusterUserDefinedNetwork
	if err := r.client.Get(ctx, s.req.NamespacedName, &cudn); err != nil {
		if apierrors.IsNotFound(err) {
			// Gone (its finalizer removed by hand): no check of its
			// IDs will come; networks waiting for one stop waiting.
			r.ids.SetUnverified(networkids.Key(kindCUDN, "", s.req.Name), false)
		}
		return s.Done(ctrl.Result{}, client.IgnoreNotFound(err))
	}
	s.n = network{obj: &cudn, kind: kindCUDN, spec: cudn.Spec.Network, status: &cudn.Status,
		uplinks: cudn.Spec.Uplinks, conditions: cudn.Spec.NotImplementedConditions()}
	return ctrl.Result{}, nil
}

// selectNamespaces wants the live namespaces the CUDN's selector matches
// (none while it is being deleted); an invalid selector is reported in the
// status and ends the reconcile.
func (r *cudnReconciler) selectNamespaces(ctx context.Context, s *networkScope) (ctrl.Result, error) {
	cudn := s.n.obj.(*udnv1.ClusterUserDefinedNetwork)
	if !cudn.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(&cudn.Spec.NamespaceSelector)
	if err != nil {
		msg := fmt.Sprintf("spec.namespaceSelector is invalid: %v", err)
		r.event(cudn, eventSyncError, msg)
		return s.Done(ctrl.Result{}, r.applyStatus(ctx, s.n, metav1.ConditionFalse, udnv1.ReasonSyncError, msg, nil))
	}
	selected, err := nsselect.Namespaces(ctx, r.client, sel)
	if err != nil {
		return s.Done(ctrl.Result{}, err)
	}
	for _, ns := range selected {
		if ns.DeletionTimestamp.IsZero() && ns.Status.Phase != corev1.NamespaceTerminating {
			s.namespaces = append(s.namespaces, ns.Name)
		}
	}
	return ctrl.Result{}, nil
}
