package networkpolicy

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/udnkit/udnkit/dataplane"
	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/dataplane/topology/networkpolicy"
	"github.com/udnkit/udnkit/internal/phase"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/nadtrust"
	"github.com/udnkit/udnkit/ovnk/netconf"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces;pods;nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=k8s.cni.cncf.io,resources=multi-networkpolicies,verbs=get;list;watch

// Reconciler programs the network policies of Primary networks (see the
// package doc).
type Reconciler struct {
	Client client.Client
	OVN    *dataplane.Client
	// Local says whether a node is in this zone (nil: every node is).
	Local func(*corev1.Node) bool
	// MultiNetworkPolicy is Options.MultiNetworkPolicy.
	MultiNetworkPolicy bool
	// Workers and FIFOQueue are zone.Options'.
	Workers   int
	FIFOQueue bool
	// Guard applies the NAD ownership rule; nil: one reading through Client.
	Guard *nadtrust.Guard
	trust zone.Trusting

	networks engine.KeyLocks
	sweeps   zone.Sweeps
	names    zone.Names // networkName, between sweeps
	// Wake, when set, queues a Primary network's NADs again as soon as
	// its topology is applied in the zone (nil: TopologyWait later).
	Wake   *zone.TopologyWake
	waiter *zone.TopologyWaiter
	// subnets: the nodes' decoded k8s.ovn.org/node-subnets, between
	// reconciles.
	subnets zone.NodeSubnets
}

// SetupWithManager registers the reconciler.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	inNamespace := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		return zone.NADsIn(r.Client, o.GetNamespace())(ctx, o)
	})
	all := handler.EnqueueRequestsFromMapFunc(zone.NADsIn(r.Client, ""))
	b := zone.TrustWatches(ctrl.NewControllerManagedBy(mgr).
		Named("dataplane-networkpolicy").
		WithOptions(zone.ControllerOptions(r.Workers, r.FIFOQueue)), r.Client, r.guard(), r.networkName).
		Watches(&networkingv1.NetworkPolicy{}, inNamespace, builder.WithPredicates(policyChanged)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.podNADs), builder.WithPredicates(podChanged)).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.namespaceNADs), builder.WithPredicates(namespaceChanged)).
		Watches(&corev1.Node{}, all, zone.VTEPNodeFacts.Predicate())
	if r.MultiNetworkPolicy {
		b = b.Watches(multiNetworkPolicy(), all, builder.WithPredicates(multiPolicyChanged))
	}
	b, r.waiter = r.Wake.Watch(b)
	return b.Complete(r)
}

// podNADs are the NADs of a pod's namespace (its Primary network's) and
// those its k8s.ovn.org/pod-networks names (Secondary networks' may be of
// another namespace; an indexed key, "ns/name/1", names its NAD).
func (r *Reconciler) podNADs(ctx context.Context, o client.Object) []reconcile.Request {
	reqs := zone.NADsIn(r.Client, o.GetNamespace())(ctx, o)
	keys, _ := podannotation.DecodePodNetworkKeys(o.GetAnnotations())
	for _, k := range keys {
		nad, ok := podannotation.NADOfKey(k)
		if ns, name, _ := strings.Cut(nad, "/"); ok && ns != o.GetNamespace() {
			req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
			if !slices.Contains(reqs, req) {
				reqs = append(reqs, req)
			}
		}
	}
	return reqs
}

// namespaceNADs are the NADs whose networks' rows read a namespace
// (networkpolicy.Network.NamespacesRead): those of the namespace (its
// policies' ACL logging) and of each namespace with a NetworkPolicy that
// selects namespaces; a MultiNetworkPolicy that selects namespaces, whose
// policy-for may name any NAD, queues every NAD. A namespace's change
// queued every NAD of the cluster before, networks x namespaces reconciles
// as namespaces came.
func (r *Reconciler) namespaceNADs(ctx context.Context, o client.Object) []reconcile.Request {
	namespaces := map[string]bool{o.GetName(): true}
	var nps networkingv1.NetworkPolicyList
	if err := r.Client.List(ctx, &nps, client.UnsafeDisableDeepCopy); err != nil {
		return zone.NADsIn(r.Client, "")(ctx, o)
	}
	for i := range nps.Items {
		if networkpolicy.SelectsNamespaces(&nps.Items[i]) {
			namespaces[nps.Items[i].Namespace] = true
		}
	}
	if r.MultiNetworkPolicy && r.multiSelectsNamespaces(ctx) {
		return zone.NADsIn(r.Client, "")(ctx, o)
	}
	var reqs []reconcile.Request
	for _, ns := range slices.Sorted(maps.Keys(namespaces)) {
		reqs = append(reqs, zone.NADsIn(r.Client, ns)(ctx, o)...)
	}
	return reqs
}

// policyChanged passes a policy's creation after the initial list, its
// deletion and a change of its spec.
var policyChanged = predicate.Funcs{CreateFunc: zone.CreatedLater, UpdateFunc: func(e event.UpdateEvent) bool {
	return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration()
}}

// podChanged passes what the rows read of a pod: its labels, node, phase,
// k8s.ovn.org/pod-networks and k8s.v1.cni.cncf.io/networks (which of a
// Secondary network's entries are members).
var podChanged = predicate.Funcs{CreateFunc: zone.CreatedLater, UpdateFunc: func(e event.UpdateEvent) bool {
	old, ok1 := e.ObjectOld.(*corev1.Pod)
	cur, ok2 := e.ObjectNew.(*corev1.Pod)
	if !ok1 || !ok2 {
		return true
	}
	return !labels.Equals(old.Labels, cur.Labels) || old.Spec.NodeName != cur.Spec.NodeName || old.Status.Phase != cur.Status.Phase ||
		old.Annotations[ovnk.AnnotationPodNetworks] != cur.Annotations[ovnk.AnnotationPodNetworks] ||
		old.Annotations[ovnk.AnnotationNetworks] != cur.Annotations[ovnk.AnnotationNetworks]
}}

// namespaceChanged passes a namespace's labels (namespace selectors) and
// acl-logging changes.
var namespaceChanged = predicate.Funcs{CreateFunc: zone.CreatedLater, UpdateFunc: func(e event.UpdateEvent) bool {
	return !labels.Equals(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) ||
		e.ObjectOld.GetAnnotations()[ovnk.AnnotationACLLogging] != e.ObjectNew.GetAnnotations()[ovnk.AnnotationACLLogging]
}}

// Reconcile applies the request's NAD's network's policy rows and removes
// those of networks whose NADs are gone, one phase after another.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return phase.Run(ctx, &zone.NADScope{Req: req}, []phase.Func[*zone.NADScope]{
		zone.ReadNADPhase[*zone.NADScope](r.Client, r.guard()),
		r.apply,
		r.sweep,
	})
}

// apply builds and applies the network's rows, its reconciles taking turns.
func (r *Reconciler) apply(ctx context.Context, s *zone.NADScope) (reconcile.Result, error) {
	if s.Owner == nil {
		return reconcile.Result{}, nil
	}
	net, primary, ok, err := r.networkOf(s.NAD)
	if err != nil || !ok || net.Name != s.Owner.Network {
		if err != nil {
			log.FromContext(ctx).Error(err, "skipping network") // the topology controllers report it
		}
		return reconcile.Result{}, nil
	}
	s.Network = net.Name
	if primary {
		if res, wait := r.waiter.WaitForTopology(ctx, r.OVN, net.Name, net.Topology, s.Req); wait {
			return res, nil
		}
	}
	defer r.networks.Lock(net.Name)()
	if err := r.read(ctx, &net, primary); err != nil {
		return s.Done(reconcile.Result{}, err)
	}
	d, err := networkpolicy.Build(net)
	if err != nil {
		// A policy that cannot be built waits for its next change.
		log.FromContext(ctx).Error(err, "policies left out", "network", net.Name)
	}
	if d == nil {
		return reconcile.Result{}, nil
	}
	if _, err := r.OVN.ApplyUnless(ctx, d, zone.UnlessGone(r.Client, r.guard(), r.networkName, net.Name)); err != nil {
		return s.Done(reconcile.Result{}, err)
	}
	return reconcile.Result{}, nil
}

// networkOf reads a NAD's network, name and IP families: a Primary Layer2
// or Layer3 network's, and with MultiNetworkPolicy a Secondary Layer2,
// Layer3 or Localnet network's (ok false for other NADs).
func (r *Reconciler) networkOf(nad *nadv1.NetworkAttachmentDefinition) (n networkpolicy.Network, primary, ok bool, err error) {
	conf, err := netconf.Parse(nad.Spec.Config)
	if err != nil {
		return n, false, false, fmt.Errorf("NAD %s/%s spec.config: %w", nad.Namespace, nad.Name, err)
	}
	switch {
	case conf.Role == podannotation.RolePrimary && (conf.Topology == base.TopologyLayer2 || conf.Topology == base.TopologyLayer3):
	case conf.Role == podannotation.RoleSecondary && r.MultiNetworkPolicy &&
		(conf.Topology == base.TopologyLayer2 || conf.Topology == base.TopologyLayer3 || conf.Topology == ovnk.TopologyLocalnet):
	default:
		return n, false, false, nil
	}
	subnets, err := conf.SubnetPrefixes()
	if err != nil {
		return n, false, false, fmt.Errorf("NAD %s/%s spec.config: %w", nad.Namespace, nad.Name, err)
	}
	n = networkpolicy.Network{Name: conf.Name, Topology: conf.Topology}
	for _, p := range subnets {
		n.IPv4 = n.IPv4 || p.Addr().Is4()
		n.IPv6 = n.IPv6 || p.Addr().Is6()
	}
	primary = conf.Role == podannotation.RolePrimary
	if primary && !n.IPv4 && !n.IPv6 {
		return n, false, false, fmt.Errorf("NAD %s/%s: Primary network %s has no subnets", nad.Namespace, nad.Name, n.Name)
	}
	return n, primary, n.Name != "", nil
}

// networkName is the network of a NAD networkOf reads.
func (r *Reconciler) networkName(nad *nadv1.NetworkAttachmentDefinition) (string, bool) {
	n, _, ok, err := r.networkOf(nad)
	return n.Name, ok && err == nil
}

func (r *Reconciler) sweep(ctx context.Context, s *zone.NADScope) (reconcile.Result, error) {
	return s.Sweep(ctx, &r.sweeps, r.collect)
}

// collect removes the policy rows of networks no live NAD names.
func (r *Reconciler) collect(ctx context.Context) error {
	var owners []rows.Owner
	for _, t := range []string{base.TopologyLayer2, base.TopologyLayer3, ovnk.TopologyLocalnet} {
		owners = append(owners, rows.Owner{Topology: t, Piece: networkpolicy.Piece})
	}
	_, err := zone.CollectPieces(ctx, r.Client, r.guard(), r.OVN, r.OVN.PieceNetworks, r.names.Of(r.networkName), owners...)
	return err
}

func (r *Reconciler) guard() *nadtrust.Guard { return r.trust.Of(r.Guard, r.Client) }
