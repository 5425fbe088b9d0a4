package nodes

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/reconcilers/idalloc"
	"github.com/udnkit/udnkit/reconcilers/nodes/layer3"
)

// hostSubnetState is one Layer3 network's host subnets.
type hostSubnetState struct {
	alloc *idalloc.HostSubnetAllocator // locks itself
	// net, lacking and want are guarded by networkStates.mu.
	net     layer3.Network
	lacking map[string]lack // nodes without a host subnet, and why
	// want is the condition last computed; its summary "" makes the next
	// reconcile write it again.
	want hostSubnetsCondition

	// applyMu orders the condition's writes: reconciles of several nodes
	// compute summaries in turn but write them concurrently, so each writer
	// writes the latest summary (want), not its own, and skips it when
	// applied already. Otherwise an older summary could land last. It
	// guards applied, and is held across the status apply.
	applyMu sync.Mutex
	applied string // the summary last written
}

// lack is why a node has no host subnet of a network: msg says why;
// waiting says that the node waits for its node ID (NodeIDsRead), not that
// the network has none to give.
type lack struct {
	msg     string
	waiting bool
}

type hostSubnetsCondition struct {
	status          metav1.ConditionStatus
	reason, summary string
}

// newHostSubnetState is a new network's state. What an earlier process
// applied stands until the summary changes: a restart rewrites no network's
// status.
func newHostSubnetState(n layer3.Network) (*hostSubnetState, error) {
	alloc, err := idalloc.NewHostSubnetAllocator(n.Subnets)
	if err != nil {
		return nil, fmt.Errorf("network %s: %w", n.Name, err)
	}
	st := &hostSubnetState{alloc: alloc, net: n, lacking: map[string]lack{}}
	if n.HostSubnets != nil {
		st.want.summary, st.applied = n.HostSubnets.Message, n.HostSubnets.Message
	}
	return st, nil
}

// allocateHostSubnets gives the node a host subnet of each network of names
// it lacks one of; lacking says that some network had none to give.
func (r *reconciler) allocateHostSubnets(ctx context.Context, s *nodeScope, names []string) (lacking bool) {
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
			r.nets.mu.Lock()
			ref := st.net.Ref() // syncNetworks rewrites net under the lock
			r.nets.mu.Unlock()
			r.recorder.Eventf(ref, nil, corev1.EventTypeWarning, EventHostSubnetAllocationFailed, "Reconcile", "%s", msg)
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

// adoptHostSubnets makes the allocator hold what the node's annotation
// records when that differs from what it holds (another writer's value, or
// this process's write that lost a race): the apiserver's value wins unless
// this process knows another node holds it, and then the allocator's stands
// and is written over it.
func adoptHostSubnets(alloc *idalloc.HostSubnetAllocator, node string, recorded []netip.Prefix) {
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

// dropRemovedNetworks drops the entries of networks deleted while this
// process ran.
func (r *reconciler) dropRemovedNetworks(s *nodeScope) {
	ns := &r.nets
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if len(ns.removed) < len(s.recorded.subnets) {
		for name := range ns.removed {
			if _, ok := s.recorded.subnets[name]; ok {
				s.setNodeSubnets(name, nil)
			}
		}
		return
	}
	for name := range s.recorded.subnets {
		if ns.removed[name] {
			s.setNodeSubnets(name, nil)
		}
	}
}

// everyNodeAllocated is the HostSubnetsAllocated message when no node lacks a
// host subnet.
const everyNodeAllocated = "every node has a host subnet"

// setLacking records whether node lacks a host subnet of the network (msg
// says why; "" when it has one) and applies the HostSubnetsAllocated
// condition when its summary changes.
func (r *reconciler) setLacking(ctx context.Context, st *hostSubnetState, node, msg string) {
	r.setLack(ctx, st, node, lack{msg: msg})
}

// setLack is setLacking with why (a zero lack: the node has a host subnet).
func (r *reconciler) setLack(ctx context.Context, st *hostSubnetState, node string, why lack) {
	if r.recordLacking(st, node, why) {
		r.applyHostSubnetsCondition(ctx, st)
	}
}

// recordLacking records why node lacks a host subnet and computes the
// condition; changed says that its summary changed.
func (r *reconciler) recordLacking(st *hostSubnetState, node string, why lack) (changed bool) {
	r.nets.mu.Lock()
	defer r.nets.mu.Unlock()
	if why.msg == "" && len(st.lacking) == 0 && st.want.summary == everyNodeAllocated {
		return false // as applied already: every reconcile of every node comes here
	}
	if why.msg == "" {
		delete(st.lacking, node)
	} else {
		st.lacking[node] = why
	}
	want := lackingCondition(st.lacking)
	changed = want.summary != st.want.summary
	st.want = want
	return changed
}

// lackingCondition is the HostSubnetsAllocated condition for the nodes
// lacking a host subnet (node → why). Its reason is WaitingForNodeIDs when
// every one of them waits for its node ID, HostSubnetsExhausted otherwise.
func lackingCondition(lacking map[string]lack) hostSubnetsCondition {
	if len(lacking) == 0 {
		return hostSubnetsCondition{status: metav1.ConditionTrue, reason: udnv1.ReasonHostSubnetsAllocated, summary: everyNodeAllocated}
	}
	nodes := make([]string, 0, len(lacking))
	for n := range lacking {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	first := lacking[nodes[0]].msg
	reason := udnv1.ReasonWaitingForNodeIDs
	for _, why := range lacking {
		if !why.waiting {
			reason = udnv1.ReasonHostSubnetsExhausted
			break
		}
	}
	more := ""
	if len(nodes) > maxNodesInMessage {
		more = fmt.Sprintf(" and %d more", len(nodes)-maxNodesInMessage)
		nodes = nodes[:maxNodesInMessage]
	}
	return hostSubnetsCondition{status: metav1.ConditionFalse, reason: reason,
		summary: fmt.Sprintf("nodes without a host subnet: [%s]%s; %s", strings.Join(nodes, ", "), more, first)}
}

// applyHostSubnetsCondition writes the network's latest condition unless it
// is written already. A failed write makes the next reconcile of any node
// write it again.
func (r *reconciler) applyHostSubnetsCondition(ctx context.Context, st *hostSubnetState) {
	st.applyMu.Lock()
	defer st.applyMu.Unlock()
	r.nets.mu.Lock()
	want, net := st.want, st.net
	r.nets.mu.Unlock()
	if want.summary == st.applied {
		return
	}
	transition := time.Now().UTC()
	if old := net.HostSubnets; old != nil && old.Status == want.status {
		transition = old.LastTransitionTime.UTC()
	}
	cond := map[string]any{
		"type": udnv1.ConditionHostSubnetsAllocated, "status": string(want.status), "reason": want.reason, "message": want.summary,
		"lastTransitionTime": transition.Format(time.RFC3339),
	}
	u := net.Ref()
	u.SetUID("")
	u.Object["status"] = map[string]any{"conditions": []any{cond}}
	if err := r.client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil && !apierrors.IsNotFound(err) {
		ns := &r.nets
		ns.mu.Lock()
		st.want.summary = "" // retry on the next reconcile ...
		if ns.synced != nil {
			// ... of any node, complete or not.
			ns.newSnapshot(ns.synced.states, ns.synced.names, networkChange{all: true})
		}
		ns.mu.Unlock()
		return
	}
	st.applied = want.summary
}
