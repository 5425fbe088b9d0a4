package migration

import (
	"context"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/udnkit/udnkit/dataplane"
	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/dataplane/topology/migration"
	"github.com/udnkit/udnkit/internal/phase"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/kubevirt"
	"github.com/udnkit/udnkit/ovnk/nadtrust"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

// Reconciler programs the kubevirt point-to-point routing of
// primary Layer2 networks on their transit routers: for every VM that runs on
// a node that does not own its addresses (kubevirt.MigratedVMs: the owner node the
// address reconciler publishes on the VM's pods, and the pod it runs in),
// a /32 (/128) route to the VM via the router's switch port and a
// priority-10 reroute of its traffic to the transit peer address of the
// gateway router of the node it runs on; both go when the VM returns or is
// deleted. A request is one NAD, and programs its network: a VM pod's
// change reconciles the NADs of its namespace, a node's every network, as
// the Layer2 reconciler does; reconciles of one network take turns.
type Reconciler struct {
	Client client.Client
	OVN    *dataplane.Client
	// Recorder, when set, raises a Warning Event on a migrated VM's pod
	// whose routes cannot be programmed (its node has no node ID yet, its
	// addresses are malformed, the routes are refused).
	Recorder recorder.EventRecorder
	// NodePerZone is Options.Local != nil: every node is its own OVN zone
	// (migration.LiveMigrationNetwork.NodePerZone).
	NodePerZone bool
	// Workers is how many networks are reconciled at once (0: DefaultWorkers).
	Workers int
	// FIFOQueue is Options.FIFOQueue.
	FIFOQueue bool
	// Guard applies the NAD ownership rule (trust.go); nil: one reading
	// through Client, without Events.
	Guard *nadtrust.Guard
	trust zone.Trusting

	networks engine.KeyLocks
	sweeps   zone.Sweeps
	names    zone.Names // Layer2Name, between sweeps
}

// Event reasons of live migration.
const (
	ReasonLiveMigrationWaiting = "LiveMigrationWaiting"
	ReasonLiveMigrationFailed  = "LiveMigrationFailed"
)

func (r *Reconciler) warn(pod *corev1.Pod, reason, format string, args ...any) {
	if r.Recorder != nil && pod != nil {
		r.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, reason, "ProgramLiveMigration", format, args...)
	}
}

// SetupWithManager registers the reconciler.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return zone.TrustWatches(ctrl.NewControllerManagedBy(mgr).
		Named("dataplane-live-migration").
		WithOptions(zone.ControllerOptions(r.Workers, r.FIFOQueue)), r.Client, r.guard(), zone.Layer2Name).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.vmPodRequests),
			builder.WithPredicates(predicate.Funcs{CreateFunc: zone.CreatedLater})).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(zone.NADsIn(r.Client, "")), zone.Layer2NodeFacts.Predicate()).
		Complete(r)
}

// vmPodRequests maps a pod event to udnkit's NADs in its namespace if it is
// one of KubeVirt's VM pods (kubevirt.io/vm); every other pod event is
// dropped before it is queued.
func (r *Reconciler) vmPodRequests(ctx context.Context, o client.Object) []reconcile.Request {
	if _, ok := o.GetLabels()[kubevirt.LabelVM]; !ok {
		return nil
	}
	return zone.NADsIn(r.Client, o.GetNamespace())(ctx, o)
}

// Reconcile applies the routes of the request's NAD's network, and removes
// those of networks whose NADs are gone, one phase after another.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return phase.Run(ctx, &zone.NADScope{Req: req}, []phase.Func[*zone.NADScope]{
		zone.ReadNADPhase[*zone.NADScope](r.Client, r.guard()),
		zone.ReadSourcePhase[*zone.NADScope](r.Client, r.guard(), zone.Layer2Name),
		r.applyRoutes,
		r.sweep,
	})
}

// applyRoutes applies the routes of the source's network, its reconciles
// taking turns; a failed apply ends the reconcile. A malformed NAD is the
// Layer2 reconciler's to report.
func (r *Reconciler) applyRoutes(ctx context.Context, s *zone.NADScope) (reconcile.Result, error) {
	if s.Owner == nil {
		return reconcile.Result{}, nil
	}
	net, ok, err := zone.Layer2NetworkFromNAD(s.Src)
	if err != nil || !ok {
		return reconcile.Result{}, nil
	}
	s.Network = net.Name
	unlock := r.networks.Lock(net.Name)
	err = r.apply(ctx, net)
	unlock()
	if err != nil {
		return s.Done(reconcile.Result{}, err)
	}
	return reconcile.Result{}, nil
}

func (r *Reconciler) sweep(ctx context.Context, s *zone.NADScope) (reconcile.Result, error) {
	return s.Sweep(ctx, &r.sweeps, r.collect)
}

func (r *Reconciler) collect(ctx context.Context) error {
	_, err := zone.CollectPieces(ctx, r.Client, r.guard(), r.OVN, r.OVN.PieceNetworks, r.names.Of(zone.Layer2Name),
		rows.Owner{Topology: base.TopologyLayer2, Piece: base.PieceLiveMigration})
	return err
}

// apply programs net's routes: the migrated VMs of the namespaces of its
// NADs (a CUDN's NADs share its name, one per namespace), to the nodes that
// have a node ID.
func (r *Reconciler) apply(ctx context.Context, net topology.Layer2Network) error {
	logger := log.FromContext(ctx).WithValues("network", net.Name)
	// The network's NADs that pass the ownership rule (the cache's
	// objects, only read here): a forged NAD naming it adds no VMs.
	nads, err := zone.TrustedNamingNADs(ctx, r.Client, r.guard(), net.Name)
	if err != nil {
		return err
	}
	var vms []migration.VM
	podOf := map[string]*corev1.Pod{} // namespace/VM -> the pod it runs in
	for _, other := range nads {
		var pods corev1.PodList
		if err := r.Client.List(ctx, &pods, client.InNamespace(other.Namespace), client.HasLabels{kubevirt.LabelVM}, client.UnsafeDisableDeepCopy); err != nil {
			return err
		}
		key := other.Namespace + "/" + other.Name
		for _, m := range kubevirt.MigratedVMs(pods.Items) {
			podOf[m.Namespace+"/"+m.VM] = m.Pod
			all, err := podannotation.DecodePodNetworks(m.Pod.Annotations)
			if err != nil {
				logger.Error(err, "skipping migrated VM", "vm", m.Namespace+"/"+m.VM)
				r.warn(m.Pod, ReasonLiveMigrationFailed, "no live-migration routes for VM %s: %v", m.VM, err)
				continue
			}
			pn, ok := all[key]
			if !ok || pn.Role != podannotation.RolePrimary {
				continue
			}
			addrs, err := pn.Parse()
			if err != nil {
				logger.Error(err, "skipping migrated VM", "vm", m.Namespace+"/"+m.VM, "field", podannotation.PodNetworkField(key))
				r.warn(m.Pod, ReasonLiveMigrationFailed, "no live-migration routes for VM %s: annotation %s.%v", m.VM, podannotation.PodNetworkField(key), err)
				continue
			}
			vms = append(vms, migration.VM{Namespace: m.Namespace, Name: m.VM, IPs: addrs.IPs, Node: m.CurrentNode, OwnerNode: m.OwnerNode})
		}
	}
	var nodeList corev1.NodeList
	if err := r.Client.List(ctx, &nodeList, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	nodes := migrationNodes(net, nodeList.Items)
	known := map[string]bool{}
	for _, n := range nodes {
		known[n.Name] = true
	}
	var keep []migration.VM
	for _, vm := range vms {
		if !known[vm.Node] {
			// Its node has no node ID yet: routed once it has.
			logger.Info("migrated VM waits for its node", "vm", vm.Namespace+"/"+vm.Name, "node", vm.Node)
			r.warn(podOf[vm.Namespace+"/"+vm.Name], ReasonLiveMigrationWaiting,
				"VM %s runs on node %s, which has no %s yet: its live-migration routes are programmed once it has", vm.Name, vm.Node, ovnk.AnnotationNodeID)
			continue
		}
		keep = append(keep, vm)
	}
	d := &rows.Desired{Owner: rows.Owner{Network: net.Name, Topology: base.TopologyLayer2, Piece: base.PieceLiveMigration}}
	if len(keep) > 0 {
		var err error
		if d, err = migration.LiveMigrationRoutes(migration.LiveMigrationNetwork{Name: net.Name, Topology: base.TopologyLayer2, NodePerZone: r.NodePerZone}, nodes, keep); err != nil {
			logger.Error(err, "skipping network's live-migration routes")
			for _, vm := range keep {
				r.warn(podOf[vm.Namespace+"/"+vm.Name], ReasonLiveMigrationFailed, "no live-migration routes for VM %s: %v", vm.Name, err)
			}
			return nil // the same input fails again: wait for a change
		}
	}
	_, err = r.OVN.ApplyUnless(ctx, d, zone.UnlessGone(r.Client, r.guard(), zone.Layer2Name, net.Name))
	return err
}

// migrationNodes are the nodes with a node ID, as the transit router reaches
// their gateway routers: the router's switch port and the GR side of each
// node's transit peer subnets (OKEP-5094: offset 2·nodeID, odd address).
func migrationNodes(net topology.Layer2Network, items []corev1.Node) []migration.LiveMigrationNode {
	names := ovnk.NamesFor(net.Name)
	transits := net.TransitSubnets
	if len(transits) == 0 {
		transits = []netip.Prefix{ovnk.DefaultTransitSubnetV4, ovnk.DefaultTransitSubnetV6}
	}
	var out []migration.LiveMigrationNode
	for i := range items {
		n, ok, err := zone.Layer2NodeFromNode(&items[i])
		if err != nil || !ok {
			continue
		}
		node := migration.LiveMigrationNode{Name: n.Name, RouterPort: names.RouterToSwitch()}
		for _, s := range net.Subnets {
			for _, tr := range transits {
				if tr.Addr().Is4() != s.Addr().Is4() {
					continue
				}
				if peer, err := ovnk.TransitPeerSubnet(tr, n.ID); err == nil {
					_, gr := ovnk.TransitPeerIPs(peer)
					node.GatewayIPs = append(node.GatewayIPs, gr.Addr())
				}
			}
		}
		if len(node.GatewayIPs) > 0 {
			out = append(out, node)
		}
	}
	return out
}

func (r *Reconciler) guard() *nadtrust.Guard { return r.trust.Of(r.Guard, r.Client) }
