package layer3

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/udnkit/udnkit/dataplane"
	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/internal/phase"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/nadtrust"
)

// Reconciler programs every primary Layer3 network: the OKEP-5377
// priority-102 subnet policies on its <net>_ovn_cluster_router (creating
// and owning the router when no other component has), and the network's
// whole topology in this zone (topology.Layer3Topology) from its NAD and
// the Nodes' annotations. Requests are NADs; an appended subnet changes the
// NAD's spec.config and so the policies; Node changes requeue every udnkit
// NAD.
type Reconciler struct {
	Client client.Client
	OVN    *dataplane.Client
	// Form is the policies' form (default: one Address_Set policy per family).
	Form topology.Layer3PolicyForm
	// Topology also programs each network's whole topology in this zone
	// (Setup sets it); false writes only the subnet policies, on a cluster
	// router OVN-Kubernetes' topology provides.
	Topology bool
	// Wake, when set, hears of each network whose topology is applied.
	Wake *zone.TopologyWake
	// Local says whether a node belongs to this OVN zone; nil means every
	// node does (one zone).
	Local func(*corev1.Node) bool
	// Cluster gives the join, transit and masquerade subnets, the MTU, the
	// IP families and the UDN-enabled services.
	Cluster ovnk.ClusterConfig
	// Services holds the UDN-enabled services (layer2.NewServiceCache);
	// nil: they are read through Client and not watched.
	Services cache.Cache
	// GatewayMode and ExternalPortRange are --gateway-mode and
	// --external-port-range (topology.Layer3Network; "": shared and
	// ovnk.DefaultExternalPortRange).
	GatewayMode       ovnk.GatewayMode
	ExternalPortRange string
	// EgressIP is --enable-egress-ip: the subnet policies (EgressIP's
	// priority-102 no-reroute policies) and the gateway routers' catch-all
	// src-ip routes (topology.Layer3Network.EgressIP) are written only
	// with it, as upstream does.
	EgressIP bool
	// Recorder, when set, raises a Warning Event on each object left out.
	Recorder recorder.EventRecorder
	// Zone names this dataplane's zone in what it reports ("": the single zone).
	Zone string
	// UpstreamRecheck is how often a network OVN-Kubernetes programs in
	// this zone is looked at again (0: zone.DefaultUpstreamRecheck).
	UpstreamRecheck time.Duration
	// Workers is how many networks are reconciled at once (0: DefaultWorkers).
	Workers int
	// FIFOQueue is Options.FIFOQueue.
	FIFOQueue bool
	// Guard applies the NAD ownership rule (trust.go); nil: one reading
	// through Client, without Events.
	Guard *nadtrust.Guard
	trust zone.Trusting

	// Networks serialises the reconciles of one network (a CUDN's NADs
	// are separate requests that each read the nodes before applying).
	Networks engine.KeyLocks
	sweeps   zone.Sweeps
	names    zone.Names // Layer3Name, between sweeps
	// subnets: each node's decoded k8s.ovn.org/node-subnets, between
	// reconciles (Node).
	subnets zone.NodeSubnets
}

// SetupWithManager registers the reconciler.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := zone.TrustWatches(ctrl.NewControllerManagedBy(mgr).
		Named("dataplane-layer3").
		WithOptions(zone.ControllerOptions(r.Workers, r.FIFOQueue)), r.Client, r.guard(), zone.Layer3Name).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(zone.NADsIn(r.Client, "")), builder.WithPredicates(nodeFactsChanged()))
	if r.Services != nil {
		b = b.WatchesRawSource(zone.WatchServices(r.Client, r.Services))
	}
	return b.Complete(r)
}

// scope carries one reconcile from phase to phase.
type scope struct {
	zone.NADScope
	name string
	net  topology.Layer3Network
	// topo: the network has its IDs and its topology is applied.
	topo bool
}

// Reconcile applies one network's policies and topology, and removes the
// rows of networks whose NADs are gone, one phase after another.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return phase.Run(ctx, &scope{NADScope: zone.NADScope{Req: req}}, []phase.Func[*scope]{
		zone.ReadNADPhase[*scope](r.Client, r.guard()),
		zone.ReadSourcePhase[*scope](r.Client, r.guard(), zone.Layer3Name),
		r.applyPolicies,
		r.readNetwork,
		r.applyTopology,
		r.sweep,
	})
}

// applyPolicies applies the policies of the source's network; a malformed
// NAD is reported and skipped, a failed apply ends the reconcile.
func (r *Reconciler) applyPolicies(ctx context.Context, s *scope) (reconcile.Result, error) {
	if s.Owner == nil {
		return reconcile.Result{}, nil
	}
	name, subnets, ok, err := zone.Layer3NetworkFromNAD(s.Src)
	if err != nil {
		// A malformed NAD is the NAD writer's bug; retrying will not fix it.
		zone.Skip(ctx, r.Recorder, s.Src, "NetworkAttachmentDefinition", zone.ReasonMalformedNetwork, err)
		return reconcile.Result{}, nil
	}
	if !ok {
		return reconcile.Result{}, nil
	}
	s.Network = name
	// Upstream writes the policies only with EgressIP
	// (ensureRouterPoliciesForNetwork): without, the piece is empty and
	// its rows go.
	d := &rows.Desired{Owner: rows.Owner{Network: name, Topology: base.TopologyLayer3, Piece: base.PieceSubnetPolicies}}
	if r.EgressIP {
		d, err = topology.Layer3SubnetPoliciesForm(name, subnets, r.Form)
	}
	if err != nil {
		log.FromContext(ctx).Error(err, "skipping network", "network", name)
		return reconcile.Result{}, nil
	}
	if r.Topology {
		// The cluster router this piece may create is the topology's.
		topology.SetLayer3GatewayMode(d, r.GatewayMode)
	}
	if _, err := r.OVN.ApplyUnless(ctx, d, zone.UnlessGone(r.Client, r.guard(), zone.Layer3Name, name)); err != nil {
		return s.Done(reconcile.Result{}, err)
	}
	s.name = name
	return reconcile.Result{}, nil
}

// applyTopology applies the network's topology in this zone (its
// reconciles taking turns) unless OVN-Kubernetes programs it here, and
// reports which.
func (r *Reconciler) applyTopology(ctx context.Context, s *scope) (reconcile.Result, error) {
	if !s.topo {
		return reconcile.Result{}, nil
	}
	unlock := r.Networks.Lock(s.name)
	err := r.apply(ctx, s.net)
	unlock()
	up := zone.UpstreamRows{Client: r.Client, Zone: r.Zone, Recheck: zone.OrDefault(r.UpstreamRecheck, zone.DefaultUpstreamRecheck)}
	res, upstream, err := up.Handle(ctx, r.skip, s.Src, s.Owner, err)
	switch {
	case err != nil:
		return s.Done(reconcile.Result{}, err)
	case upstream:
		return res, nil
	}
	return reconcile.Result{}, up.Programmed(ctx, s.Owner)
}

func (r *Reconciler) sweep(ctx context.Context, s *scope) (reconcile.Result, error) {
	return s.Sweep(ctx, &r.sweeps, r.collect)
}

// collect removes the topology, then the policies (and owned routers), of
// Layer3 networks that no NAD describes any more: the policies' piece owns
// the cluster router when it created it.
func (r *Reconciler) collect(ctx context.Context) error {
	_, err := zone.CollectPieces(ctx, r.Client, r.guard(), r.OVN, r.OVN.PieceNetworks, r.names.Of(zone.Layer3Name),
		rows.Owner{Topology: base.TopologyLayer3, Piece: base.PieceTopology},
		rows.Owner{Topology: base.TopologyLayer3, Piece: base.PieceSubnetPolicies})
	return err
}

// skip is zone.Skip with the reconciler's recorder.
func (r *Reconciler) skip(ctx context.Context, obj client.Object, kind, reason string, err error) {
	zone.Skip(ctx, r.Recorder, obj, kind, reason, err)
}

func (r *Reconciler) guard() *nadtrust.Guard { return r.trust.Of(r.Guard, r.Client) }
