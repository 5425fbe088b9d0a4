package pods

import (
	"context"
	"fmt"
	"net/netip"
	"sync"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/udnkit/udnkit/dataplane"
	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/dataplane/topology/migration"
	"github.com/udnkit/udnkit/dataplane/topology/pods"
	"github.com/udnkit/udnkit/internal/phase"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/kubevirt"
	"github.com/udnkit/udnkit/ovnk/nadtrust"
	"github.com/udnkit/udnkit/ovnk/netconf"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

// ReasonPodPortFailed is the Warning Event of a pod whose port cannot be
// built from its annotation.
const ReasonPodPortFailed = "PodPortFailed"

// Reconciler programs pod ports (see the package doc).
type Reconciler struct {
	Client client.Client
	OVN    *dataplane.Client
	// Local says whether a node is in this zone (nil: every node is).
	Local func(*corev1.Node) bool
	// Recorder, when set, raises ReasonPodPortFailed on a pod.
	Recorder recorder.EventRecorder
	// Cluster gives a VM's DHCP options the network's default MTU.
	Cluster ovnk.ClusterConfig
	// Services, when set, is what the cluster's DNS service
	// (ovnk.DNSService) is read from and watched through; nil: Client,
	// unwatched.
	Services cache.Cache
	// Workers and FIFOQueue are zone.Options'.
	Workers   int
	FIFOQueue bool
	// Guard applies the NAD ownership rule; nil: one reading through Client.
	Guard *nadtrust.Guard
	trust zone.Trusting
	// Wake, when set, queues a Primary network's NADs again as soon as
	// its topology is applied in the zone (nil: TopologyWait later).
	Wake   *zone.TopologyWake
	waiter *zone.TopologyWaiter

	networks engine.KeyLocks
	sweeps   zone.Sweeps
	names    zone.Names // NetworkName, between sweeps

	mu sync.Mutex
	// lastGood is the port input last read for a pod, by network and port
	// name: what a pod whose entry turns unreadable keeps.
	lastGood map[string]map[string]pods.Pod
	// openPortsWarned is the malformed open-ports annotation each pod
	// ("<namespace>/<name>") was last warned of (isolation.go).
	openPortsWarned map[string]string
}

// SetupWithManager registers the reconciler.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := zone.TrustWatches(ctrl.NewControllerManagedBy(mgr).
		Named("dataplane-pods").
		WithOptions(zone.ControllerOptions(r.Workers, r.FIFOQueue)), r.Client, r.guard(), NetworkName).
		// VTEPNodeFacts: the chassis ID, the zone and the host subnets.
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(zone.NADsIn(r.Client, "")), zone.VTEPNodeFacts.Predicate()).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return zone.NADsIn(r.Client, o.GetNamespace())(ctx, o)
		}), builder.WithPredicates(podChanged))
	if r.Services != nil {
		b = b.WatchesRawSource(zone.WatchServices(r.Client, r.Services))
	}
	b, r.waiter = r.Wake.Watch(b)
	return b.Complete(r)
}

// podChanged passes a pod's creation after the initial list, its deletion
// and an update of what its port reads: its node, phase,
// k8s.ovn.org/pod-networks, k8s.v1.cni.cncf.io/networks (which of a
// Secondary network's entries are wired), or its migration target's
// readiness.
var podChanged = predicate.Funcs{CreateFunc: zone.CreatedLater, UpdateFunc: func(e event.UpdateEvent) bool {
	old, ok1 := e.ObjectOld.(*corev1.Pod)
	cur, ok2 := e.ObjectNew.(*corev1.Pod)
	if !ok1 || !ok2 {
		return true
	}
	for _, k := range []string{ovnk.AnnotationPodNetworks, ovnk.AnnotationNetworks, kubevirt.AnnotationMigrationTargetReady} {
		if old.Annotations[k] != cur.Annotations[k] {
			return true
		}
	}
	return old.Spec.NodeName != cur.Spec.NodeName || old.Status.Phase != cur.Status.Phase
}}

// Reconcile applies the ports of the request's NAD's network and removes
// those of networks whose NADs are gone, one phase after another.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return phase.Run(ctx, &zone.NADScope{Req: req}, []phase.Func[*zone.NADScope]{
		zone.ReadNADPhase[*zone.NADScope](r.Client, r.guard()),
		r.applyPorts,
		r.sweep,
	})
}

// network is what a NAD's config says of its network.
type network struct {
	pods.Network
	conf *netconf.NetConf
}

// NetworkName is the network of a NAD of a topology with pod ports.
func NetworkName(nad *nadv1.NetworkAttachmentDefinition) (string, bool) {
	n, err := networkOf(nad)
	return n.Name, err == nil && n.Name != ""
}

func networkOf(nad *nadv1.NetworkAttachmentDefinition) (network, error) {
	conf, err := netconf.Parse(nad.Spec.Config)
	if err != nil {
		return network{}, fmt.Errorf("NAD %s/%s spec.config: %w", nad.Namespace, nad.Name, err)
	}
	switch conf.Topology {
	case base.TopologyLayer2, base.TopologyLayer3, ovnk.TopologyLocalnet:
		return network{Network: pods.Network{Name: conf.Name, Topology: conf.Topology}, conf: conf}, nil
	}
	return network{}, nil
}

// applyPorts applies the NAD's network's ports (and a Localnet network's
// switch first), its reconciles taking turns.
func (r *Reconciler) applyPorts(ctx context.Context, s *zone.NADScope) (reconcile.Result, error) {
	if s.Owner == nil {
		return reconcile.Result{}, nil
	}
	n, err := networkOf(s.NAD)
	if err != nil || n.Name == "" || n.Name != s.Owner.Network {
		return reconcile.Result{}, nil // another controller reports a malformed NAD
	}
	s.Network = n.Name
	if n.conf.Role == podannotation.RolePrimary {
		if res, wait := r.waiter.WaitForTopology(ctx, r.OVN, n.Name, n.Topology, s.Req); wait {
			return res, nil
		}
	}
	defer r.networks.Lock(n.Name)()
	if err := r.applySwitch(ctx, s.NAD, n); err != nil {
		return s.Done(reconcile.Result{}, err)
	}
	in, err := r.portsOf(ctx, n)
	if err != nil {
		return s.Done(reconcile.Result{}, err)
	}
	d, err := pods.Ports(n.Network, in)
	if err == nil && n.Topology == base.TopologyLayer2 && n.conf.Role == podannotation.RolePrimary {
		err = r.addVMDHCP(ctx, d, n, in)
	}
	if err != nil {
		// portsOf checked each pod: a failure here is a bug, not an input.
		return s.Done(reconcile.Result{}, err)
	}
	if _, err := r.OVN.ApplyUnless(ctx, d, zone.UnlessGone(r.Client, r.guard(), NetworkName, n.Name)); err != nil {
		return s.Done(reconcile.Result{}, err)
	}
	return reconcile.Result{}, nil
}

// applySwitch applies the switch a Localnet or Secondary Layer2 network's
// ports are on (a Primary Layer2 network's is the Layer2 topology's, a
// Layer3 network's node switches the Layer3 topology's). A NAD it cannot
// build one from is logged and waits for its next change.
func (r *Reconciler) applySwitch(ctx context.Context, nad *nadv1.NetworkAttachmentDefinition, n network) error {
	var d *rows.Desired
	subnets, err := n.conf.SubnetPrefixes()
	switch {
	case err != nil:
	case n.Topology == ovnk.TopologyLocalnet:
		d, err = pods.LocalnetSwitch(pods.LocalnetNetwork{Name: n.Name, Role: n.conf.Role, Subnets: subnets,
			PhysicalNetwork: n.conf.PhysicalNetworkName, VLAN: int(n.conf.VLANID)})
	case n.Topology == base.TopologyLayer2 && n.conf.Role == podannotation.RoleSecondary:
		var ids ovnk.NetworkIDs
		if ids, err = ovnk.DecodeNetworkIDs(nad.Annotations); err == nil && !ids.HasID {
			err = fmt.Errorf("no %s yet", ovnk.AnnotationNetworkID)
		}
		if err == nil {
			d, err = pods.SecondaryLayer2Switch(pods.SecondaryLayer2Network{Name: n.Name, Subnets: subnets, NetworkID: ids.ID})
		}
	default:
		return nil
	}
	if err != nil {
		log.FromContext(ctx).Error(err, "skipping the network's switch", "network", n.Name)
		return nil
	}
	_, err = r.OVN.ApplyUnless(ctx, d, zone.UnlessGone(r.Client, r.guard(), NetworkName, n.Name))
	return err
}

// addVMDHCP gives a Primary Layer2 network's VM ports their VM's DHCP
// options (upstream's requireDHCP and ensureDHCP): the network's MTU, the
// pod's gateway as router and the DNS service's ClusterIPs, if it exists.
func (r *Reconciler) addVMDHCP(ctx context.Context, d *rows.Desired, n network, in []pods.Pod) error {
	reader := client.Reader(r.Client)
	if r.Services != nil {
		reader = r.Services
	}
	svcs, err := zone.EnabledServices(ctx, reader, []types.NamespacedName{ovnk.DNSService})
	if err != nil {
		return err
	}
	var dns []netip.Addr
	for _, s := range svcs {
		dns = append(dns, s.ClusterIPs...)
	}
	cfg := migration.UpstreamVMDHCP(int(n.conf.NetworkMTU(r.Cluster.MTU)), dns)
	return pods.AddVMDHCP(d, n.Network, func(p pods.Pod) []nbdb.DHCPOptions {
		return cfg.Rows(migration.VM{Namespace: p.Namespace, Name: p.VM, IPs: p.IPs, Gateways: p.Gateways})
	}, in)
}

func (r *Reconciler) sweep(ctx context.Context, s *zone.NADScope) (reconcile.Result, error) {
	return s.Sweep(ctx, &r.sweeps, r.collect)
}

// collect removes the ports (and Localnet switches) of networks no live
// NAD names.
func (r *Reconciler) collect(ctx context.Context) error {
	owners := []rows.Owner{
		{Topology: base.TopologyLayer2, Piece: pods.Piece}, {Topology: base.TopologyLayer3, Piece: pods.Piece},
		{Topology: ovnk.TopologyLocalnet, Piece: pods.Piece}, {Topology: ovnk.TopologyLocalnet, Piece: pods.PieceLocalnetSwitch},
		{Topology: base.TopologyLayer2, Piece: pods.PieceSecondaryLayer2Switch},
	}
	live, err := zone.CollectPieces(ctx, r.Client, r.guard(), r.OVN, r.OVN.PieceNetworks, r.names.Of(NetworkName), owners...)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for n := range r.lastGood {
		if !live[n] {
			delete(r.lastGood, n)
		}
	}
	return nil
}

func (r *Reconciler) guard() *nadtrust.Guard { return r.trust.Of(r.Guard, r.Client) }
