// Package phase runs a reconcile as a list of named steps over a scope, as
// cluster-api's machine controller does: each phase is a small function that
// reads the scope, fills in what later phases need, and returns its Result
// and error.
//
// The runner's rules are cluster-api's:
//   - every phase runs, in order, whatever the ones before it returned,
//     unless one ends the reconcile by returning s.Done(res, err); a phase
//     whose failure leaves later phases without what they need must end it
//     so;
//   - the reconcile's error is the phases' errors aggregated
//     (k8s.io/apimachinery/pkg/util/errors.NewAggregate);
//   - without an error, its Result is the lowest non-zero Result any phase
//     returned (LowestNonZeroResult). With an error the Result is empty:
//     controller-runtime ignores it then and requeues with backoff.
package phase

import (
	"context"

	kerrors "k8s.io/apimachinery/pkg/util/errors"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Stop is embedded in a scope: a phase that ends the reconcile returns
// s.Done(res, err).
type Stop struct{ done bool }

// Done ends the reconcile once the running phase returns; res and err count
// as any phase's do.
func (s *Stop) Done(res ctrl.Result, err error) (ctrl.Result, error) {
	s.done = true
	return res, err
}

func (s *Stop) stopped() bool { return s.done }

// Scope is a reconcile's state; it embeds Stop.
type Scope interface{ stopped() bool }

// Func is one phase over a scope S.
type Func[S Scope] func(context.Context, S) (ctrl.Result, error)

// Run runs phases in order over s until one calls Done, and returns the
// lowest non-zero Result among them and their errors aggregated (see the
// package doc). A single error is returned as it is, so errors.As and
// apierrors.IsConflict still see it.
func Run[S Scope](ctx context.Context, s S, phases []Func[S]) (ctrl.Result, error) {
	var res ctrl.Result
	var errs []error
	for _, p := range phases {
		r, err := p(ctx, s)
		if err != nil {
			errs = append(errs, err)
		} else {
			res = LowestNonZeroResult(res, r)
		}
		if s.stopped() {
			break
		}
	}
	switch len(errs) {
	case 0:
		return res, nil
	case 1:
		return ctrl.Result{}, errs[0]
	}
	return ctrl.Result{}, kerrors.NewAggregate(errs)
}

// LowestNonZeroResult is whichever of a and b runs the reconcile again
// sooner, as cluster-api's util.LowestNonZeroResult: a zero Result never
// does, Requeue (a rate-limited requeue) comes before any RequeueAfter, and
// otherwise the shorter RequeueAfter wins.
func LowestNonZeroResult(a, b ctrl.Result) ctrl.Result {
	switch {
	case a.IsZero():
		return b
	case b.IsZero():
		return a
	case a.Requeue: //nolint:staticcheck // read to honour a phase that still sets it
		return a
	case b.Requeue: //nolint:staticcheck // read to honour a phase that still sets it
		return b
	case a.RequeueAfter <= b.RequeueAfter:
		return a
	default:
		return b
	}
}
