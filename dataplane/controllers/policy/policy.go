package policy

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/udnkit/udnkit/dataplane"
	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/dataplane/topology/policy"
	"github.com/udnkit/udnkit/internal/phase"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/nadtrust"
)

// Reconciler applies the network-policy, isolation and EgressIP defaults
// of every primary Layer2 and Layer3 network and of the zone. Requests are
// NADs; Node changes (subnets, host addresses, zone) and UDN-enabled
// service changes requeue every NAD.
type Reconciler struct {
	Client client.Client
	OVN    *dataplane.Client
	// Local says whether a node belongs to this OVN zone; nil means every node does.
	Local func(*corev1.Node) bool
	// Cluster are the cluster facts: IP modes, masquerade, join subnets and
	// the UDN-enabled services.
	Cluster ovnk.ClusterConfig
	// EgressIP is Options.EgressIP.
	EgressIP bool
	// Services caches the UDN-enabled services (nil: read through Client,
	// unwatched).
	Services cache.Cache
	// IsolationPorts lists the default network's ports of the zone's
	// Primary-UDN pods, members of the isolation port group, with the
	// ports each opens (nil: none; Setup gives
	// pods.Reconciler.IsolationPorts). When set, pod changes requeue
	// their namespace's NADs.
	IsolationPorts func(ctx context.Context) ([]policy.IsolationMember, error)
	// Workers is how many networks are reconciled at once (0: DefaultWorkers).
	Workers int
	// FIFOQueue is zone.Options.FIFOQueue.
	FIFOQueue bool
	// Guard applies the NAD ownership rule; nil: one reading through
	// Client, without Events.
	Guard *nadtrust.Guard
	trust zone.Trusting

	sweeps zone.Sweeps
	// layer2 and layer3 are Layer2Name and Layer3Name, between sweeps.
	layer2, layer3 zone.Names
	// Wake, when set, queues a Primary network's NADs again as soon as
	// its topology is applied in the zone (nil: TopologyWait later).
	Wake   *zone.TopologyWake
	waiter *zone.TopologyWaiter
	// subnets: the nodes' decoded k8s.ovn.org/node-subnets, between
	// reconciles.
	subnets zone.NodeSubnets
	// zone: what the zone's rows were last applied from.
	zone zoneRows
}

// SetupWithManager registers the reconciler.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	nads := zone.NADsIn(r.Client, "")
	b := zone.TrustWatches(ctrl.NewControllerManagedBy(mgr).
		Named("dataplane-policy").
		WithOptions(zone.ControllerOptions(r.Workers, r.FIFOQueue)), r.Client, r.guard(), zone.VTEPName).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(nads), nodeFacts)
	if r.IsolationPorts != nil {
		// A pod's default network port joins or leaves the isolation
		// port group, or the pod opens other ports: its NADs' reconciles
		// apply the zone's rows.
		podNADs := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			r.zone.pods.Add(1)
			return zone.NADsIn(r.Client, o.GetNamespace())(ctx, o)
		})
		b = b.Watches(&corev1.Pod{}, podNADs, zone.PodPortChanged()).
			Watches(&corev1.Pod{}, podNADs, builder.WithPredicates(openPortsChanged))
	}
	if r.Services != nil {
		b = b.WatchesRawSource(watchServices(r.Services, func(ctx context.Context, o client.Object) []reconcile.Request {
			r.zone.services.Add(1)
			return nads(ctx, o)
		}))
	}
	if r.zone.resyncs != nil {
		// The zone's rows lost or changed in OVN: every NAD's reconcile
		// finds them stale, the first applies them.
		b = b.WatchesRawSource(source.Channel(r.zone.resyncs, handler.EnqueueRequestsFromMapFunc(nads)))
	}
	b, r.waiter = r.Wake.Watch(b)
	return b.Complete(r)
}

// scope carries one reconcile from phase to phase.
type scope struct {
	zone.NADScope
	nodes []corev1.Node
}

// Reconcile applies the zone's rows and the NAD's network's, and removes
// the rows of networks whose NADs are gone, one phase after another.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return phase.Run(ctx, &scope{NADScope: zone.NADScope{Req: req}}, []phase.Func[*scope]{
		zone.ReadNADPhase[*scope](r.Client, r.guard()),
		zone.ReadSourcePhase[*scope](r.Client, r.guard(), zone.VTEPName),
		r.readNodes,
		r.applyZone,
		r.applyNetwork,
		r.sweep,
	})
}

// readNodes lists the nodes for a NAD with an owner.
func (r *Reconciler) readNodes(ctx context.Context, s *scope) (reconcile.Result, error) {
	if s.Owner == nil {
		return reconcile.Result{}, nil
	}
	// Read-only (every phase only reads them): not copied, as each
	// network's reconcile lists every node.
	var nodes corev1.NodeList
	if err := r.Client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return s.Done(reconcile.Result{}, err)
	}
	s.nodes = nodes.Items
	return reconcile.Result{}, nil
}

// applyZone applies the zone's isolation rows and EgressIP address sets
// (those removed when EgressIP is off) whose inputs changed since they
// were last applied (applyZoneRows); the zone's rows exist once a primary
// network does.
func (r *Reconciler) applyZone(ctx context.Context, s *scope) (reconcile.Result, error) {
	if s.Owner == nil {
		return reconcile.Result{}, nil
	}
	if err := r.applyZoneRows(ctx, s.nodes); err != nil {
		return s.Done(reconcile.Result{}, err)
	}
	return reconcile.Result{}, nil
}

// applyNetwork applies the source's network's rows; a malformed NAD is
// logged and skipped, a failed apply ends the reconcile.
func (r *Reconciler) applyNetwork(ctx context.Context, s *scope) (reconcile.Result, error) {
	if s.Owner == nil {
		return reconcile.Result{}, nil
	}
	net, ok, err := r.network(ctx, s.Src, s.nodes)
	if err != nil || !ok {
		if err != nil {
			log.FromContext(ctx).Error(err, "skipping network")
		}
		return reconcile.Result{}, nil
	}
	s.Network = net.Name
	if res, wait := r.waiter.WaitForTopology(ctx, r.OVN, net.Name, net.Topology, s.Req); wait {
		return res, nil
	}
	c := r.cluster()
	eip := &rows.Desired{Owner: rows.Owner{Network: net.Name, Topology: net.Topology, Piece: base.PieceEgressIPDefaults}}
	netpol, err := policy.NetpolDefaults(net, c)
	if err == nil && r.EgressIP {
		eip, err = policy.EgressIPDefaults(net, c)
	}
	if err != nil {
		log.FromContext(ctx).Error(err, "skipping network", "network", net.Name)
		return reconcile.Result{}, nil
	}
	// Both pieces hang off the topology's switch and routers only: one
	// transaction when they can share it.
	if _, err := r.OVN.ApplyTogetherUnless(ctx, zone.UnlessGone(r.Client, r.guard(), zone.VTEPName, net.Name), netpol, eip); err != nil {
		return s.Done(reconcile.Result{}, err)
	}
	return reconcile.Result{}, nil
}

func (r *Reconciler) sweep(ctx context.Context, s *scope) (reconcile.Result, error) {
	return s.Sweep(ctx, &r.sweeps, r.collect)
}

// collect removes both pieces of the networks no NAD describes any more,
// together (neither names a row of the other).
func (r *Reconciler) collect(ctx context.Context) error {
	for _, t := range []struct {
		topology string
		names    *zone.Names
	}{{base.TopologyLayer2, r.layer2.Of(zone.Layer2Name)}, {base.TopologyLayer3, r.layer3.Of(zone.Layer3Name)}} {
		if _, err := zone.CollectPiecesTogether(ctx, r.Client, r.guard(), r.OVN, r.OVN.PieceNetworks, t.names,
			rows.Owner{Topology: t.topology, Piece: base.PieceNetpolDefaults},
			rows.Owner{Topology: t.topology, Piece: base.PieceEgressIPDefaults}); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reconciler) guard() *nadtrust.Guard { return r.trust.Of(r.Guard, r.Client) }

// cluster are the builders' cluster facts.
func (r *Reconciler) cluster() policy.Cluster {
	c := policy.Cluster{MasqueradeSubnets: r.Cluster.MasqueradeSubnets, JoinSubnets: r.Cluster.JoinSubnets}
	c.IPv4, c.IPv6 = r.Cluster.IPModes()
	return c
}

// openPortsChanged passes the pod updates that change the pod's
// ovnk.AnnotationOpenDefaultPorts (set, changed or removed); creates and
// deletes are zone.PodPortChanged's.
var openPortsChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, hadOld := e.ObjectOld.GetAnnotations()[ovnk.AnnotationOpenDefaultPorts]
		n, hasNew := e.ObjectNew.GetAnnotations()[ovnk.AnnotationOpenDefaultPorts]
		return hadOld != hasNew || o != n
	},
}
