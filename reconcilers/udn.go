package reconcilers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/fairqueue"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers/networkids"
)

// udnReconciler keeps one NAD per UserDefinedNetwork, in its namespace.
type udnReconciler struct{ *networkReconciler }

func (r *udnReconciler) setup(mgr ctrl.Manager) error {
	return r.watchConflicts(ctrl.NewControllerManagedBy(mgr), kindUDN).
		Named("userdefinednetwork").
		For(&udnv1.UserDefinedNetwork{}).
		// A NAD maps to the UDN of the same namespace and name, owned or
		// not: a foreign NAD going away unblocks the UDN at once.
		Watches(&nadv1.NetworkAttachmentDefinition{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
			return []ctrl.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
		})).
		WatchesMetadata(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
			return r.networksOfPod(ctx, o, kindUDN)
		}), builder.WithPredicates(podNetworksChanged)).
		WithOptions(r.queueOptions()).
		Complete(r)
}

// queueOptions: a fair queue across namespaces (Config.FairQueue).
func (r *udnReconciler) queueOptions() controller.Options {
	opts := controller.Options{MaxConcurrentReconciles: r.cfg.MaxConcurrentReconciles}
	if r.cfg.FairQueue {
		opts.NewQueue = fairqueue.ByNamespace
	}
	return opts
}

// Reconcile drives the UDN towards its NAD, one phase after another.
func (r *udnReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.runNetwork(ctx, req, r.getUDN)
}

// getUDN reads the UDN, which wants its own namespace; one that is gone
// ends the reconcile.
func (r *udnReconciler) getUDN(ctx context.Context, s *networkScope) (ctrl.Result, error) {
	var udn udnv1.UserDefinedNetwork
	if err := r.client.Get(ctx, s.req.NamespacedName, &udn); err != nil {
		if apierrors.IsNotFound(err) {
			// Gone (its finalizer removed by hand): no check of its
			// IDs will come; networks waiting for one stop waiting.
			r.ids.SetUnverified(networkids.Key(kindUDN, s.req.Namespace, s.req.Name), false)
		}
		return s.Done(ctrl.Result{}, client.IgnoreNotFound(err))
	}
	s.n = network{obj: &udn, kind: kindUDN, spec: udn.Spec.Network(), status: &udn.Status}
	s.namespaces = []string{udn.Namespace}
	return ctrl.Result{}, nil
}

// podNetworksChanged passes pods whose k8s.ovn.org/pod-networks annotation
// appears, changes or goes away (including with the pod).
var podNetworksChanged = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool { return false },
	DeleteFunc: func(e event.DeleteEvent) bool {
		_, ok := e.Object.GetAnnotations()[ovnk.AnnotationPodNetworks]
		return ok
	},
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetAnnotations()[ovnk.AnnotationPodNetworks] != e.ObjectNew.GetAnnotations()[ovnk.AnnotationPodNetworks]
	},
	GenericFunc: func(e event.GenericEvent) bool { return false },
}
