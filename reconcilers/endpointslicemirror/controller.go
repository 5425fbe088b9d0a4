// Package endpointslicemirror mirrors the EndpointSlices of Services in
// namespaces whose Primary network is a user-defined one, as OVN-Kubernetes'
// cluster manager does (pkg/clustermanager/endpointslicemirror): for each
// default EndpointSlice (managed by Kubernetes' EndpointSlice controller)
// one mirrored slice, managed by endpointslice-mirror-controller.k8s.ovn.org,
// with the same ports and address type and each pod endpoint's address on
// the Primary network (the pod's k8s.ovn.org/pod-networks entry for it). The
// services controller of the network programs load balancers from the
// mirrors. Invariants: at most one mirror per default slice (more are all
// deleted and one written again); a mirror without a default slice, or in a
// namespace without a Primary user-defined network, is deleted; the mirror
// never carries kubernetes.io/service-name, so Kubernetes' own proxies never
// read it.
package endpointslicemirror

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/fairqueue"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers/internal/primarynet"
)

// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups="",resources=namespaces;pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=k8s.ovn.org,resources=userdefinednetworks;clusteruserdefinednetworks,verbs=get;list;watch

// Options configure the controller.
type Options struct {
	// MaxConcurrentReconciles is the number of workers (at least 1).
	MaxConcurrentReconciles int
	// FIFO replaces the queue that serves namespaces in turn
	// (fairqueue.ByNamespace) with controller-runtime's default.
	FIFO bool
}

// Reconciler writes the mirror of one default EndpointSlice; its requests
// are the default slices' namespace/name, whether or not the slice exists.
type Reconciler struct {
	client client.Client
}

// SetupWithManager registers the mirror controller with mgr.
func SetupWithManager(mgr ctrl.Manager, o Options) error {
	if err := setupIndexes(mgr); err != nil {
		return err
	}
	r := &Reconciler{client: mgr.GetClient()}
	opts := controller.Options{MaxConcurrentReconciles: max(o.MaxConcurrentReconciles, 1)}
	if !o.FIFO {
		opts.NewQueue = fairqueue.ByNamespace
	}
	return r.watch(ctrl.NewControllerManagedBy(mgr).Named("endpointslicemirror")).WithOptions(opts).Complete(r)
}

// Reconcile makes the mirrors of the default slice req what the slice and
// its namespace's Primary network say.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	mirrors, err := r.mirrorsOf(ctx, req.NamespacedName)
	if err != nil {
		return reconcile.Result{}, err
	}
	net, err := r.primaryNetwork(ctx, req.Namespace)
	if err != nil {
		return reconcile.Result{}, err
	}
	if net == nil {
		return reconcile.Result{}, r.delete(ctx, mirrors...)
	}
	if len(mirrors) > 1 {
		// As upstream: delete them all and write one again.
		if err := r.delete(ctx, mirrors...); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, fmt.Errorf("found and removed %d mirrored EndpointSlices of %s", len(mirrors), req.NamespacedName)
	}
	var current *discoveryv1.EndpointSlice
	if len(mirrors) == 1 {
		current = &mirrors[0]
	}
	source, err := r.source(ctx, req.NamespacedName)
	if err != nil {
		return reconcile.Result{}, err
	}
	if source == nil {
		if current == nil {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, r.delete(ctx, *current)
	}
	want, err := desired(current, source, net.NetworkName(), net.NADKey(req.Namespace), r.pod(ctx))
	if err != nil {
		return reconcile.Result{}, err
	}
	switch {
	case current == nil && len(want.Endpoints) == 0:
		// As upstream: no empty mirror is created; an existing one is kept
		// (emptied) while its source lasts.
		return reconcile.Result{}, nil
	case current == nil:
		return reconcile.Result{}, r.create(ctx, want)
	case equality.Semantic.DeepEqual(current, want):
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, r.client.Update(ctx, want)
}

// create writes a new mirror and waits (briefly) until the cache holds it:
// the key's next reconcile must find it, or it would write a second.
func (r *Reconciler) create(ctx context.Context, m *discoveryv1.EndpointSlice) error {
	if err := r.client.Create(ctx, m); err != nil {
		return err
	}
	log.FromContext(ctx).V(1).Info("created the mirrored EndpointSlice", "name", m.Name)
	return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		err := r.client.Get(ctx, client.ObjectKeyFromObject(m), &discoveryv1.EndpointSlice{})
		return err == nil, client.IgnoreNotFound(err)
	})
}

func (r *Reconciler) delete(ctx context.Context, slices ...discoveryv1.EndpointSlice) error {
	var errs []error
	for i := range slices {
		if err := r.client.Delete(ctx, &slices[i], client.Preconditions{UID: &slices[i].UID}); client.IgnoreNotFound(err) != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// mirrorsOf lists the mirrors whose source annotation names key's slice.
func (r *Reconciler) mirrorsOf(ctx context.Context, key types.NamespacedName) ([]discoveryv1.EndpointSlice, error) {
	var list discoveryv1.EndpointSliceList
	if err := r.client.List(ctx, &list, client.InNamespace(key.Namespace),
		client.MatchingLabels{discoveryv1.LabelManagedBy: ovnk.EndpointSliceMirrorControllerName}); err != nil {
		return nil, err
	}
	var out []discoveryv1.EndpointSlice
	for _, s := range list.Items {
		if src, ok := s.Annotations[ovnk.AnnotationSourceEndpointSlice]; ok && src == key.Name {
			out = append(out, s)
		}
	}
	return out, nil
}

// source is the default slice key names; nil when it is gone, is not a
// default slice, or lists FQDNs (as upstream, those have no mirror).
func (r *Reconciler) source(ctx context.Context, key types.NamespacedName) (*discoveryv1.EndpointSlice, error) {
	var s discoveryv1.EndpointSlice
	if err := r.client.Get(ctx, key, &s); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if !isDefault(&s) || s.AddressType == discoveryv1.AddressTypeFQDN {
		return nil, nil
	}
	return &s, nil
}

// primaryNetwork is the namespace's Primary user-defined network, nil when
// the namespace is gone, does not carry
// k8s.ovn.org/primary-user-defined-network (upstream's network manager
// then answers the default network) or has none.
func (r *Reconciler) primaryNetwork(ctx context.Context, namespace string) (*primarynet.Network, error) {
	var ns corev1.Namespace
	if err := r.client.Get(ctx, client.ObjectKey{Name: namespace}, &ns); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if _, ok := ns.Labels[ovnk.LabelPrimaryUserDefinedNetwork]; !ok {
		return nil, nil
	}
	return primarynet.Find(ctx, r.client, indexCUDNNamespaces, namespace, udnv1.NetworkSpec.IsPrimary)
}

// pod reads pods from the cache; a pod that is gone is nil.
func (r *Reconciler) pod(ctx context.Context) podLookup {
	return func(namespace, name string) (*corev1.Pod, error) {
		var p corev1.Pod
		if err := r.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &p); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			return nil, err
		}
		return &p, nil
	}
}
