package addresses

import (
	"context"

	ipamclaimsv1alpha1 "github.com/k8snetworkplumbingwg/ipamclaims/pkg/crd/ipamclaims/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/udnkit/udnkit/reconcilers/addresses/attach"
)

// claimReleaser frees an IPAMClaim's addresses when the claim is deleted,
// as upstream's cluster manager releases them on the claim's delete event
// (IPAMClaimReconciler.Reconcile(claim, nil) in
// pkg/persistentips/allocator.go). Addresses a pod still holds stay held.
type claimReleaser struct{ r *Reconciler }

func (c claimReleaser) setup(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("addresses-ipamclaims").
		For(&ipamclaimsv1alpha1.IPAMClaim{}, builder.WithPredicates(claimDeleted)).
		Complete(c)
}

// claimDeleted passes IPAMClaim deletions only.
var claimDeleted = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	UpdateFunc:  func(event.UpdateEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// Reconcile releases a claim that no longer exists.
func (c claimReleaser) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	err := c.r.client.Get(ctx, req.NamespacedName, &ipamclaimsv1alpha1.IPAMClaim{})
	if !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	c.r.releaseClaim(attach.ClaimOwner(req.Namespace, req.Name))
	return reconcile.Result{}, nil
}

// releaseClaim frees the claim's addresses in every pool where no pod holds
// them (mu held).
func (r *Reconciler) releaseClaim(owner string) {
	r.attach.ReleaseClaim(owner)
	for id, st := range r.networks {
		if r.holders[holderKey{id, owner}] == 0 && st.pool.Release(owner) {
			r.observePools(id)
		}
	}
}

// claimGone says whether the claim an owner names is known deleted (the
// cache says not found); a cluster that serves no IPAMClaims, or a failed
// read, keeps the addresses.
func (r *Reconciler) claimGone(owner string) bool {
	nn, ok := attach.ClaimOf(owner)
	if !ok {
		return false
	}
	return apierrors.IsNotFound(r.client.Get(context.Background(), nn, &ipamclaimsv1alpha1.IPAMClaim{}))
}
