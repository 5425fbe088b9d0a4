package nodes

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/reconcilers/nodes/claims"
)

// verify is write-then-verify for node IDs, tunnel IDs and host subnets, as
// the network controller checks network IDs: after writing, read every
// node straight from the apiserver. Whichever writer reads after both writes
// sees a clash, so the reader resolves it, always the same way: the younger
// node yields (its clashing values are removed; the reconcile of that node,
// here or in the other process, allocates again), the older keeps them.
func (r *reconciler) verify(ctx context.Context, name string, states map[string]*hostSubnetState) (ctrl.Result, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := r.reader.List(ctx, list); err != nil {
		return ctrl.Result{}, fmt.Errorf("checking node IDs and host subnets: %w", err)
	}
	claimsOf := claims.Of
	if r.opts.NodeIDs == NodeIDsRead {
		claimsOf = claims.TunnelsOf
	}
	var mine claims.Claims
	found := false
	for i := range list.Items {
		if list.Items[i].Name == name {
			mine, found = claimsOf(&list.Items[i]), true
		}
	}
	if !found {
		r.unverified.Set(name, false)
		return ctrl.Result{}, nil
	}
	var yielded, retry bool
	for i := range list.Items {
		o := &list.Items[i]
		if o.Name == name {
			continue
		}
		loser, lost, err := r.resolveClash(ctx, mine, claimsOf(o), states)
		if err != nil {
			return ctrl.Result{}, err
		}
		retry = retry || lost
		if loser == name {
			yielded = true
			break // this node's annotations changed; the next reconcile checks again
		}
	}
	if yielded || retry {
		return ctrl.Result{RequeueAfter: conflictRetry + time.Duration(rand.Int64N(int64(conflictRetry)))}, nil
	}
	r.unverified.Set(name, false)
	return ctrl.Result{}, nil
}

// resolveClash makes the younger of two nodes that claim one value give up
// what they both claim: its clashing values are removed from its
// annotations, and this process learns the older node's. loser names the
// node that yielded ("" when nothing clashes); lost says that the write lost
// a race (the node changed or went) and the check must run again.
func (r *reconciler) resolveClash(ctx context.Context, mine, other claims.Claims, states map[string]*hostSubnetState) (loser string, lost bool, err error) {
	c := claims.Between(mine, other)
	if c.Empty() {
		return "", false, nil
	}
	yields, winner := mine, other
	if olderNode(mine.Meta, other.Meta) < 0 {
		yields, winner = other, mine
		c = claims.Between(other, mine)
	}
	meta := yields.Meta
	patched := meta.DeepCopy()
	patched.Annotations = claims.Without(meta, yields, c)
	patched.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	if err := r.client.Patch(ctx, patched, client.MergeFromWithOptions(meta, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return "", true, nil
		}
		return "", false, err
	}
	// This process learns the winner's values, so it hands them out to no
	// one else; what it held for the loser is free.
	for _, id := range c.IDs {
		r.ids.Release(meta.Name, id)
		_ = r.ids.Reserve(winner.Meta.Name, id)
	}
	for net, ps := range c.Networks {
		if st := states[net]; st != nil {
			st.alloc.Release(meta.Name)
			for _, p := range ps {
				_ = st.alloc.Reserve(winner.Meta.Name, p)
			}
		}
	}
	r.recorder.Eventf(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: meta.Name, UID: meta.UID}}, nil, corev1.EventTypeWarning,
		EventNodeAllocationConflict, "Reconcile", "%s were also written to older node %s by another writer; allocating again", c, winner.Meta.Name)
	return meta.Name, false, nil
}
