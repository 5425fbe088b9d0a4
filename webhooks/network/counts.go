package network

import (
	"context"
	"fmt"
	"sync"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
)

// reservationTTL is how long an admitted create counts before the cache
// shows its object: longer than the cache's lag under load, short enough
// that a create refused after this webhook admitted it (by a later
// admission stage or an existing name) soon stops counting.
const reservationTTL = 5 * time.Second

// NetworkCounts counts the UserDefinedNetworks of each namespace and the
// networks (UDNs and CUDNs) of the cluster, each of which holds one network
// ID until its object is gone (a network being deleted still holds it). The
// informers' events keep the counts, so a check costs O(1) whatever a
// namespace holds. An admitted create is reserved until the cache shows its
// object, so concurrent creates in one process cannot all pass a limit the
// cache is a moment behind on. mu guards every field.
type NetworkCounts struct {
	mu       sync.Mutex
	udns     map[string]map[string]struct{} // namespace -> names
	cudns    map[string]struct{}
	total    int                       // UDNs and CUDNs
	reserved map[reservation]time.Time // -> expiry
	now      func() time.Time
	// regs are the event handlers' registrations: the counts are whole
	// once each has been given what its informer held when it was added.
	regs []toolscache.ResourceEventHandlerRegistration
}

// reservation is an admitted create the cache does not show yet; namespace
// is "" for a CUDN.
type reservation struct{ namespace, name string }

// NewNetworkCounts returns counts that c's UDN and CUDN informers keep.
func NewNetworkCounts(ctx context.Context, c cache.Cache) (*NetworkCounts, error) {
	n := &NetworkCounts{udns: map[string]map[string]struct{}{}, cudns: map[string]struct{}{},
		reserved: map[reservation]time.Time{}, now: time.Now}
	return n, n.watch(ctx, c)
}

func (n *NetworkCounts) watch(ctx context.Context, c cache.Cache) error {
	for _, obj := range []client.Object{&udnv1.UserDefinedNetwork{}, &udnv1.ClusterUserDefinedNetwork{}} {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("counting networks: %w", err)
		}
		reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { n.seen(o, true) },
			DeleteFunc: func(o any) { n.seen(o, false) },
		})
		if err != nil {
			return fmt.Errorf("counting networks: %w", err)
		}
		n.regs = append(n.regs, reg)
	}
	return nil
}

// countsSyncTimeout bounds how long a request waits for the counts to be
// whole (only right after the process starts).
const countsSyncTimeout = 10 * time.Second

// waitSynced returns once the counts hold every network the informers had
// when counting began, or an error after countsSyncTimeout.
func (n *NetworkCounts) waitSynced(ctx context.Context) error {
	if n.synced() {
		return nil // every request after the start: no timer, no poll
	}
	ctx, cancel := context.WithTimeout(ctx, countsSyncTimeout)
	defer cancel()
	syncs := make([]toolscache.InformerSynced, len(n.regs))
	for i, r := range n.regs {
		syncs[i] = r.HasSynced
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), syncs...) {
		return fmt.Errorf("counting the cluster's networks: not done after %s", countsSyncTimeout)
	}
	return nil
}

// synced says whether every handler has been given its informer's
// initial list.
func (n *NetworkCounts) synced() bool {
	for _, r := range n.regs {
		if !r.HasSynced() {
			return false
		}
	}
	return true
}

func (n *NetworkCounts) seen(o any, present bool) {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	obj, ok := o.(client.Object)
	if !ok {
		return
	}
	_, isCUDN := obj.(*udnv1.ClusterUserDefinedNetwork)
	key := reservation{namespace: obj.GetNamespace(), name: obj.GetName()}
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.reserved, key)
	set := n.cudns
	if !isCUDN {
		if set = n.udns[key.namespace]; set == nil {
			set = map[string]struct{}{}
			n.udns[key.namespace] = set
		}
	}
	_, had := set[key.name]
	switch {
	case present && !had:
		set[key.name] = struct{}{}
		n.total++
	case !present && had:
		delete(set, key.name)
		n.total--
	}
	if !isCUDN && len(set) == 0 {
		delete(n.udns, key.namespace)
	}
}

// usage is what a create would find: the networks of its namespace and of
// the cluster, reservations included.
type usage struct{ namespace, cluster int }

// admit checks a new network (namespace "" for a CUDN) against check, which
// returns a refusal or nil, and reserves it when admitted and reserve is
// set (not for a dry run). Counting and reserving are one step, so
// concurrent creates see each other.
func (n *NetworkCounts) admit(ctx context.Context, namespace, name string, reserve bool, check func(usage) error) error {
	if err := n.waitSynced(ctx); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	now := n.now()
	u := usage{cluster: n.total}
	set := n.cudns
	if namespace != "" {
		set = n.udns[namespace]
		u.namespace = len(set)
	}
	if _, exists := set[name]; exists {
		return nil // the apiserver refuses it: AlreadyExists
	}
	for r, expiry := range n.reserved {
		switch {
		case now.After(expiry):
			delete(n.reserved, r)
		case r.namespace == namespace && r.name == name:
			// The same create retried: not counted twice.
		default:
			u.cluster++
			if namespace != "" && r.namespace == namespace {
				u.namespace++
			}
		}
	}
	if err := check(u); err != nil {
		return err
	}
	if reserve {
		n.reserved[reservation{namespace, name}] = now.Add(reservationTTL)
	}
	return nil
}
