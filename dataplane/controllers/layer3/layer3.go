package layer3

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/udnkit/udnkit/dataplane"
	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/internal/phase"
	"github.com/udnkit/udnkit/ovnk/nadtrust"
)

// Reconciler programs the OKEP-5377 priority-102 subnet policies
// of every primary Layer3 network on its <net>_ovn_cluster_router, creating
// (and owning) the router when no other component has. Requests are NADs; an
// appended subnet changes the NAD's spec.config and so the policies.
type Reconciler struct {
	Client client.Client
	OVN    *dataplane.Client
	// Form is the policies' form (default: one Address_Set policy per family).
	Form topology.Layer3PolicyForm
	// Workers is how many networks are reconciled at once (0: DefaultWorkers).
	Workers int
	// FIFOQueue is Options.FIFOQueue.
	FIFOQueue bool
	// Guard applies the NAD ownership rule (trust.go); nil: one reading
	// through Client, without Events.
	Guard *nadtrust.Guard
	trust zone.Trusting

	sweeps zone.Sweeps
}

// SetupWithManager registers the reconciler.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return zone.TrustWatches(ctrl.NewControllerManagedBy(mgr).
		Named("dataplane-layer3").
		WithOptions(zone.ControllerOptions(r.Workers, r.FIFOQueue)), r.Client, r.guard(), zone.Layer3Name).
		Complete(r)
}

// Reconcile applies one network's policies and removes the policies (and
// owned routers) of networks whose NADs are gone, one phase after another.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return phase.Run(ctx, &zone.NADScope{Req: req}, []phase.Func[*zone.NADScope]{
		r.readNAD,
		r.readSource,
		r.applyPolicies,
		r.sweep,
	})
}

func (r *Reconciler) readNAD(ctx context.Context, s *zone.NADScope) (reconcile.Result, error) {
	return s.ReadNAD(ctx, r.Client, r.guard())
}

func (r *Reconciler) readSource(ctx context.Context, s *zone.NADScope) (reconcile.Result, error) {
	return s.ReadSource(ctx, r.Client, r.guard(), zone.Layer3Name)
}

// applyPolicies applies the policies of the source's network; a malformed
// NAD is logged and skipped, a failed apply ends the reconcile.
func (r *Reconciler) applyPolicies(ctx context.Context, s *zone.NADScope) (reconcile.Result, error) {
	if s.Owner == nil {
		return reconcile.Result{}, nil
	}
	name, subnets, ok, err := zone.Layer3NetworkFromNAD(s.Src)
	if err != nil {
		// A malformed NAD is the NAD writer's bug; retrying will not fix it.
		log.FromContext(ctx).Error(err, "skipping network")
		return reconcile.Result{}, nil
	}
	if !ok {
		return reconcile.Result{}, nil
	}
	s.Network = name
	d, err := topology.Layer3SubnetPoliciesForm(name, subnets, r.Form)
	if err != nil {
		log.FromContext(ctx).Error(err, "skipping network", "network", name)
	} else if _, err := r.OVN.Apply(ctx, d); err != nil {
		return s.Done(reconcile.Result{}, err)
	}
	return reconcile.Result{}, nil
}

func (r *Reconciler) sweep(ctx context.Context, s *zone.NADScope) (reconcile.Result, error) {
	return s.Sweep(ctx, &r.sweeps, r.collect)
}

// collect removes the policies of Layer3 networks that no NAD describes any more.
func (r *Reconciler) collect(ctx context.Context) error {
	return zone.CollectPiece(ctx, r.Client, r.guard(), r.OVN, rows.Owner{Topology: base.TopologyLayer3, Piece: base.PieceSubnetPolicies},
		r.OVN.PieceNetworks, zone.Layer3Name)
}

func (r *Reconciler) guard() *nadtrust.Guard { return r.trust.Of(r.Guard, r.Client) }
