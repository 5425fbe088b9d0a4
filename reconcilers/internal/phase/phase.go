// Package phase runs a reconcile as a list of named steps over a scope, as
// cluster-api's machine controller does: each phase is a small function that
// reads the scope, fills in what later phases need, and says whether the
// reconcile ends there.
package phase

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Stop is embedded in a scope: a phase that ends the reconcile returns
// s.Done(res, err).
type Stop struct{ done bool }

// Done ends the reconcile with res and err once the running phase returns.
func (s *Stop) Done(res ctrl.Result, err error) (ctrl.Result, error) {
	s.done = true
	return res, err
}

func (s *Stop) stopped() bool { return s.done }

// Scope is a reconcile's state; it embeds Stop.
type Scope interface{ stopped() bool }

// Run runs phases in order over s. The first phase that returns an error or
// calls Done ends the reconcile with what it returned; when every phase
// passes, the reconcile ends with an empty Result.
func Run[S Scope](ctx context.Context, s S, phases []func(context.Context, S) (ctrl.Result, error)) (ctrl.Result, error) {
	for _, p := range phases {
		res, err := p(ctx, s)
		if err != nil || s.stopped() {
			return res, err
		}
	}
	return ctrl.Result{}, nil
}
