package nodes

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/udnkit/udnkit/internal/phase"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers/nodes/claims"
)

// nodeScope carries one node reconcile from phase to phase.
type nodeScope struct {
	phase.Stop
	req   ctrl.Request
	start time.Time
	// stale: the networks listed miss a change (see layer3.Lister.Cached);
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

// Reconcile gives the node its IDs and host subnets, one phase after
// another.
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	nodeID := r.ensureNodeID
	if r.opts.NodeIDs == NodeIDsRead {
		nodeID = r.readNodeID
	}
	phases := []phase.Func[*nodeScope]{
		r.syncNodeNetworks,
		r.getNodeOrRelease,
		nodeID,
		r.ensureTunnelIDs,
		r.ensureHostSubnets,
		r.patchNodeAnnotations,
		r.verifyNode,
	}
	s := &nodeScope{req: req, start: time.Now()}
	res, err := phase.Run(ctx, s, phases)
	if s.timed {
		r.pace.timeReconcile(s.start)
	}
	if again := r.pace.listAge(); s.stale && err == nil && (res.RequeueAfter == 0 || res.RequeueAfter > again) {
		res.RequeueAfter = again
	}
	return res, err
}

// syncNodeNetworks takes the Layer3 networks and their allocators; the
// first reconcile rebuilds every allocator from the nodes (syncNetworks).
func (r *reconciler) syncNodeNetworks(ctx context.Context, s *nodeScope) (ctrl.Result, error) {
	nets, gen, stale, err := r.networks.Cached(ctx)
	if err != nil {
		return s.Done(ctrl.Result{}, err)
	}
	s.stale = stale
	synced, err := r.syncNetworks(ctx, nets, gen)
	if err != nil {
		return s.Done(ctrl.Result{}, err)
	}
	s.synced, s.states = synced, synced.states
	return ctrl.Result{}, nil
}

// getNodeOrRelease reads the node; a node that is gone has its IDs and host
// subnets released.
func (r *reconciler) getNodeOrRelease(ctx context.Context, s *nodeScope) (ctrl.Result, error) {
	if err := r.client.Get(ctx, s.req.NamespacedName, &s.node); err != nil {
		if !apierrors.IsNotFound(err) {
			return s.Done(ctrl.Result{}, err)
		}
		r.releaseNode(ctx, s.req.Name, s.states)
		return s.Done(ctrl.Result{}, nil)
	}
	s.want = make(map[string]string, len(s.node.Annotations))
	maps.Copy(s.want, s.node.Annotations)
	return ctrl.Result{}, nil
}

// releaseNode frees a deleted node's IDs and host subnets and reconciles
// the nodes that lack a host subnet again.
func (r *reconciler) releaseNode(ctx context.Context, name string, states map[string]*hostSubnetState) {
	r.ids.ReleaseOwner(name)
	r.followed.forget(name)
	r.unverified.Set(name, false)
	r.seen.forget(name)
	r.nets.mu.Lock()
	for _, held := range r.nets.orphans {
		delete(held, name)
	}
	r.nets.mu.Unlock()
	var waiting []string
	for _, st := range states {
		st.alloc.Release(name)
		r.setLacking(ctx, st, name, "")
		r.nets.mu.Lock()
		for n := range st.lacking {
			waiting = append(waiting, n)
		}
		r.nets.mu.Unlock()
	}
	for _, n := range waiting {
		r.requeue(n)
	}
}

// requeue reconciles the node name again.
func (r *reconciler) requeue(name string) {
	ev := event.GenericEvent{Object: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}}
	select {
	case r.retry <- ev:
	default:
		go func() { r.retry <- ev }()
	}
}

// ensureNodeID keeps the node's ID. One that is malformed, out of range or
// held by an older node cannot be used by anyone (OVN would refuse it, or
// two nodes would share transit ports): this node gets a new one, with an
// Event.
func (r *reconciler) ensureNodeID(_ context.Context, s *nodeScope) (ctrl.Result, error) {
	node := &s.node
	nodeID, ok, derr := ovnk.DecodeNodeID(node)
	if derr != nil {
		r.recorder.Eventf(node, nil, corev1.EventTypeWarning, EventInvalidNodeID, "Reconcile", "%v; allocating a new node ID", derr)
	} else if ok {
		if err := r.ids.Reserve(node.Name, nodeID); err != nil {
			r.recorder.Eventf(node, nil, corev1.EventTypeWarning, EventInvalidNodeID, "Reconcile",
				"node %s annotation %s: %v; allocating a new node ID", node.Name, ovnk.AnnotationNodeID, err)
			ok = false
		}
	}
	if !ok {
		var err error
		if nodeID, err = r.allocNodeID(node.Name); err != nil {
			r.recorder.Eventf(node, nil, corev1.EventTypeWarning, EventNodeIDAllocationFailed, "Reconcile", "%v", err)
			return s.Done(ctrl.Result{RequeueAfter: 30 * time.Second}, nil)
		}
		s.want[ovnk.AnnotationNodeID] = strconv.Itoa(nodeID)
	}
	s.nodeID = nodeID
	return ctrl.Result{}, nil
}

// allocNodeID returns the ID this process already holds for the node (a
// retry after a conflict) or a new one.
func (r *reconciler) allocNodeID(node string) (int, error) {
	if held := r.ids.Held(node); len(held) > 0 {
		return held[0], nil
	}
	return r.ids.Allocate(node)
}

// ensureTunnelIDs keeps the node's multi-VTEP tunnel IDs.
func (r *reconciler) ensureTunnelIDs(_ context.Context, s *nodeScope) (ctrl.Result, error) {
	if err := r.tunnelIDs(&s.node, s.nodeID, s.want); err != nil {
		r.recorder.Eventf(&s.node, nil, corev1.EventTypeWarning, EventTunnelIDAllocationFailed, "Reconcile", "%v", err)
		return s.Done(ctrl.Result{}, err)
	}
	return ctrl.Result{}, nil
}

// tunnelIDs keeps k8s.ovn.org/node-transit-switch-port-tunnel-ids: one ID per
// encap IP in k8s.ovn.org/node-encap-ips order, the node ID first.
func (r *reconciler) tunnelIDs(node *corev1.Node, nodeID int, want map[string]string) error {
	encap, err := ovnk.DecodeNodeEncapIPs(node)
	if err != nil {
		return err
	}
	extras := r.heldTunnelIDs(node, nodeID)
	need := max(len(encap)-1, 0)
	for len(extras) > need {
		r.ids.Release(node.Name, extras[len(extras)-1])
		extras = extras[:len(extras)-1]
	}
	for len(extras) < need {
		id, err := r.allocTunnelID(node.Name)
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

// heldTunnelIDs are the node's tunnel IDs besides its node ID: those its
// annotation records (anything else this process held for the node, a write
// that lost a race, is freed), or else those this process holds. Another
// node's (a second writer's) ID is given up, like a duplicate node ID: this
// node gets a new one.
func (r *reconciler) heldTunnelIDs(node *corev1.Node, nodeID int) []int {
	current, err := ovnk.DecodeNodeTunnelIDs(node)
	if err != nil {
		current = nil // rewritten
	}
	var extras []int
	if len(current) > 0 && current[0] == nodeID {
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
	kept := extras[:0:0]
	for _, id := range extras {
		if err := r.ids.Reserve(node.Name, id); err != nil {
			r.recorder.Eventf(node, nil, corev1.EventTypeWarning, EventInvalidNodeID, "Reconcile",
				"node %s annotation %s: %v; allocating a new tunnel ID", node.Name, ovnk.AnnotationNodeTransitSwitchPortTunnelIDs, err)
			continue
		}
		kept = append(kept, id)
	}
	return kept
}

// ensureHostSubnets keeps the node's Layer3 host subnets. A malformed
// annotation is reported, never overwritten. A pass over every node for a
// network change costs each node a decode and a check per network changed
// since its value was complete; a value complete for the current networks,
// neither. The annotation is encoded only when something changes.
func (r *reconciler) ensureHostSubnets(ctx context.Context, s *nodeScope) (ctrl.Result, error) {
	recorded, derr := r.decodeSubnets(&s.node, s.synced.seq)
	s.recorded = recorded
	if derr != nil {
		r.recorder.Eventf(&s.node, nil, corev1.EventTypeWarning, EventHostSubnetAllocationFailed, "Reconcile", "%v", derr)
		s.states = nil
		return ctrl.Result{}, nil
	}
	if recorded.complete == s.synced.seq {
		return ctrl.Result{}, nil
	}
	s.timed = true
	lacking := r.allocateHostSubnets(ctx, s, r.networksToCheck(s))
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
		r.seen.remember(s.node.Name, s.recorded)
	case len(s.next) == 0:
		delete(s.want, ovnk.AnnotationNodeSubnets)
	default:
		s.want[ovnk.AnnotationNodeSubnets] = ovnk.EncodeNodeSubnets(s.next)
	}
	return ctrl.Result{}, nil
}

// networksToCheck are the networks changed since the node was last
// complete, if they are known; otherwise every network.
func (r *reconciler) networksToCheck(s *nodeScope) []string {
	if s.recorded.complete != 0 {
		if changed, ok := r.nets.changedSince(s.recorded.complete, s.synced.seq); ok {
			return changed
		}
	}
	return s.synced.names
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

// patchNodeAnnotations writes the node's annotations when they changed.
func (r *reconciler) patchNodeAnnotations(ctx context.Context, s *nodeScope) (ctrl.Result, error) {
	node := &s.node
	if maps.Equal(s.want, node.Annotations) {
		return ctrl.Result{}, nil
	}
	if err := r.client.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name}},
		client.RawPatch(types.MergePatchType, annotationsPatch(node, s.want))); err != nil {
		if apierrors.IsConflict(err) {
			// What this process allocated stays held for the node, so the
			// retry writes the same values.
			return s.Done(ctrl.Result{RequeueAfter: conflictRetry}, nil)
		}
		return s.Done(ctrl.Result{}, client.IgnoreNotFound(err))
	}
	if v, ok := s.want[ovnk.AnnotationNodeSubnets]; ok && s.next != nil {
		r.seen.remember(node.Name, nodeSubnets{value: v, subnets: s.next, canonical: true, complete: s.recorded.complete})
	}
	if claims.Changed(node.Annotations, s.want) && !r.opts.SingleWriter {
		r.unverified.Set(node.Name, true)
	}
	return ctrl.Result{}, nil
}

// verifyNode checks the node's newly written values against every other
// node (verify).
func (r *reconciler) verifyNode(ctx context.Context, s *nodeScope) (ctrl.Result, error) {
	if !r.unverified.Has(s.node.Name) {
		return ctrl.Result{}, nil
	}
	return s.Done(r.verify(ctx, s.node.Name, s.states))
}
