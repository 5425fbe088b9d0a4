package zone

import (
	"context"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/udnkit/udnkit/internal/phase"
	"github.com/udnkit/udnkit/ovnk/nadtrust"
)

// NADScope is what a dataplane controller's reconcile of one NAD carries
// from phase to phase (internal/phase): the request's NAD and its owner
// (ReadNAD), the NAD its network's rows follow (ReadSource), and the network
// whose rows the reconcile applied, which Sweep reports.
type NADScope struct {
	phase.Stop
	Req reconcile.Request
	// NAD is the request's NAD; nil when it is gone.
	NAD *nadv1.NetworkAttachmentDefinition
	// Owner is set when NAD is live and passes the ownership rule.
	Owner *nadtrust.Owner
	// Src is the NAD the network's rows follow (NetworkSource), or NAD when
	// no NAD of the network passes (not a network yet, or malformed).
	Src *nadv1.NetworkAttachmentDefinition
	// Network is the network whose rows this reconcile applied ("": none).
	Network string
}

// ReadNAD reads and verifies the request's NAD (TrustedNAD); an error ends
// the reconcile.
func (s *NADScope) ReadNAD(ctx context.Context, c client.Client, g *nadtrust.Guard) (ctrl.Result, error) {
	nad, owner, err := TrustedNAD(ctx, c, g, s.Req)
	if err != nil {
		return s.Done(ctrl.Result{}, err)
	}
	s.NAD, s.Owner = nad, owner
	return ctrl.Result{}, nil
}

// ReadSource reads Src for a NAD with an owner, of the networks name reads;
// an error ends the reconcile.
func (s *NADScope) ReadSource(ctx context.Context, c client.Client, g *nadtrust.Guard,
	name func(*nadv1.NetworkAttachmentDefinition) (string, bool)) (ctrl.Result, error) {
	if s.Owner == nil {
		return ctrl.Result{}, nil
	}
	src, err := NetworkSource(ctx, c, g, s.Owner.Network, name)
	if err != nil {
		return s.Done(ctrl.Result{}, err)
	}
	if src == nil {
		src = s.NAD
	}
	s.Src = src
	return ctrl.Result{}, nil
}

// Base returns the NADScope itself: a controller's scope that embeds it
// satisfies NADScoped, so the phases below serve it.
func (s *NADScope) Base() *NADScope { return s }

// NADScoped is a reconcile scope that embeds NADScope.
type NADScoped interface {
	phase.Scope
	Base() *NADScope
}

// ReadNADPhase is every controller's first phase: NADScope.ReadNAD with c
// and g.
func ReadNADPhase[S NADScoped](c client.Client, g *nadtrust.Guard) phase.Func[S] {
	return func(ctx context.Context, s S) (ctrl.Result, error) { return s.Base().ReadNAD(ctx, c, g) }
}

// ReadSourcePhase is NADScope.ReadSource with c, g and the controller's
// networks' name function, as a phase.
func ReadSourcePhase[S NADScoped](c client.Client, g *nadtrust.Guard, name func(*nadv1.NetworkAttachmentDefinition) (string, bool)) phase.Func[S] {
	return func(ctx context.Context, s S) (ctrl.Result, error) { return s.Base().ReadSource(ctx, c, g, name) }
}

// Sweep runs pieces when sweeps says a sweep is due after this reconcile
// (Sweeps.Sweep); it is every reconcile's last phase.
func (s *NADScope) Sweep(ctx context.Context, sweeps *Sweeps, pieces ...func(context.Context) error) (ctrl.Result, error) {
	return ctrl.Result{}, sweeps.Sweep(ctx, s.Req.NamespacedName, s.Network, Deleted(s.NAD), pieces...)
}
