package nodes

import (
	"context"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/source"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/nadtrust"
	"github.com/udnkit/udnkit/ovnk/netconf"
	"github.com/udnkit/udnkit/reconcilers/idalloc"
	"github.com/udnkit/udnkit/reconcilers/internal/nadindex"
	"github.com/udnkit/udnkit/reconcilers/internal/pending"
	"github.com/udnkit/udnkit/reconcilers/nodes/layer3"
)

// Event reasons.
const (
	// EventInvalidNodeID (Warning): a node's k8s.ovn.org/node-id or tunnel
	// IDs were malformed, out of range or another node's; the node gets new
	// ones.
	EventInvalidNodeID              = "InvalidNodeID"
	EventNodeIDAllocationFailed     = "NodeIDAllocationFailed"
	EventTunnelIDAllocationFailed   = "TunnelIDAllocationFailed"
	EventHostSubnetAllocationFailed = "HostSubnetAllocationFailed"
	// EventNodeAllocationConflict (Warning): another writer (a second
	// manager without leader election, or an old leader) gave one of a
	// node's IDs or host subnets to another node too; the younger node
	// allocates again.
	EventNodeAllocationConflict = "NodeAllocationConflict"
)

// HostSubnetsConsumer is the consumer label of this controller's reports of
// untrusted NADs (udnkit_untrusted_nads_total).
const HostSubnetsConsumer = "host-subnets"

const (
	// ControllerName names the controller (its metrics and logs).
	ControllerName = "node"
	fieldOwner     = "udnkit-node-controller"
	// indexNADController indexes NADs by their controller's UID.
	indexNADController = ".metadata.controllerUID.nodes"
	// maxNodesInMessage bounds the nodes a condition names.
	maxNodesInMessage = 5
	// conflictRetry is how soon a reconcile that lost an
	// optimistic-concurrency race runs again (after the cache caught up).
	conflictRetry = 200 * time.Millisecond
	// defaultListPage is Options.ListPage's default.
	defaultListPage = 100
)

// Options configures the node controller.
type Options struct {
	// MaxConcurrentReconciles is how many nodes are reconciled at once
	// (at least 1).
	MaxConcurrentReconciles int
	// SingleWriter says this manager is the only writer of node IDs and
	// host subnets (it runs under leader election): the check of every
	// write against every other node is skipped, and a new network's host
	// subnets start from what this process knows. Without leader election
	// it must be false.
	SingleWriter bool
	// ListPage is how many nodes one LIST returns when the controller reads
	// every node straight from the apiserver (0: 100).
	ListPage int64
	// NodeIDs says who writes the nodes' k8s.ovn.org/node-id ("":
	// NodeIDsAllocate). With NodeIDsRead the controller never writes it and
	// a node without a valid one gets no tunnel IDs or host subnets.
	NodeIDs NodeIDSource
}

// The node controller also reads and writes what the UDN and CUDN
// controllers' RBAC grants (networks, their status, NADs, Events).
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;update;patch

// SetupWithManager registers the node controller with mgr.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if opts.MaxConcurrentReconciles < 1 {
		opts.MaxConcurrentReconciles = 1
	}
	if opts.ListPage <= 0 {
		opts.ListPage = defaultListPage
	}
	if opts.NodeIDs == "" {
		opts.NodeIDs = NodeIDsAllocate
	}
	if err := opts.NodeIDs.Validate(); err != nil {
		return fmt.Errorf("node controller: %w", err)
	}
	if err := nadindex.Register(context.Background(), mgr.GetFieldIndexer(), indexNADController); err != nil {
		return fmt.Errorf("node controller: %w", err)
	}
	return newReconciler(mgr, opts).setup(mgr)
}

// reconciler gives every node a node ID, one tunnel ID per encap IP
// (multi-VTEP) and a host subnet per Layer3 network and IP family. Its
// state, what each lock guards and the lock order are in the package doc.
type reconciler struct {
	client   client.Client
	reader   client.Reader
	recorder recorder.EventRecorder
	opts     Options

	ids        *idalloc.IDAllocator // node IDs and multi-VTEP tunnel IDs
	followed   followedIDs          // with NodeIDsRead
	tunnelNext atomic.Int64         // with NodeIDsRead: allocTunnelID's next start
	nets       networkStates
	networks   *layer3.Lister
	seen       seenSubnets
	pace       pacer
	unverified pending.Set
	// retry re-enqueues nodes that lack a host subnet when a deleted node
	// frees some.
	retry chan event.GenericEvent
}

func newReconciler(mgr ctrl.Manager, opts Options) *reconciler {
	r := &reconciler{
		client: mgr.GetClient(), reader: mgr.GetAPIReader(), recorder: mgr.GetEventRecorder(fieldOwner), opts: opts,
		ids: idalloc.NewIDAllocator("node ID", ovnk.FirstNodeID, ovnk.MaxNodeID),
		nets: networkStates{
			byName:  map[string]*hostSubnetState{},
			removed: map[string]bool{},
			orphans: map[string]map[string][]netip.Prefix{},
		},
		seen:     seenSubnets{m: map[string]nodeSubnets{}},
		followed: newFollowedIDs(),
		pace:     pacer{workers: opts.MaxConcurrentReconciles},
		retry:    make(chan event.GenericEvent, 1024),
	}
	guard := &nadtrust.Guard{Reader: mgr.GetClient(), Live: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder(fieldOwner), Consumer: HostSubnetsConsumer}
	r.networks = layer3.NewLister(r.client, indexNADController, guard, r.pace.listAge)
	return r
}

func (r *reconciler) setup(mgr ctrl.Manager) error {
	allNodes := handler.Funcs{
		CreateFunc: func(ctx context.Context, _ event.CreateEvent, q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
			r.enqueueAllNodes(ctx, q)
		},
		UpdateFunc: func(ctx context.Context, _ event.UpdateEvent, q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
			r.enqueueAllNodes(ctx, q)
		},
		DeleteFunc: func(ctx context.Context, _ event.DeleteEvent, q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
			r.enqueueAllNodes(ctx, q)
		},
		GenericFunc: func(ctx context.Context, _ event.GenericEvent, q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
			r.enqueueAllNodes(ctx, q)
		},
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.Node{}).
		Watches(&udnv1.UserDefinedNetwork{}, allNodes, builder.WithPredicates(specOrDeletionChanged, isLayer3Network)).
		Watches(&udnv1.ClusterUserDefinedNetwork{}, allNodes, builder.WithPredicates(specOrDeletionChanged, isLayer3Network)).
		// A Layer3 subnet gets host subnets once its NAD carries it.
		Watches(&nadv1.NetworkAttachmentDefinition{}, allNodes, builder.WithPredicates(layer3NADConfigChanged)).
		WatchesRawSource(source.Channel(r.retry, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.opts.MaxConcurrentReconciles}).
		Complete(r)
}

// enqueueAllNodes reconciles every node for a change of a Layer3 network or
// its NAD, when the pacer says (nextPass): a lone change at once; during a
// burst the changes that arrive meanwhile land in the same reconcile of each
// node (a pending add keeps its earlier time), so a burst of N networks costs
// a few passes over the nodes rather than N, each of which decodes and
// re-encodes every node's k8s.ovn.org/node-subnets (O(networks)).
func (r *reconciler) enqueueAllNodes(ctx context.Context, q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
	// The cache holds the changed network or NAD already (informers update
	// their store before they notify): the next reconcile lists the Layer3
	// networks again.
	r.networks.Changed()
	var nodes metav1.PartialObjectMetadataList
	nodes.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := r.client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return
	}
	delay := r.pace.nextPass(time.Now(), len(nodes.Items))
	for _, n := range nodes.Items {
		q.AddAfter(ctrl.Request{NamespacedName: types.NamespacedName{Name: n.Name}}, delay)
	}
}

// isLayer3Network passes Layer3 networks (before or after the change): only
// they have host subnets. Every node is reconciled for each event passed.
var isLayer3Network = predicate.NewPredicateFuncs(func(o client.Object) bool {
	switch n := o.(type) {
	case *udnv1.UserDefinedNetwork:
		return n.Spec.Topology == udnv1.NetworkTopologyLayer3
	case *udnv1.ClusterUserDefinedNetwork:
		return n.Spec.Network.Topology == udnv1.NetworkTopologyLayer3
	}
	return true
})

// layer3NADConfigChanged passes NADs of Layer3 networks that appear, go, or
// change their config (the subnets they publish); not annotation or
// finalizer updates, and not other topologies' NADs.
var layer3NADConfigChanged = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool { return isLayer3NAD(e.Object) },
	DeleteFunc: func(e event.DeleteEvent) bool { return isLayer3NAD(e.Object) },
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, okO := e.ObjectOld.(*nadv1.NetworkAttachmentDefinition)
		n, okN := e.ObjectNew.(*nadv1.NetworkAttachmentDefinition)
		if !okO || !okN {
			return true
		}
		return (isLayer3NAD(o) || isLayer3NAD(n)) &&
			(o.Spec.Config != n.Spec.Config || o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero())
	},
	GenericFunc: func(e event.GenericEvent) bool { return isLayer3NAD(e.Object) },
}

func isLayer3NAD(o client.Object) bool {
	nad, ok := o.(*nadv1.NetworkAttachmentDefinition)
	if !ok {
		return true
	}
	conf, err := netconf.Parse(nad.Spec.Config)
	return err != nil || conf.Topology == "layer3"
}

// specOrDeletionChanged ignores status-only updates of networks.
var specOrDeletionChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
			e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
	},
}
