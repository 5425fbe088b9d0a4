package reconcilers

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
	"github.com/udnkit/udnkit/reconcilers/netids"
)

// Host subnet condition of Layer3 networks, written by the node controller
// next to NetworkCreated (each condition has its own apply field manager).
const (
	ConditionHostSubnetsAllocated = "HostSubnetsAllocated"
	ReasonHostSubnetsAllocated    = "HostSubnetsAllocated"
	ReasonHostSubnetsExhausted    = "HostSubnetsExhausted"

	nodeFieldOwner = "udnkit-node-controller"
	// maxNodesInMessage bounds the nodes a condition names.
	maxNodesInMessage = 5
)

// layer3Network is a Layer3 UDN or CUDN as the node controller sees it.
type layer3Network struct {
	name    string // OVN network name, the key in k8s.ovn.org/node-subnets
	kind    string
	obj     types.NamespacedName
	uid     types.UID
	subnets []netids.ClusterSubnet
	// hostSubnets is the network's HostSubnetsAllocated condition as last
	// read (nil when it has none).
	hostSubnets *metav1.Condition
}

type hostSubnetState struct {
	alloc   *netids.HostSubnetAllocator
	net     layer3Network
	lacking map[string]string // node → error, nodes without a host subnet
	// want is the condition last computed (under netMu); its summary ""
	// makes the next reconcile write it again.
	want hostSubnetsCondition

	// applyMu orders the condition's writes: reconciles of several nodes
	// compute summaries in turn but write them concurrently, so each writer
	// writes the latest summary (want), not its own, and skips it when
	// applied already. Otherwise an older summary could land last.
	applyMu sync.Mutex
	applied string // the summary last written (under applyMu)
}

type hostSubnetsCondition struct {
	status          metav1.ConditionStatus
	reason, summary string
}

// nodeReconciler gives every node a node ID, one tunnel ID per encap IP
// (multi-VTEP) and a host subnet per Layer3 network and IP family.
//
// Reconciles of several nodes run at once (MaxConcurrentReconciles). What
// they share is guarded so:
//   - initMu guards inited. ensureInit holds it while it lists every node
//     from the apiserver and reserves their IDs: the first reconciles wait
//     for that one read.
//   - netMu guards networks, removed, rebuilt, synced, syncedGen, seq,
//     changes and orphans, and each hostSubnetState's lacking and want, and
//     its net. syncNetworks holds it while it lists every node
//     from the apiserver (on the first sync, and for a new network when
//     another writer may be about): reconciles wait for that read.
//   - netsCacheMu guards netsCache, netsCacheGen and netsCacheAt.
//     cachedLayer3Networks holds it while it lists the networks from the
//     cache, so one reconcile lists them while the others wait (and then
//     mostly reuse its list).
//   - nadMu guards nadParsed. nadSubnets holds it while it checks a NAD's
//     owner (nadtrust may read the apiserver).
//   - seenMu guards seen.
//   - each hostSubnetState's applyMu guards its applied and orders the
//     writes of that network's HostSubnetsAllocated condition; setLacking
//     holds it across the status apply.
//   - ids, each hostSubnetState's alloc, unverified and nadGuard lock
//     themselves.
//   - netsGen, reconcileAvg and lastPassDelay are atomics.
//
// Lock order: netsCacheMu before nadMu (layer3Networks calls nadSubnets)
// before nadGuard's lock (Trusted); applyMu before netMu (setLacking);
// initMu before ids's lock (ensureInit); netMu before an allocator's lock
// (syncNetworks). No other two of these are held together.
type nodeReconciler struct {
	client   client.Client
	reader   client.Reader
	recorder recorder.EventRecorder
	cfg      *Config
	// nadGuard checks the NADs whose subnets nadSubnets reads.
	nadGuard *nadtrust.Guard

	initMu sync.Mutex
	inited bool
	ids    *netids.IDAllocator // node IDs and multi-VTEP tunnel IDs

	netMu    sync.Mutex
	networks map[string]*hostSubnetState
	// removed are networks deleted while this process ran; their entries
	// are dropped from k8s.ovn.org/node-subnets.
	removed map[string]bool
	// rebuilt: the node-subnets annotations have been read once, straight
	// from the apiserver (the first reconcile).
	rebuilt bool
	// synced is what syncNetworks returned for network generation syncedGen.
	synced    *nodeNetworks
	syncedGen int64
	seq       int64
	changes   []networkChange // consecutive seqs, oldest first
	// orphans are host subnets nodes record (or recorded until lately) for
	// network names without a network: networks deleted before this process
	// started or while it ran. A network created later under such a name
	// starts from them instead of a new read of every node.
	orphans map[string]map[string][]netip.Prefix
	// unverified are nodes whose newly written IDs or host subnets have not
	// yet been checked against every other node (see verify).
	unverified unverifiedSet

	// netsGen counts network and NAD events; netsCache is layer3Networks
	// as of netsCacheGen.
	netsGen      atomic.Int64
	netsCacheMu  sync.Mutex
	netsCache    []layer3Network
	netsCacheGen int64
	netsCacheAt  time.Time

	// nadParsed caches nadSubnets per network UID.
	nadMu     sync.Mutex
	nadParsed map[types.UID]parsedNAD

	// seen is each node's k8s.ovn.org/node-subnets as last decoded or
	// written (see decodeSubnets).
	seenMu sync.Mutex
	seen   map[string]nodeSubnets

	// reconcileAvg is the running average duration in nanoseconds of a
	// reconcile that checks the node's host subnets (see passDelay);
	// lastPassDelay is the last passDelay.
	reconcileAvg  atomic.Int64
	lastPassDelay atomic.Int64

	// retry re-enqueues nodes that lack a host subnet when a deleted node
	// frees some.
	retry chan event.GenericEvent
}

func newNodeReconciler(mgr ctrl.Manager, cfg *Config) *nodeReconciler {
	return &nodeReconciler{
		client: mgr.GetClient(), reader: mgr.GetAPIReader(), recorder: mgr.GetEventRecorder(nodeFieldOwner), cfg: cfg,
		nadGuard: &nadtrust.Guard{Reader: mgr.GetClient(), Live: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder(nodeFieldOwner), Consumer: HostSubnetsConsumer},
		ids:      netids.NewIDAllocator("node ID", ovnk.FirstNodeID, ovnk.MaxNodeID),
		networks: map[string]*hostSubnetState{},
		removed:  map[string]bool{},
		orphans:  map[string]map[string][]netip.Prefix{},
		seen:     map[string]nodeSubnets{},
		retry:    make(chan event.GenericEvent, 1024),
	}
}

func (r *nodeReconciler) setup(mgr ctrl.Manager) error {
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
		Named("node").
		For(&corev1.Node{}).
		Watches(&udnv1.UserDefinedNetwork{}, allNodes, builder.WithPredicates(specOrDeletionChanged, isLayer3Network)).
		Watches(&udnv1.ClusterUserDefinedNetwork{}, allNodes, builder.WithPredicates(specOrDeletionChanged, isLayer3Network)).
		// A Layer3 subnet gets host subnets once its NAD carries it.
		Watches(&nadv1.NetworkAttachmentDefinition{}, allNodes, builder.WithPredicates(layer3NADConfigChanged)).
		WatchesRawSource(source.Channel(r.retry, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.cfg.MaxConcurrentReconciles}).
		Complete(r)
}

// enqueueAllNodes reconciles every node for a change of a Layer3 network or
// its NAD, after passDelay: the changes that arrive meanwhile land in the same
// reconcile of each node (a pending add keeps its earlier time), so a burst of
// N networks costs a few passes over the nodes rather than N, each of which
// decodes and re-encodes every node's k8s.ovn.org/node-subnets (O(networks)).
func (r *nodeReconciler) enqueueAllNodes(ctx context.Context, q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
	// The cache holds the changed network or NAD already (informers update
	// their store before they notify): the next reconcile lists the Layer3
	// networks again.
	r.netsGen.Add(1)
	var nodes metav1.PartialObjectMetadataList
	nodes.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := r.client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return
	}
	delay := r.passDelay(len(nodes.Items))
	r.lastPassDelay.Store(int64(delay))
	for _, n := range nodes.Items {
		q.AddAfter(ctrl.Request{NamespacedName: types.NamespacedName{Name: n.Name}}, delay)
	}
}

// Bounds of passDelay: the shortest keeps a lone network change prompt, the
// longest bounds what the last network of a burst waits.
const (
	minPassDelay = 100 * time.Millisecond
	maxPassDelay = 3 * time.Second
)

// passDelay is how long a pass over nodes nodes takes, from the running
// average of a node reconcile that checks host subnets: waiting as long
// before the next pass keeps the passes of a burst of network changes to
// about half of the node workers' time, however many networks each pass
// re-encodes.
func (r *nodeReconciler) passDelay(nodes int) time.Duration {
	workers := max(1, r.cfg.MaxConcurrentReconciles)
	d := time.Duration(r.reconcileAvg.Load()) * time.Duration(nodes) / time.Duration(workers)
	return min(max(d, minPassDelay), maxPassDelay)
}

// listAge is how old the networks a reconcile uses may be during a burst of
// network changes: the last pass delay.
func (r *nodeReconciler) listAge() time.Duration {
	return max(time.Duration(r.lastPassDelay.Load()), minPassDelay)
}

// timeReconcile folds one reconcile's duration into reconcileAvg (an
// exponentially weighted average, weight 1/8).
func (r *nodeReconciler) timeReconcile(start time.Time) {
	took := int64(time.Since(start))
	for {
		old := r.reconcileAvg.Load()
		next := old + (took-old)/8
		if old == 0 {
			next = took
		}
		if r.reconcileAvg.CompareAndSwap(old, next) {
			return
		}
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
	conf, err := ovnk.Parse(nad.Spec.Config)
	return err != nil || conf.Topology == "layer3"
}

// specOrDeletionChanged ignores status-only updates of networks.
var specOrDeletionChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
			e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
	},
}

// ensureInit reserves every node's IDs, read straight from the apiserver.
func (r *nodeReconciler) ensureInit(ctx context.Context) error {
	r.initMu.Lock()
	defer r.initMu.Unlock()
	if r.inited {
		return nil
	}
	// Oldest first: when two nodes claim one ID (a second writer, a hand
	// edit), the older node keeps it and Reconcile gives the other a new one.
	nodes, err := listNodesOldestFirst(ctx, r.reader)
	if err != nil {
		return fmt.Errorf("rebuilding node IDs: %w", err)
	}
	for i := range nodes {
		n := &corev1.Node{ObjectMeta: nodes[i].ObjectMeta}
		if id, ok, err := ovnk.DecodeNodeID(n); err == nil && ok {
			_ = r.ids.Reserve(n.Name, id)
		}
		if ids, err := ovnk.DecodeNodeTunnelIDs(n); err == nil {
			for _, id := range ids {
				_ = r.ids.Reserve(n.Name, id)
			}
		}
	}
	r.inited = true
	return nil
}

// cachedLayer3Networks is layer3Networks, listed once per change of a
// network or NAD rather than once per node (a change reconciles every node),
// and during a burst of changes at most once per pass delay: a burst would
// otherwise list every network once per node reconcile. stale says that
// networks changed since the list; the caller reconciles again later.
func (r *nodeReconciler) cachedLayer3Networks(ctx context.Context) (nets []layer3Network, gen int64, stale bool, err error) {
	gen = r.netsGen.Load()
	r.netsCacheMu.Lock()
	defer r.netsCacheMu.Unlock()
	if r.netsCache != nil && (r.netsCacheGen == gen || time.Since(r.netsCacheAt) < r.listAge()) {
		return r.netsCache, r.netsCacheGen, r.netsCacheGen != gen, nil
	}
	at := time.Now()
	if nets, err = r.layer3Networks(ctx); err != nil {
		return nil, 0, false, err
	}
	r.netsCache, r.netsCacheGen, r.netsCacheAt = nets, gen, at
	return nets, gen, false, nil
}

// layer3Networks lists the Layer3 networks.
func (r *nodeReconciler) layer3Networks(ctx context.Context) ([]layer3Network, error) {
	var out []layer3Network
	add := func(name, kind string, obj types.NamespacedName, uid types.UID, spec udnv1.NetworkSpec, conds []metav1.Condition) {
		if spec.Topology != udnv1.NetworkTopologyLayer3 || spec.Layer3 == nil {
			return
		}
		n := layer3Network{name: name, kind: kind, obj: obj, uid: uid}
		if c := meta.FindStatusCondition(conds, ConditionHostSubnetsAllocated); c != nil {
			cc := *c // conds is the cache's own (listed without a copy)
			n.hostSubnets = &cc
		}
		published, known := r.nadSubnets(ctx, uid)
		for _, s := range spec.Layer3.Subnets {
			p, err := netip.ParsePrefix(string(s.CIDR))
			if err != nil {
				return
			}
			if known && !published[p.Masked()] {
				// Appended but held back (a conflict after admission, or the
				// NAD not yet updated): no host subnets before the NAD has it.
				continue
			}
			bits := int(s.HostSubnet)
			if bits == 0 {
				bits = netids.DefaultHostBits(p)
			}
			n.subnets = append(n.subnets, netids.ClusterSubnet{CIDR: p.Masked(), HostBits: bits})
		}
		out = append(out, n)
	}
	var udns udnv1.UserDefinedNetworkList
	if err := r.client.List(ctx, &udns, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	// Networks being deleted keep their host subnets until they are gone:
	// their pods may still run.
	for _, u := range udns.Items {
		add(ovnk.UDNNetworkName(u.Namespace, u.Name), kindUDN, client.ObjectKeyFromObject(&u), u.UID, u.Spec.Network(), u.Status.Conditions)
	}
	var cudns udnv1.ClusterUserDefinedNetworkList
	if err := r.client.List(ctx, &cudns, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	for _, c := range cudns.Items {
		add(ovnk.CUDNNetworkName(c.Name), kindCUDN, client.ObjectKeyFromObject(&c), c.UID, c.Spec.Network, c.Status.Conditions)
	}
	return out, nil
}

// nodeNetworks is what a node reconcile works on: each Layer3 network's
// state by name, and the names sorted. It is shared: read only. seq numbers
// the syncs that changed something; changes records which networks each
// changed (see changedSince).
type nodeNetworks struct {
	states map[string]*hostSubnetState
	names  []string
	seq    int64
}

// networkChange is what the sync numbered seq changed: networks added,
// removed or given other cluster subnets (all: anything, every node checks
// every network).
type networkChange struct {
	seq   int64
	names []string
	all   bool
}

// maxNetworkChanges bounds the changes kept: a node last checked further
// back checks every network.
const maxNetworkChanges = 1024

// changedSince returns the networks changed after sync from up to sync to,
// sorted; ok is false when they are not known (every network may have).
func (r *nodeReconciler) changedSince(from, to int64) (names []string, ok bool) {
	r.netMu.Lock()
	defer r.netMu.Unlock()
	if from >= to {
		return nil, true
	}
	if len(r.changes) == 0 || r.changes[0].seq > from+1 {
		return nil, false
	}
	seen := map[string]bool{}
	for _, c := range r.changes[from+1-r.changes[0].seq:] {
		if c.seq > to {
			break
		}
		if c.all {
			return nil, false
		}
		for _, n := range c.names {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	return names, true
}

// newSnapshot makes states the networks of every node reconcile from now on,
// recording what changed (r.netMu held).
func (r *nodeReconciler) newSnapshot(states map[string]*hostSubnetState, names []string, change networkChange) *nodeNetworks {
	r.seq++
	change.seq = r.seq
	if len(r.changes) == maxNetworkChanges {
		r.changes = slices.Delete(r.changes, 0, maxNetworkChanges/2)
	}
	r.changes = append(r.changes, change)
	r.synced = &nodeNetworks{states: states, names: names, seq: r.seq}
	return r.synced
}

// syncNetworks returns each network's allocator, dropping allocators of
// networks that are gone (or were recreated). nets are the networks as of
// network generation gen: once synced, a generation (or an older one, which
// another worker's sync overtook) returns the same networks at no cost, so
// that a pass over every node does not sync every network once per node. The first call reads every
// node's k8s.ovn.org/node-subnets straight from the apiserver, once, and
// rebuilds the allocators from it; a network that appears later starts from
// what nodes record under its name (orphans), which costs nothing per other
// network. Without leader election (another writer may have allocated for it
// already) a new network is still rebuilt from a fresh read.
func (r *nodeReconciler) syncNetworks(ctx context.Context, nets []layer3Network, gen int64) (*nodeNetworks, error) {
	r.netMu.Lock()
	defer r.netMu.Unlock()
	if r.synced != nil && gen <= r.syncedGen {
		return r.synced, nil
	}
	live := map[string]bool{}
	var changed []string
	// Networks new to this process, whose allocators start from what the
	// nodes record.
	fresh := map[string]*hostSubnetState{}
	// The nodes' annotations are read straight from the apiserver when
	// this process rebuilds its state, and, with another writer about, for
	// every new network; before anything changes, so that a failed read
	// leaves the state as it was.
	var nodes []metav1.PartialObjectMetadata
	read := !r.rebuilt || (!r.cfg.SingleWriter && slices.ContainsFunc(nets, func(n layer3Network) bool {
		st := r.networks[n.name]
		return st == nil || st.net.uid != n.uid
	}))
	if read {
		var err error
		if nodes, err = listNodesOldestFirst(ctx, r.reader); err != nil {
			return nil, fmt.Errorf("rebuilding host subnets: %w", err)
		}
	}
	for _, n := range nets {
		live[n.name] = true
		st := r.networks[n.name]
		if st != nil && st.net.uid != n.uid {
			// Recreated: the old network's host subnets stay on the nodes
			// until their next write.
			r.orphan(n.name, st.alloc)
			st = nil
		}
		if st == nil {
			alloc, err := netids.NewHostSubnetAllocator(n.subnets)
			if err != nil {
				return nil, fmt.Errorf("network %s: %w", n.name, err)
			}
			st = &hostSubnetState{alloc: alloc, net: n, lacking: map[string]string{}}
			if n.hostSubnets != nil {
				// What an earlier process applied stands until the summary
				// changes: a restart rewrites no network's status.
				st.want.summary, st.applied = n.hostSubnets.Message, n.hostSubnets.Message
			}
			fresh[n.name] = st
			changed = append(changed, n.name)
		} else if !slices.Equal(st.net.subnets, n.subnets) {
			if err := st.alloc.SetClusterSubnets(n.subnets); err != nil {
				return nil, fmt.Errorf("network %s: %w", n.name, err)
			}
			changed = append(changed, n.name)
		}
		st.net = n
	}
	// Decoded one node at a time, oldest first (of two nodes claiming one
	// host subnet the older keeps it): with thousands of Layer3 networks
	// every node's annotation is ~100 kB, and all of them decoded at once
	// were the largest part of a restarted manager's memory.
	if read {
		for i := range nodes {
			recorded, _ := ovnk.DecodeNodeSubnets(&corev1.Node{ObjectMeta: nodes[i].ObjectMeta})
			for name, ps := range recorded {
				if st := fresh[name]; st != nil {
					for _, pfx := range ps {
						_ = st.alloc.Reserve(nodes[i].Name, pfx)
					}
				} else if !r.rebuilt && !live[name] {
					if r.orphans[name] == nil {
						r.orphans[name] = map[string][]netip.Prefix{}
					}
					r.orphans[name][nodes[i].Name] = ps
				}
			}
		}
		r.rebuilt = true
	}
	for name, st := range fresh {
		for node, ps := range r.orphans[name] {
			for _, pfx := range ps {
				_ = st.alloc.Reserve(node, pfx)
			}
		}
		delete(r.orphans, name)
		r.networks[name] = st
	}
	for name, st := range r.networks {
		if !live[name] {
			r.orphan(name, st.alloc)
			delete(r.networks, name)
			r.removed[name] = true
			changed = append(changed, name)
		}
	}
	for name := range live {
		delete(r.removed, name)
	}
	r.syncedGen = gen
	if r.synced != nil && len(changed) == 0 {
		return r.synced, nil
	}
	states := make(map[string]*hostSubnetState, len(r.networks))
	names := make([]string, 0, len(r.networks))
	for k, v := range r.networks {
		states[k] = v
		names = append(names, k)
	}
	sort.Strings(names)
	return r.newSnapshot(states, names, networkChange{names: changed}), nil
}

// nodePage is how many nodes one LIST of listNodesOldestFirst returns (a
// variable for the tests, which page through a few nodes).
var nodePage int64 = 100

// listNodesOldestFirst reads every node's metadata straight from the
// apiserver, a page at a time (a node's annotations can be ~100 kB each),
// oldest first.
func listNodesOldestFirst(ctx context.Context, reader client.Reader) ([]metav1.PartialObjectMetadata, error) {
	var nodes []metav1.PartialObjectMetadata
	cont := ""
	for {
		// A new list per page: decoding into the last one's items would
		// merge into their maps.
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
		if err := reader.List(ctx, list, client.Limit(nodePage), client.Continue(cont)); err != nil {
			return nil, err
		}
		nodes = append(nodes, list.Items...)
		if cont = list.Continue; cont == "" {
			break
		}
	}
	slices.SortFunc(nodes, func(a, b metav1.PartialObjectMetadata) int { return olderNode(&a, &b) })
	return nodes, nil
}

// orphan keeps what alloc holds as the host subnets nodes record under the
// network name name (r.netMu held).
func (r *nodeReconciler) orphan(name string, alloc *netids.HostSubnetAllocator) {
	held := alloc.Holdings()
	if len(held) == 0 {
		return
	}
	if r.orphans[name] == nil {
		r.orphans[name] = map[string][]netip.Prefix{}
	}
	for node, ps := range held {
		r.orphans[name][node] = ps
	}
}

// nodeScope carries one node reconcile from step to step.
type nodeScope struct {
	req   ctrl.Request
	start time.Time
	// stale: the networks listed miss a change (see cachedLayer3Networks);
	// the node is reconciled again once the list may be refreshed.
	stale bool
	// timed: the reconcile checks host subnets; its duration feeds
	// passDelay.
	timed  bool
	synced *nodeNetworks
	// states are synced.states; nil when the node's k8s.ovn.org/node-subnets
	// is malformed.
	states map[string]*hostSubnetState
	node   corev1.Node
	// want is the node's annotations as this reconcile writes them.
	want   map[string]string
	nodeID int
	// recorded is the node's k8s.ovn.org/node-subnets as decoded; next is
	// the annotation's new entries (nil: unchanged).
	recorded nodeSubnets
	next     map[string][]netip.Prefix
}

// nodeStep is one step of the node Reconcile. done ends the reconcile with
// res and err; a step that returns an error is always done.
type nodeStep func(ctx context.Context, s *nodeScope) (res ctrl.Result, done bool, err error)

// Reconcile gives the node its IDs and host subnets, one step after
// another; the first step that is done ends the reconcile.
func (r *nodeReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, err error) {
	steps := []nodeStep{
		r.initNodeIDs,
		r.syncNodeNetworks,
		r.getNodeOrRelease,
		r.ensureNodeID,
		r.ensureTunnelIDs,
		r.ensureHostSubnets,
		r.patchNodeAnnotations,
		r.verifyNode,
	}
	s := &nodeScope{req: req, start: time.Now()}
	defer func() {
		if !s.stale {
			return
		}
		again := r.listAge()
		if err == nil && (res.RequeueAfter == 0 || res.RequeueAfter > again) {
			res.RequeueAfter = again
		}
	}()
	defer func() {
		if s.timed {
			r.timeReconcile(s.start)
		}
	}()
	for _, step := range steps {
		if res, done, err := step(ctx, s); done || err != nil {
			return res, err
		}
	}
	return ctrl.Result{}, nil
}

// initNodeIDs reserves every node's IDs once (ensureInit).
func (r *nodeReconciler) initNodeIDs(ctx context.Context, _ *nodeScope) (ctrl.Result, bool, error) {
	return ctrl.Result{}, false, r.ensureInit(ctx)
}

// syncNodeNetworks takes the Layer3 networks and their allocators.
func (r *nodeReconciler) syncNodeNetworks(ctx context.Context, s *nodeScope) (ctrl.Result, bool, error) {
	nets, gen, stale, err := r.cachedLayer3Networks(ctx)
	if err != nil {
		return ctrl.Result{}, true, err
	}
	s.stale = stale
	synced, err := r.syncNetworks(ctx, nets, gen)
	if err != nil {
		return ctrl.Result{}, true, err
	}
	s.synced, s.states = synced, synced.states
	return ctrl.Result{}, false, nil
}

// getNodeOrRelease reads the node; a node that is gone has its IDs and host
// subnets released.
func (r *nodeReconciler) getNodeOrRelease(ctx context.Context, s *nodeScope) (ctrl.Result, bool, error) {
	if err := r.client.Get(ctx, s.req.NamespacedName, &s.node); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, true, err
		}
		r.releaseNode(ctx, s.req.Name, s.states)
		return ctrl.Result{}, true, nil
	}
	s.want = make(map[string]string, len(s.node.Annotations))
	maps.Copy(s.want, s.node.Annotations)
	return ctrl.Result{}, false, nil
}

// releaseNode frees a deleted node's IDs and host subnets and reconciles
// the nodes that lack a host subnet again.
func (r *nodeReconciler) releaseNode(ctx context.Context, name string, states map[string]*hostSubnetState) {
	r.ids.ReleaseOwner(name)
	r.unverified.set(name, false)
	r.forgetSubnets(name)
	r.netMu.Lock()
	for _, held := range r.orphans {
		delete(held, name)
	}
	r.netMu.Unlock()
	var waiting []string
	for _, st := range states {
		st.alloc.Release(name)
		r.setLacking(ctx, st, name, "")
		r.netMu.Lock()
		for n := range st.lacking {
			waiting = append(waiting, n)
		}
		r.netMu.Unlock()
	}
	for _, n := range waiting {
		ev := event.GenericEvent{Object: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}}
		select {
		case r.retry <- ev:
		default:
			go func() { r.retry <- ev }()
		}
	}
}

// ensureNodeID keeps the node's ID. One that is malformed, out of range or
// held by an older node cannot be used by anyone (OVN would refuse it, or
// two nodes would share transit ports): this node gets a new one, with an
// Event.
func (r *nodeReconciler) ensureNodeID(_ context.Context, s *nodeScope) (ctrl.Result, bool, error) {
	node := &s.node
	nodeID, ok, derr := ovnk.DecodeNodeID(node)
	if derr != nil {
		r.recorder.Eventf(node, nil, corev1.EventTypeWarning, eventInvalidNodeID, "Reconcile", "%v; allocating a new node ID", derr)
	} else if ok {
		if err := r.ids.Reserve(node.Name, nodeID); err != nil {
			r.recorder.Eventf(node, nil, corev1.EventTypeWarning, eventInvalidNodeID, "Reconcile",
				"node %s annotation %s: %v; allocating a new node ID", node.Name, ovnk.AnnotationNodeID, err)
			ok = false
		}
	}
	if !ok {
		var err error
		if nodeID, err = r.allocNodeID(node.Name); err != nil {
			r.recorder.Eventf(node, nil, corev1.EventTypeWarning, "NodeIDAllocationFailed", "Reconcile", "%v", err)
			return ctrl.Result{RequeueAfter: 30 * time.Second}, true, nil
		}
		s.want[ovnk.AnnotationNodeID] = strconv.Itoa(nodeID)
	}
	s.nodeID = nodeID
	return ctrl.Result{}, false, nil
}

// ensureTunnelIDs keeps the node's multi-VTEP tunnel IDs.
func (r *nodeReconciler) ensureTunnelIDs(_ context.Context, s *nodeScope) (ctrl.Result, bool, error) {
	if err := r.tunnelIDs(&s.node, s.nodeID, s.want); err != nil {
		r.recorder.Eventf(&s.node, nil, corev1.EventTypeWarning, "TunnelIDAllocationFailed", "Reconcile", "%v", err)
		return ctrl.Result{}, true, err
	}
	return ctrl.Result{}, false, nil
}

// ensureHostSubnets keeps the node's Layer3 host subnets. A malformed
// annotation is reported, never overwritten. A pass over every node for a
// network change costs each node a decode and a check per network changed
// since its value was complete; a value complete for the current networks,
// neither. The annotation is encoded only when something changes.
func (r *nodeReconciler) ensureHostSubnets(ctx context.Context, s *nodeScope) (ctrl.Result, bool, error) {
	recorded, derr := r.decodeSubnets(&s.node, s.synced.seq)
	s.recorded = recorded
	if derr != nil {
		r.recorder.Eventf(&s.node, nil, corev1.EventTypeWarning, eventHostSubnetFailure, "Reconcile", "%v", derr)
		s.states = nil
		return ctrl.Result{}, false, nil
	}
	if recorded.complete == s.synced.seq {
		return ctrl.Result{}, false, nil
	}
	// Only the networks changed since the node was last complete, if they
	// are known.
	names := s.synced.names
	if recorded.complete != 0 {
		if changed, ok := r.changedSince(recorded.complete, s.synced.seq); ok {
			names = changed
		}
	}
	s.timed = true
	lacking := r.allocateHostSubnets(ctx, s, names)
	r.dropRemovedNetworks(s)
	if s.next == nil && !s.recorded.canonical {
		s.next = s.recorded.subnets // rewritten as upstream writes it
	}
	if !lacking {
		// Until the networks or the value change, this node has nothing
		// to check.
		s.recorded.complete = s.synced.seq
	}
	switch {
	case s.next == nil:
		r.rememberSubnets(s.node.Name, s.recorded)
	case len(s.next) == 0:
		delete(s.want, ovnk.AnnotationNodeSubnets)
	default:
		s.want[ovnk.AnnotationNodeSubnets] = ovnk.EncodeNodeSubnets(s.next)
	}
	return ctrl.Result{}, false, nil
}

// setNodeSubnets makes ps the node's host subnets of network name in
// s.next (nil ps: none).
func (s *nodeScope) setNodeSubnets(name string, ps []netip.Prefix) {
	if s.next == nil {
		s.next = make(map[string][]netip.Prefix, len(s.recorded.subnets)+1)
		maps.Copy(s.next, s.recorded.subnets)
	}
	if ps == nil {
		delete(s.next, name)
	} else {
		s.next[name] = ps
	}
}

// allocateHostSubnets gives the node a host subnet of each network of names
// it lacks one of; lacking says that some network had none to give.
func (r *nodeReconciler) allocateHostSubnets(ctx context.Context, s *nodeScope, names []string) (lacking bool) {
	node := s.node.Name
	for _, name := range names {
		st := s.states[name]
		if st == nil {
			continue // removed: dropRemovedNetworks
		}
		had := s.recorded.subnets[name]
		if st.alloc.Complete(node, had) {
			r.setLacking(ctx, st, node, "")
			continue
		}
		adoptHostSubnets(st.alloc, node, had)
		got, err := st.alloc.Allocate(node)
		if err != nil {
			msg := fmt.Sprintf("node %s: %v", node, err)
			r.netMu.Lock()
			ref := st.net.ref() // syncNetworks rewrites net under netMu
			r.netMu.Unlock()
			r.recorder.Eventf(ref, nil, corev1.EventTypeWarning, eventHostSubnetFailure, "Reconcile", "%s", msg)
			r.setLacking(ctx, st, node, msg)
			lacking = true
			continue
		}
		if !slices.Equal(got, had) {
			s.setNodeSubnets(name, got)
		}
		r.setLacking(ctx, st, node, "")
	}
	return lacking
}

// dropRemovedNetworks drops the entries of networks deleted while this
// process ran.
func (r *nodeReconciler) dropRemovedNetworks(s *nodeScope) {
	r.netMu.Lock()
	defer r.netMu.Unlock()
	if len(r.removed) < len(s.recorded.subnets) {
		for name := range r.removed {
			if _, ok := s.recorded.subnets[name]; ok {
				s.setNodeSubnets(name, nil)
			}
		}
		return
	}
	for name := range s.recorded.subnets {
		if r.removed[name] {
			s.setNodeSubnets(name, nil)
		}
	}
}

// patchNodeAnnotations writes the node's annotations when they changed.
func (r *nodeReconciler) patchNodeAnnotations(ctx context.Context, s *nodeScope) (ctrl.Result, bool, error) {
	node := &s.node
	if equalMaps(s.want, node.Annotations) {
		return ctrl.Result{}, false, nil
	}
	if err := r.client.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name}},
		client.RawPatch(types.MergePatchType, annotationsPatch(node, s.want))); err != nil {
		if apierrors.IsConflict(err) {
			// What this process allocated stays held for the node, so the
			// retry writes the same values.
			return ctrl.Result{RequeueAfter: conflictRetry}, true, nil
		}
		return ctrl.Result{}, true, client.IgnoreNotFound(err)
	}
	if v, ok := s.want[ovnk.AnnotationNodeSubnets]; ok && s.next != nil {
		r.rememberSubnets(node.Name, nodeSubnets{value: v, subnets: s.next, canonical: true, complete: s.recorded.complete})
	}
	if uniqueAnnotationsChanged(node.Annotations, s.want) && !r.cfg.SingleWriter {
		r.unverified.set(node.Name, true)
	}
	return ctrl.Result{}, false, nil
}

// verifyNode checks the node's newly written values against every other
// node (verify).
func (r *nodeReconciler) verifyNode(ctx context.Context, s *nodeScope) (ctrl.Result, bool, error) {
	if !r.unverified.has(s.node.Name) {
		return ctrl.Result{}, false, nil
	}
	res, err := r.verify(ctx, s.node.Name, s.states)
	return res, true, err
}

// allocNodeID returns the ID this process already holds for the node (a
// retry after a conflict) or a new one.
func (r *nodeReconciler) allocNodeID(node string) (int, error) {
	if held := r.ids.Held(node); len(held) > 0 {
		return held[0], nil
	}
	return r.ids.Allocate(node)
}

// tunnelIDs keeps k8s.ovn.org/node-transit-switch-port-tunnel-ids: one ID per
// encap IP in k8s.ovn.org/node-encap-ips order, the node ID first.
func (r *nodeReconciler) tunnelIDs(node *corev1.Node, nodeID int, want map[string]string) error {
	encap, err := ovnk.DecodeNodeEncapIPs(node)
	if err != nil {
		return err
	}
	current, err := ovnk.DecodeNodeTunnelIDs(node)
	if err != nil {
		current = nil // rewritten below
	}
	var extras []int
	if len(current) > 0 && current[0] == nodeID {
		// The annotation is what the apiserver holds: anything else this
		// process held for the node (a write that lost a race) is free.
		extras = current[1:]
		for _, id := range r.ids.Held(node.Name) {
			if id != nodeID && !slices.Contains(extras, id) {
				r.ids.Release(node.Name, id)
			}
		}
	} else {
		for _, id := range r.ids.Held(node.Name) {
			if id != nodeID {
				extras = append(extras, id)
			}
		}
	}
	need := len(encap) - 1
	if need < 0 {
		need = 0
	}
	kept := extras[:0:0]
	for _, id := range extras {
		// Another node's (a second writer's) ID is given up, like a
		// duplicate node ID: this node gets a new one.
		if err := r.ids.Reserve(node.Name, id); err != nil {
			r.recorder.Eventf(node, nil, corev1.EventTypeWarning, eventInvalidNodeID, "Reconcile",
				"node %s annotation %s: %v; allocating a new tunnel ID", node.Name, ovnk.AnnotationNodeTransitSwitchPortTunnelIDs, err)
			continue
		}
		kept = append(kept, id)
	}
	extras = kept
	for len(extras) > need {
		r.ids.Release(node.Name, extras[len(extras)-1])
		extras = extras[:len(extras)-1]
	}
	for len(extras) < need {
		id, err := r.ids.Allocate(node.Name)
		if err != nil {
			return fmt.Errorf("node %s: tunnel IDs: %w", node.Name, err)
		}
		extras = append(extras, id)
	}
	if len(encap) < 2 {
		delete(want, ovnk.AnnotationNodeTransitSwitchPortTunnelIDs)
		return nil
	}
	want[ovnk.AnnotationNodeTransitSwitchPortTunnelIDs] = ovnk.EncodeNodeTunnelIDs(append([]int{nodeID}, extras...))
	return nil
}

// annotationsPatch is the JSON merge patch from node's annotations to want,
// under the node's resourceVersion (as client.MergeFromWithOptimisticLock
// makes it, without encoding the whole node twice to diff it).
func annotationsPatch(node *corev1.Node, want map[string]string) []byte {
	diff := map[string]any{}
	for k, v := range want {
		if old, ok := node.Annotations[k]; !ok || old != v {
			diff[k] = v
		}
	}
	for k := range node.Annotations {
		if _, ok := want[k]; !ok {
			diff[k] = nil
		}
	}
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": diff, "resourceVersion": node.ResourceVersion}})
	return b
}

// nodeSubnets is a node's k8s.ovn.org/node-subnets value as decoded.
type nodeSubnets struct {
	value   string
	subnets map[string][]netip.Prefix // nil when kept or not needed
	// canonical: value is what EncodeNodeSubnets writes for subnets (as
	// JSON); otherwise it is rewritten so.
	canonical bool
	// complete: the node holds a host subnet of every network of the
	// networks numbered complete and value records them (0: not known).
	complete int64
}

// decodeSubnets decodes node's k8s.ovn.org/node-subnets. What is known of
// the last value decoded or written for each node is kept, not its entries
// (they would double the annotations' memory): a value complete for the
// networks numbered seq is not decoded at all.
func (r *nodeReconciler) decodeSubnets(node *corev1.Node, seq int64) (nodeSubnets, error) {
	v, ok := node.Annotations[ovnk.AnnotationNodeSubnets]
	if !ok {
		return nodeSubnets{canonical: true}, nil
	}
	r.seenMu.Lock()
	seen, hit := r.seen[node.Name]
	hit = hit && seen.value == v
	if hit {
		seen.value = v // the informer's copy: this process keeps no other
		r.seen[node.Name] = seen
	}
	r.seenMu.Unlock()
	if hit && seen.complete == seq {
		return seen, nil
	}
	subnets, err := ovnk.DecodeNodeSubnets(node)
	if err != nil {
		return nodeSubnets{}, err
	}
	if hit {
		seen.subnets = subnets
		return seen, nil
	}
	b := ovnk.EncodeNodeSubnets(subnets)
	seen = nodeSubnets{value: v, subnets: subnets, canonical: v == b || sameJSON(v, []byte(b))}
	r.rememberSubnets(node.Name, seen)
	return seen, nil
}

// rememberSubnets records node's k8s.ovn.org/node-subnets as decoded or
// written.
func (r *nodeReconciler) rememberSubnets(node string, s nodeSubnets) {
	s.subnets = nil
	r.seenMu.Lock()
	r.seen[node] = s
	r.seenMu.Unlock()
}

func (r *nodeReconciler) forgetSubnets(node string) {
	r.seenMu.Lock()
	delete(r.seen, node)
	r.seenMu.Unlock()
}

func sameJSON(a string, b []byte) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// everyNodeAllocated is the HostSubnetsAllocated message when no node lacks a
// host subnet.
const everyNodeAllocated = "every node has a host subnet"

// setLacking records whether node lacks a host subnet of the network and
// applies the HostSubnetsAllocated condition when the summary changes.
func (r *nodeReconciler) setLacking(ctx context.Context, st *hostSubnetState, node, msg string) {
	r.netMu.Lock()
	if msg == "" && len(st.lacking) == 0 && st.want.summary == everyNodeAllocated {
		r.netMu.Unlock() // as applied already: every reconcile of every node comes here
		return
	}
	if msg == "" {
		delete(st.lacking, node)
	} else {
		st.lacking[node] = msg
	}
	status, reason, summary := metav1.ConditionTrue, ReasonHostSubnetsAllocated, everyNodeAllocated
	if len(st.lacking) > 0 {
		nodes := make([]string, 0, len(st.lacking))
		for n := range st.lacking {
			nodes = append(nodes, n)
		}
		sort.Strings(nodes)
		first := st.lacking[nodes[0]]
		more := ""
		if len(nodes) > maxNodesInMessage {
			more = fmt.Sprintf(" and %d more", len(nodes)-maxNodesInMessage)
			nodes = nodes[:maxNodesInMessage]
		}
		status, reason = metav1.ConditionFalse, ReasonHostSubnetsExhausted
		summary = fmt.Sprintf("nodes without a host subnet: [%s]%s; %s", strings.Join(nodes, ", "), more, first)
	}
	changed := summary != st.want.summary
	st.want = hostSubnetsCondition{status: status, reason: reason, summary: summary}
	r.netMu.Unlock()
	if !changed {
		return
	}
	st.applyMu.Lock()
	defer st.applyMu.Unlock()
	r.netMu.Lock()
	want, net := st.want, st.net
	r.netMu.Unlock()
	if want.summary == st.applied {
		return
	}
	transition := time.Now().UTC()
	if old := net.hostSubnets; old != nil && old.Status == want.status {
		transition = old.LastTransitionTime.UTC()
	}
	cond := map[string]any{
		"type": ConditionHostSubnetsAllocated, "status": string(want.status), "reason": want.reason, "message": want.summary,
		"lastTransitionTime": transition.Format(time.RFC3339),
	}
	u := net.ref()
	u.SetUID("")
	u.Object["status"] = map[string]any{"conditions": []any{cond}}
	if err := r.client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(nodeFieldOwner), client.ForceOwnership); err != nil && !apierrors.IsNotFound(err) {
		r.netMu.Lock()
		st.want.summary = "" // retry on the next reconcile
		if r.synced != nil {
			// ... of any node, complete or not.
			r.newSnapshot(r.synced.states, r.synced.names, networkChange{all: true})
		}
		r.netMu.Unlock()
		return
	}
	st.applied = want.summary
}

// ref is an object reference the event recorder accepts for the network.
func (n layer3Network) ref() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(udnv1.GroupVersion.String())
	u.SetKind(n.kind)
	u.SetName(n.obj.Name)
	u.SetNamespace(n.obj.Namespace)
	u.SetUID(n.uid)
	return u
}

// adoptHostSubnets makes the allocator hold what the node's annotation
// records when that differs from what it holds (another writer's value, or
// this process's write that lost a race): the apiserver's value wins unless
// this process knows another node holds it, and then the allocator's stands
// and is written over it.
func adoptHostSubnets(alloc *netids.HostSubnetAllocator, node string, recorded []netip.Prefix) {
	held := alloc.Owned(node)
	if len(recorded) == 0 || slices.Equal(held, recorded) {
		return
	}
	alloc.Release(node)
	for _, p := range recorded {
		if alloc.Reserve(node, p) != nil {
			alloc.Release(node)
			for _, q := range held {
				_ = alloc.Reserve(node, q)
			}
			return
		}
	}
}

// nadSubnets are the subnets a network's NAD publishes (any of its NADs that
// passes the ownership rule, ovnk/nadtrust: they share the config); known is
// false while it has none, and the spec's subnets are used. A NAD that only
// claims the network's UID is reported and never read.
func (r *nodeReconciler) nadSubnets(ctx context.Context, uid types.UID) (map[netip.Prefix]bool, bool) {
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := r.client.List(ctx, &nads, client.MatchingFields{indexNADController: string(uid)}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, false
	}
	// Every node's reconcile asks for every Layer3 network's subnets: verify
	// and parse each network's NAD config once per network (its first
	// trusted NAD's version).
	r.nadMu.Lock()
	defer r.nadMu.Unlock()
	var nad *nadv1.NetworkAttachmentDefinition
	for i := range nads.Items {
		n := &nads.Items[i]
		if p, ok := r.nadParsed[uid]; ok && p.nad == n.UID && p.version == n.ResourceVersion {
			return p.subnets, p.ok
		}
		if _, trusted, err := r.nadGuard.Trusted(ctx, n); err != nil {
			return nil, false
		} else if trusted {
			nad = n
			break
		}
	}
	if nad == nil {
		return nil, false
	}
	out, ok := parseNADSubnets(nad)
	if r.nadParsed == nil || len(r.nadParsed) > maxParsedNADs {
		r.nadParsed = map[types.UID]parsedNAD{} // drop deleted networks' entries now and then
	}
	r.nadParsed[uid] = parsedNAD{nad: nad.UID, version: nad.ResourceVersion, subnets: out, ok: ok}
	return out, ok
}

// HostSubnetsConsumer is the consumer label of the host subnet reconciler's
// reports (udnkit_untrusted_nads_total).
const HostSubnetsConsumer = "host-subnets"

// maxParsedNADs bounds nadParsed: four times the network IDs there are.
const maxParsedNADs = 4 * ovnk.MaxNetworkID

// parsedNAD is one network's NAD subnets, for the NAD's version.
type parsedNAD struct {
	nad     types.UID
	version string
	subnets map[netip.Prefix]bool
	ok      bool
}

func parseNADSubnets(nad *nadv1.NetworkAttachmentDefinition) (map[netip.Prefix]bool, bool) {
	conf, err := ovnk.Parse(nad.Spec.Config)
	if err != nil {
		return nil, false
	}
	subnets, err := conf.SubnetPrefixes()
	if err != nil {
		return nil, false
	}
	out := make(map[netip.Prefix]bool, len(subnets))
	for _, p := range subnets {
		out[p.Masked()] = true
	}
	return out, true
}
