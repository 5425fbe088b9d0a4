package nodes

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers/idalloc"
)

// NodeIDSource says who writes the nodes' k8s.ovn.org/node-id. A
// *NodeIDSource is a flag.Value.
type NodeIDSource string

const (
	// NodeIDsAllocate: the node controller allocates each node's ID; nothing
	// else writes them.
	NodeIDsAllocate NodeIDSource = "allocate"
	// NodeIDsRead: OVN-Kubernetes' cluster manager allocates each node's ID,
	// with k8s.ovn.org/node-transit-switch-port-ifaddr, and the node
	// controller only reads them (profile udn-controllers). Upstream's
	// allocator (clustermanager/node_allocation_controller.go) reads the
	// nodes' IDs only when it starts and overwrites both annotations of any
	// node that lacks either, so a second allocator beside it would hand out
	// IDs that do not last.
	NodeIDsRead NodeIDSource = "read"
)

// String is the source's name.
func (s *NodeIDSource) String() string {
	if s == nil {
		return ""
	}
	return string(*s)
}

// Set parses allocate or read.
func (s *NodeIDSource) Set(v string) error {
	if err := NodeIDSource(v).Validate(); err != nil {
		return err
	}
	*s = NodeIDSource(v)
	return nil
}

// Validate says whether s is allocate or read.
func (s NodeIDSource) Validate() error {
	switch s {
	case NodeIDsAllocate, NodeIDsRead:
		return nil
	}
	return fmt.Errorf("%q is not a node ID source (allocate or read)", string(s))
}

// EventWaitingForNodeID (Normal): with NodeIDsRead, a node has no node ID
// from OVN-Kubernetes' cluster manager yet; it gets no tunnel IDs or host
// subnets until it has one.
const EventWaitingForNodeID = "WaitingForNodeID"

// duplicateRetry is how soon a node whose node ID another node records too
// is checked again: the cluster manager gives one of them another only
// when it restarts.
const duplicateRetry = 10 * time.Second

// followedIDs is what the node controller keeps with NodeIDsRead: the node
// ID it last reserved for each node (so that a changed ID frees the old
// one), and why each node that waits for its ID waits (so that the wait is
// reported once, and its end is seen). mu guards both maps.
type followedIDs struct {
	mu      sync.Mutex
	id      map[string]int
	waiting map[string]string
}

func newFollowedIDs() followedIDs {
	return followedIDs{id: map[string]int{}, waiting: map[string]string{}}
}

// follow records id as node's node ID and returns the one it replaces
// (0: none).
func (f *followedIDs) follow(node string, id int) (old int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	old = f.id[node]
	f.id[node] = id
	if old == id {
		return 0
	}
	return old
}

// nodeID is the node ID followed for node (0: none).
func (f *followedIDs) nodeID(node string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.id[node]
}

// wait records why node waits; changed says that it did not wait so
// before.
func (f *followedIDs) wait(node, why string) (changed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	changed = f.waiting[node] != why
	f.waiting[node] = why
	return changed
}

// ready records that node waits no more; waited says that it did.
func (f *followedIDs) ready(node string) (waited bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, waited = f.waiting[node]
	delete(f.waiting, node)
	return waited
}

func (f *followedIDs) forget(node string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.id, node)
	delete(f.waiting, node)
}

// readNodeID is ensureNodeID with NodeIDsRead: the node's ID is what
// OVN-Kubernetes' cluster manager wrote, and is never written here. A node
// without a valid one (none, no k8s.ovn.org/node-transit-switch-port-ifaddr
// beside it, malformed, or another node's) is not ready: the reconcile ends
// before tunnel IDs and host subnets, the node is reported (a log line and
// an Event when it starts waiting or its reason changes, and in each Layer3
// network's HostSubnetsAllocated condition), and its next update reconciles
// it again. A changed ID is followed: the old one is freed.
func (r *reconciler) readNodeID(ctx context.Context, s *nodeScope) (ctrl.Result, error) {
	node := &s.node
	id, why, warn := validNodeID(node)
	var res ctrl.Result
	if why == "" {
		var again bool
		if why, res, again = r.reserveReadNodeID(node.Name, id); again {
			return s.Done(res, nil)
		}
		warn = true // another node's ID
	}
	if why != "" {
		r.waitForNodeID(ctx, s, why, warn)
		return s.Done(res, nil)
	}
	if r.followed.ready(node.Name) {
		log.FromContext(ctx).Info("node has its node ID from OVN-Kubernetes' cluster manager", "nodeID", id)
		// Each network's condition names the wait: check every network
		// for this node again.
		r.seen.forget(node.Name)
	}
	s.nodeID = id
	return ctrl.Result{}, nil
}

// validNodeID is node's ID if OVN-Kubernetes' cluster manager has written
// it; otherwise why says what the node waits for, and warn that what it
// records is wrong (the cluster manager rewrites only a missing value).
func validNodeID(node *corev1.Node) (id int, why string, warn bool) {
	id, ok, err := ovnk.DecodeNodeID(node)
	switch {
	case err != nil:
		return 0, fmt.Sprintf("%v; waiting for OVN-Kubernetes' cluster manager to write a valid one", err), true
	case !ok:
		return 0, fmt.Sprintf("no %s yet; waiting for OVN-Kubernetes' cluster manager to write it", ovnk.AnnotationNodeID), false
	}
	if _, ok := node.Annotations[ovnk.AnnotationNodeTransitSwitchPortIfAddr]; !ok {
		return 0, fmt.Sprintf("%s %d but no %s yet; waiting for OVN-Kubernetes' cluster manager, which writes the two together",
			ovnk.AnnotationNodeID, id, ovnk.AnnotationNodeTransitSwitchPortIfAddr), false
	}
	return id, "", false
}

// reserveReadNodeID makes this process hold id for node, freeing the ID it
// followed before. An ID another node records as its node ID too is not
// taken (why says so; the node is checked again after duplicateRetry); one
// this process gave another node as a tunnel ID is taken from it, and that
// node gets a new tunnel ID when it is reconciled, here at once. again says
// that the reconcile ends with res without a report (a race with that
// node's reconcile).
func (r *reconciler) reserveReadNodeID(node string, id int) (why string, res ctrl.Result, again bool) {
	if old := r.followed.follow(node, id); old != 0 {
		r.ids.Release(node, old)
	}
	err := r.ids.Reserve(node, id)
	if err == nil {
		return "", ctrl.Result{}, false
	}
	owner, held := r.ids.Owner(id)
	if !held {
		return "", ctrl.Result{RequeueAfter: conflictRetry}, true
	}
	if r.followed.nodeID(owner) == id {
		return fmt.Sprintf("%s %d is node %s's too; waiting for OVN-Kubernetes' cluster manager to give one of them another",
			ovnk.AnnotationNodeID, id, owner), ctrl.Result{RequeueAfter: duplicateRetry}, false
	}
	r.ids.Release(owner, id)
	r.requeue(owner)
	if r.ids.Reserve(node, id) != nil {
		return "", ctrl.Result{RequeueAfter: conflictRetry}, true
	}
	return "", ctrl.Result{}, false
}

// waitForNodeID reports that the node waits for its node ID (why): a log
// line and an Event when the wait starts or its reason changes, and the
// node as lacking a host subnet of every Layer3 network.
func (r *reconciler) waitForNodeID(ctx context.Context, s *nodeScope, why string, warn bool) {
	node := &s.node
	if r.followed.wait(node.Name, why) {
		log.FromContext(ctx).Info("node waits for its node ID", "reason", why)
		typ, reason := corev1.EventTypeNormal, EventWaitingForNodeID
		if warn {
			typ, reason = corev1.EventTypeWarning, EventInvalidNodeID
		}
		r.recorder.Eventf(node, nil, typ, reason, "Reconcile", "%s", why)
	}
	for _, st := range s.states {
		r.setLack(ctx, st, node.Name, lack{msg: fmt.Sprintf("node %s: %s", node.Name, why), waiting: true})
	}
}

// allocTunnelID gives node a new multi-VTEP tunnel ID. With NodeIDsRead it
// is above the node IDs OVN-Kubernetes' cluster manager hands out
// (ovnk.MaxClusterManagerNodeID), whose allocator does not know udnkit's
// tunnel IDs: a node that joins later never gets one of them as its node
// ID. It is the lowest free one at or after the last one given, wrapping
// around, as idalloc.IDAllocator.Allocate gives them.
func (r *reconciler) allocTunnelID(node string) (int, error) {
	if r.opts.NodeIDs != NodeIDsRead {
		return r.ids.Allocate(node)
	}
	first, last := ovnk.MaxClusterManagerNodeID+1, ovnk.MaxNodeID
	size := last - first + 1
	start := max(int(r.tunnelNext.Load()), first)
	for i := range size {
		id := first + (start-first+i)%size
		if _, held := r.ids.Owner(id); held || r.ids.Reserve(node, id) != nil {
			continue
		}
		r.tunnelNext.Store(int64(id + 1))
		return id, nil
	}
	return 0, fmt.Errorf("all %d tunnel IDs in [%d, %d] are in use: %w", size, first, last, idalloc.ErrExhausted)
}
