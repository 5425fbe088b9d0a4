package nodes

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/ovnk"
)

// nodeClaims is what a node's annotations hold that must be unique among
// nodes: node and tunnel IDs (one ID space) and each network's host subnets.
type nodeClaims struct {
	meta    *metav1.PartialObjectMetadata
	ids     []int
	subnets map[string][]netip.Prefix
}

func claimsOf(p *metav1.PartialObjectMetadata) nodeClaims {
	n := &corev1.Node{ObjectMeta: p.ObjectMeta}
	c := nodeClaims{meta: p}
	if id, ok, err := ovnk.DecodeNodeID(n); err == nil && ok {
		c.ids = append(c.ids, id)
	}
	if ids, err := ovnk.DecodeNodeTunnelIDs(n); err == nil {
		for _, id := range ids {
			if !slices.Contains(c.ids, id) {
				c.ids = append(c.ids, id)
			}
		}
	}
	c.subnets, _ = ovnk.DecodeNodeSubnets(n)
	return c
}

// clash is what two nodes both claim.
type clash struct {
	ids      []int
	networks map[string][]netip.Prefix // network → the other node's prefixes that overlap
}

func (c clash) empty() bool { return len(c.ids) == 0 && len(c.networks) == 0 }

func (c clash) String() string {
	var parts []string
	if len(c.ids) > 0 {
		parts = append(parts, fmt.Sprintf("node/tunnel IDs %v", c.ids))
	}
	names := make([]string, 0, len(c.networks))
	for n := range c.networks {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("host subnets %v of network %s", c.networks[n], n))
	}
	return strings.Join(parts, ", ")
}

func clashOf(mine, other nodeClaims) clash {
	c := clash{networks: map[string][]netip.Prefix{}}
	for _, id := range mine.ids {
		if slices.Contains(other.ids, id) {
			c.ids = append(c.ids, id)
		}
	}
	for net, ps := range mine.subnets {
		for _, q := range other.subnets[net] {
			for _, p := range ps {
				if p.Overlaps(q) {
					c.networks[net] = append(c.networks[net], q)
					break
				}
			}
		}
	}
	return c
}

// withoutClash returns the annotations of a node that yields c: the clashing
// node ID goes with the tunnel IDs (their first entry is the node ID); the
// networks' host subnet entries go; what remains is allocated again.
func withoutClash(node *metav1.PartialObjectMetadata, mine nodeClaims, c clash) map[string]string {
	out := map[string]string{}
	for k, v := range node.Annotations {
		out[k] = v
	}
	if len(c.ids) > 0 {
		delete(out, ovnk.AnnotationNodeTransitSwitchPortTunnelIDs)
		if id, ok, err := ovnk.DecodeNodeID(&corev1.Node{ObjectMeta: node.ObjectMeta}); err == nil && ok && slices.Contains(c.ids, id) {
			delete(out, ovnk.AnnotationNodeID)
		}
	}
	if len(c.networks) > 0 {
		subnets := map[string][]netip.Prefix{}
		for k, v := range mine.subnets {
			if _, gone := c.networks[k]; !gone {
				subnets[k] = v
			}
		}
		if len(subnets) == 0 {
			delete(out, ovnk.AnnotationNodeSubnets)
		} else {
			out[ovnk.AnnotationNodeSubnets] = ovnk.EncodeNodeSubnets(subnets)
		}
	}
	return out
}

// uniqueAnnotationsChanged says whether a write changes what verify checks.
func uniqueAnnotationsChanged(old, want map[string]string) bool {
	for _, k := range []string{ovnk.AnnotationNodeID, ovnk.AnnotationNodeTransitSwitchPortTunnelIDs, ovnk.AnnotationNodeSubnets} {
		if old[k] != want[k] {
			return true
		}
	}
	return false
}

// verify is write-then-verify for node IDs, tunnel IDs and host subnets, as
// the network controller checks network IDs: after writing, read every
// node straight from the apiserver. Whichever writer reads after both writes
// sees a clash, so the reader resolves it, always the same way: the younger
// node yields (its clashing values are removed; the reconcile of that node,
// here or in the other process, allocates again), the older keeps them.
func (r *reconciler) verify(ctx context.Context, name string, states map[string]*hostSubnetState) (ctrl.Result, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := r.reader.List(ctx, list); err != nil {
		return ctrl.Result{}, fmt.Errorf("checking node IDs and host subnets: %w", err)
	}
	var mine nodeClaims
	found := false
	for i := range list.Items {
		if list.Items[i].Name == name {
			mine, found = claimsOf(&list.Items[i]), true
		}
	}
	if !found {
		r.unverified.Set(name, false)
		return ctrl.Result{}, nil
	}
	var yielded, retry bool
	for i := range list.Items {
		o := &list.Items[i]
		if o.Name == name {
			continue
		}
		loser, lost, err := r.resolveClash(ctx, mine, claimsOf(o), states)
		if err != nil {
			return ctrl.Result{}, err
		}
		retry = retry || lost
		if loser == name {
			yielded = true
			break // this node's annotations changed; the next reconcile checks again
		}
	}
	if yielded || retry {
		return ctrl.Result{RequeueAfter: conflictRetry + time.Duration(rand.Int64N(int64(conflictRetry)))}, nil
	}
	r.unverified.Set(name, false)
	return ctrl.Result{}, nil
}

// resolveClash makes the younger of two nodes that claim one value give up
// what they both claim: its clashing values are removed from its
// annotations, and this process learns the older node's. loser names the
// node that yielded ("" when nothing clashes); lost says that the write lost
// a race (the node changed or went) and the check must run again.
func (r *reconciler) resolveClash(ctx context.Context, mine, other nodeClaims, states map[string]*hostSubnetState) (loser string, lost bool, err error) {
	c := clashOf(mine, other)
	if c.empty() {
		return "", false, nil
	}
	yields, winner := mine, other
	if olderNode(mine.meta, other.meta) < 0 {
		yields, winner = other, mine
		c = clashOf(other, mine)
	}
	meta := yields.meta
	patched := meta.DeepCopy()
	patched.Annotations = withoutClash(meta, yields, c)
	patched.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	if err := r.client.Patch(ctx, patched, client.MergeFromWithOptions(meta, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return "", true, nil
		}
		return "", false, err
	}
	// This process learns the winner's values, so it hands them out to no
	// one else; what it held for the loser is free.
	for _, id := range c.ids {
		r.ids.Release(meta.Name, id)
		_ = r.ids.Reserve(winner.meta.Name, id)
	}
	for net, ps := range c.networks {
		if st := states[net]; st != nil {
			st.alloc.Release(meta.Name)
			for _, p := range ps {
				_ = st.alloc.Reserve(winner.meta.Name, p)
			}
		}
	}
	r.recorder.Eventf(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: meta.Name, UID: meta.UID}}, nil, corev1.EventTypeWarning,
		EventNodeAllocationConflict, "Reconcile", "%s were also written to older node %s by another writer; allocating again", c, winner.meta.Name)
	return meta.Name, false, nil
}
