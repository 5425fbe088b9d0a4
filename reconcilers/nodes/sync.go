package nodes

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers/idalloc"
	"github.com/udnkit/udnkit/reconcilers/nodes/layer3"
)

// networkStates is every Layer3 network's host subnet state.
type networkStates struct {
	// mu guards every field below, and each hostSubnetState's net, lacking
	// and want. syncNetworks holds it while it lists every node from the
	// apiserver (on the first sync, and for a new network when another
	// writer may be about): reconciles wait for that read.
	mu     sync.Mutex
	byName map[string]*hostSubnetState
	// removed are networks deleted while this process ran; their entries
	// are dropped from k8s.ovn.org/node-subnets.
	removed map[string]bool
	// synced is what syncNetworks returned for network generation
	// syncedGen; nil until the first sync, which reads every node.
	synced    *nodeNetworks
	syncedGen int64
	changes   []networkChange // consecutive seqs, oldest first
	// orphans are host subnets nodes record (or recorded until lately) for
	// network names without a network: networks deleted before this process
	// started or while it ran. A network created later under such a name
	// starts from them instead of a new read of every node.
	orphans map[string]map[string][]netip.Prefix
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
func (ns *networkStates) changedSince(from, to int64) (names []string, ok bool) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if from >= to {
		return nil, true
	}
	if len(ns.changes) == 0 || ns.changes[0].seq > from+1 {
		return nil, false
	}
	seen := map[string]bool{}
	for _, c := range ns.changes[from+1-ns.changes[0].seq:] {
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

// newSnapshot makes states the networks of every node reconcile from now
// on, recording what changed (mu held).
func (ns *networkStates) newSnapshot(states map[string]*hostSubnetState, names []string, change networkChange) *nodeNetworks {
	change.seq = 1
	if ns.synced != nil {
		change.seq = ns.synced.seq + 1
	}
	if len(ns.changes) == maxNetworkChanges {
		ns.changes = slices.Delete(ns.changes, 0, maxNetworkChanges/2)
	}
	ns.changes = append(ns.changes, change)
	ns.synced = &nodeNetworks{states: states, names: names, seq: change.seq}
	return ns.synced
}

// current is a copy of byName and its names, sorted (mu held).
func (ns *networkStates) current() (map[string]*hostSubnetState, []string) {
	states := make(map[string]*hostSubnetState, len(ns.byName))
	names := make([]string, 0, len(ns.byName))
	for k, v := range ns.byName {
		states[k] = v
		names = append(names, k)
	}
	sort.Strings(names)
	return states, names
}

// orphan keeps what alloc holds as the host subnets nodes record under the
// network name name (mu held).
func (ns *networkStates) orphan(name string, alloc *idalloc.HostSubnetAllocator) {
	held := alloc.Holdings()
	if len(held) == 0 {
		return
	}
	if ns.orphans[name] == nil {
		ns.orphans[name] = map[string][]netip.Prefix{}
	}
	for node, ps := range held {
		ns.orphans[name][node] = ps
	}
}

// syncScope carries one syncNetworks from step to step.
type syncScope struct {
	nets []layer3.Network
	gen  int64
	// first: this process has not synced yet; the nodes are read and the
	// allocators rebuilt from them.
	first bool
	// nodes are every node, oldest first, when this sync reads them.
	nodes   []metav1.PartialObjectMetadata
	live    map[string]bool
	changed []string
	// fresh are networks new to this process, whose allocators start from
	// what the nodes record.
	fresh map[string]*hostSubnetState
}

// syncNetworks returns each network's allocator, dropping allocators of
// networks that are gone (or were recreated). nets are the networks as of
// network generation gen: once synced, a generation (or an older one, which
// another worker's sync overtook) returns the same networks at no cost, so
// that a pass over every node does not sync every network once per node.
// The first call reads every node's IDs and k8s.ovn.org/node-subnets
// straight from the apiserver, once, and rebuilds the allocators from them;
// a network that appears later starts from what nodes record under its name
// (orphans), which costs nothing per other network. Without leader election
// (another writer may have allocated for it already) a new network is still
// rebuilt from a fresh read.
func (r *reconciler) syncNetworks(ctx context.Context, nets []layer3.Network, gen int64) (*nodeNetworks, error) {
	ns := &r.nets
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if ns.synced != nil && gen <= ns.syncedGen {
		return ns.synced, nil
	}
	s := &syncScope{nets: nets, gen: gen, first: ns.synced == nil, live: map[string]bool{}, fresh: map[string]*hostSubnetState{}}
	steps := []func(context.Context, *syncScope) error{
		r.readNodes,
		r.updateNetworks,
		r.reserveRecorded,
		r.adoptOrphans,
		r.dropGoneNetworks,
	}
	for _, step := range steps {
		if err := step(ctx, s); err != nil {
			return nil, err
		}
	}
	ns.syncedGen = gen
	if ns.synced != nil && len(s.changed) == 0 {
		return ns.synced, nil
	}
	states, names := ns.current()
	return ns.newSnapshot(states, names, networkChange{names: s.changed}), nil
}

// readNodes reads every node straight from the apiserver when this process
// rebuilds its state and, with another writer about, for every new network;
// before anything changes, so that a failed read leaves the state as it was.
func (r *reconciler) readNodes(ctx context.Context, s *syncScope) error {
	read := s.first || (!r.opts.SingleWriter && slices.ContainsFunc(s.nets, func(n layer3.Network) bool {
		st := r.nets.byName[n.Name]
		return st == nil || st.net.UID != n.UID
	}))
	if !read {
		return nil
	}
	nodes, err := listNodesOldestFirst(ctx, r.reader, r.opts.ListPage)
	if err != nil {
		return fmt.Errorf("rebuilding node IDs and host subnets: %w", err)
	}
	s.nodes = nodes
	return nil
}

// updateNetworks gives each network new to this process (or recreated) a
// new allocator and each network whose cluster subnets changed its new
// subnets.
func (r *reconciler) updateNetworks(_ context.Context, s *syncScope) error {
	ns := &r.nets
	for _, n := range s.nets {
		s.live[n.Name] = true
		st := ns.byName[n.Name]
		if st != nil && st.net.UID != n.UID {
			// Recreated: the old network's host subnets stay on the nodes
			// until their next write.
			ns.orphan(n.Name, st.alloc)
			st = nil
		}
		if st == nil {
			var err error
			if st, err = newHostSubnetState(n); err != nil {
				return err
			}
			s.fresh[n.Name] = st
			s.changed = append(s.changed, n.Name)
		} else if !slices.Equal(st.net.Subnets, n.Subnets) {
			if err := st.alloc.SetClusterSubnets(n.Subnets); err != nil {
				return fmt.Errorf("network %s: %w", n.Name, err)
			}
			s.changed = append(s.changed, n.Name)
		}
		st.net = n
	}
	return nil
}

// reserveRecorded reserves what the nodes read record: on the first sync
// their node and tunnel IDs, and the host subnets of the new networks. On
// the first sync, the host subnets of names without a network become
// orphans. The nodes are decoded one at a time, oldest first (of two nodes
// claiming one value the older keeps it): with thousands of Layer3 networks
// every node's annotation is ~100 kB, and all of them decoded at once would
// be the largest part of a restarted manager's memory.
func (r *reconciler) reserveRecorded(_ context.Context, s *syncScope) error {
	ns := &r.nets
	for i := range s.nodes {
		node := &corev1.Node{ObjectMeta: s.nodes[i].ObjectMeta}
		if s.first {
			r.reserveNodeIDs(node)
		}
		recorded, _ := ovnk.DecodeNodeSubnets(node)
		for name, ps := range recorded {
			if st := s.fresh[name]; st != nil {
				for _, pfx := range ps {
					_ = st.alloc.Reserve(node.Name, pfx)
				}
			} else if s.first && !s.live[name] {
				if ns.orphans[name] == nil {
					ns.orphans[name] = map[string][]netip.Prefix{}
				}
				ns.orphans[name][node.Name] = ps
			}
		}
	}
	return nil
}

// reserveNodeIDs reserves the node and tunnel IDs node records. What an
// older node holds already is not reserved: the node gets a new one when it
// is reconciled (with NodeIDsRead, a new tunnel ID, or it waits for the
// cluster manager to give it another node ID).
func (r *reconciler) reserveNodeIDs(node *corev1.Node) {
	if id, ok, err := ovnk.DecodeNodeID(node); err == nil && ok {
		if r.ids.Reserve(node.Name, id) == nil && r.opts.NodeIDs == NodeIDsRead {
			r.followed.follow(node.Name, id)
		}
	}
	if ids, err := ovnk.DecodeNodeTunnelIDs(node); err == nil {
		for _, id := range ids {
			_ = r.ids.Reserve(node.Name, id)
		}
	}
}

// adoptOrphans starts each new network from the host subnets nodes record
// under its name, and makes it known.
func (r *reconciler) adoptOrphans(_ context.Context, s *syncScope) error {
	ns := &r.nets
	for name, st := range s.fresh {
		for node, ps := range ns.orphans[name] {
			for _, pfx := range ps {
				_ = st.alloc.Reserve(node, pfx)
			}
		}
		delete(ns.orphans, name)
		ns.byName[name] = st
	}
	return nil
}

// dropGoneNetworks forgets the networks that are gone; what they held
// becomes orphans, and their entries are dropped from the nodes.
func (r *reconciler) dropGoneNetworks(_ context.Context, s *syncScope) error {
	ns := &r.nets
	for name, st := range ns.byName {
		if !s.live[name] {
			ns.orphan(name, st.alloc)
			delete(ns.byName, name)
			ns.removed[name] = true
			s.changed = append(s.changed, name)
		}
	}
	for name := range s.live {
		delete(ns.removed, name)
	}
	return nil
}

// listNodesOldestFirst reads every node's metadata straight from the
// apiserver, page nodes at a time (a node's annotations can be ~100 kB
// each), oldest first.
func listNodesOldestFirst(ctx context.Context, reader client.Reader, page int64) ([]metav1.PartialObjectMetadata, error) {
	var nodes []metav1.PartialObjectMetadata
	cont := ""
	for {
		// A new list per page: decoding into the last one's items would
		// merge into their maps.
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
		if err := reader.List(ctx, list, client.Limit(page), client.Continue(cont)); err != nil {
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

// olderNode orders nodes oldest first, by name when created in the same
// second (creation timestamps have whole seconds): the older node keeps a
// value two nodes claim.
func olderNode(a, b metav1.Object) int {
	ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
	return cmp.Or(ta.Compare(tb.Time), cmp.Compare(a.GetName(), b.GetName()))
}
