package reconcilers

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers/netids"
)

// networkAllocators hold the network IDs and centrally allocated tunnel keys
// of every network. They are rebuilt once, from the annotations on the UDNs,
// CUDNs and NADs read straight from the apiserver, before the first
// allocation; a network's IDs are then written to its CR with the CR's
// resourceVersion, so a stale read can never commit a second ID.
type networkAllocators struct {
	reader client.Reader
	cfg    *Config

	initMu sync.Mutex
	inited bool

	networkIDs *netids.IDAllocator
	tunnelKeys *netids.IDAllocator

	// unverified are owners whose newly allocated IDs have not yet been
	// checked against the apiserver (see conflict).
	unverified unverifiedSet
}

func newNetworkAllocators(reader client.Reader, cfg *Config) *networkAllocators {
	return &networkAllocators{
		reader:     reader,
		cfg:        cfg,
		networkIDs: netids.NewIDAllocator("network ID", 1, cfg.MaxNetworkID),
		tunnelKeys: netids.NewIDAllocator("tunnel key", cfg.TunnelKeyFirst, cfg.TunnelKeyLast),
	}
}

// networkKey names a network's allocations.
func networkKey(kind, namespace, name string) string {
	if namespace == "" {
		return kind + "/" + name
	}
	return kind + "/" + namespace + "/" + name
}

// reserveFrom records the IDs an object's annotations hold for owner. What
// another network already holds is not reserved: ensure gives the network
// new IDs, with an Event, when it next reconciles.
func (a *networkAllocators) reserveFrom(owner string, annotations map[string]string) {
	dec, err := ovnk.DecodeNetworkIDs(annotations)
	id, hasID, keys := dec.ID, dec.HasID, dec.TunnelKeys
	if err != nil {
		return
	}
	if hasID {
		_ = a.networkIDs.Reserve(owner, id)
	}
	for _, k := range keys {
		_ = a.tunnelKeys.Reserve(owner, k)
	}
}

// recorded is one object whose annotations record a network's IDs.
type recorded struct {
	owner       string
	created     metav1.Time
	annotations map[string]string
}

func (a *networkAllocators) ensureInit(ctx context.Context) error {
	a.initMu.Lock()
	defer a.initMu.Unlock()
	if a.inited {
		return nil
	}
	var all []recorded
	created := map[types.UID]metav1.Time{}
	var udns udnv1.UserDefinedNetworkList
	if err := a.reader.List(ctx, &udns); err != nil {
		return fmt.Errorf("rebuilding network IDs: %w", err)
	}
	for _, u := range udns.Items {
		created[u.UID] = u.CreationTimestamp
		all = append(all, recorded{networkKey(kindUDN, u.Namespace, u.Name), u.CreationTimestamp, u.Annotations})
	}
	var cudns udnv1.ClusterUserDefinedNetworkList
	if err := a.reader.List(ctx, &cudns); err != nil {
		return fmt.Errorf("rebuilding network IDs: %w", err)
	}
	for _, c := range cudns.Items {
		created[c.UID] = c.CreationTimestamp
		all = append(all, recorded{networkKey(kindCUDN, "", c.Name), c.CreationTimestamp, c.Annotations})
	}
	// NADs carry the same annotations; a CR whose own annotation was lost
	// still keeps the ID its NADs advertise. A NAD counts as old as its CR.
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := a.reader.List(ctx, &nads, client.HasLabels{ovnk.LabelUserDefinedNetwork}); err != nil {
		return fmt.Errorf("rebuilding network IDs: %w", err)
	}
	for _, n := range nads.Items {
		ref := metav1.GetControllerOf(&n)
		if ref == nil {
			continue
		}
		at, ok := created[ref.UID]
		if !ok {
			at = n.CreationTimestamp
		}
		switch ref.Kind {
		case kindUDN:
			all = append(all, recorded{networkKey(kindUDN, n.Namespace, ref.Name), at, n.Annotations})
		case kindCUDN:
			all = append(all, recorded{networkKey(kindCUDN, "", ref.Name), at, n.Annotations})
		}
	}
	// Oldest network first, whatever its kind: of two networks recording
	// one ID (a forged annotation, a second writer) the older keeps it and
	// the younger is given a new one; it can never take an older one's.
	slices.SortStableFunc(all, func(x, y recorded) int {
		return cmp.Or(x.created.Compare(y.created.Time), cmp.Compare(x.owner, y.owner))
	})
	for _, r := range all {
		a.reserveFrom(r.owner, r.annotations)
	}
	a.inited = true
	return nil
}

// ensure returns the network's IDs: those the allocator already holds for
// it, those its annotations record, or new ones. undo releases what was newly
// allocated, for when the caller cannot persist it. Recorded values udnkit
// could not have written for this network (held by an older network, out of
// range) are replaced; ignored says which, without naming the other network,
// for an Event on this one.
func (a *networkAllocators) ensure(ctx context.Context, owner string, annotations map[string]string, wantKeys int) (ids ovnk.NetworkIDs, undo func(), ignored []string, err error) {
	if err := a.ensureInit(ctx); err != nil {
		return ids, nil, nil, err
	}
	dec, err := ovnk.DecodeNetworkIDs(annotations)
	id, hasID, keys := dec.ID, dec.HasID, dec.TunnelKeys
	if err != nil {
		return ids, nil, nil, err
	}
	var newID bool
	var newKeys []int
	undo = func() {
		if newID {
			a.networkIDs.Release(owner, ids.ID)
		}
		for _, k := range newKeys {
			a.tunnelKeys.Release(owner, k)
		}
	}
	switch held := a.networkIDs.Held(owner); {
	case len(held) > 0 && (!hasID || held[0] != id):
		// What this process holds wins over an edited annotation: a
		// network's ID never changes while it exists.
		ids.ID = held[0]
	case hasID && a.networkIDs.Reserve(owner, id) == nil:
		ids.ID = id
	default:
		if hasID {
			first, last := a.networkIDs.Range()
			ignored = append(ignored, fmt.Sprintf("network ID %d (held by an older network, or outside [%d, %d])", id, first, last))
			keys = nil // the switch key derives from the ID
		}
		if ids.ID, err = a.networkIDs.Allocate(owner); err != nil {
			return ids, nil, nil, err
		}
		newID = true
	}
	if k, held := a.heldByOther(owner, keys); held {
		ignored = append(ignored, fmt.Sprintf("tunnel keys %v (key %d is held by an older network)", keys, k))
		keys = nil
	}
	if wantKeys > 0 && len(keys) == 0 {
		// OKEP-5094 option 3, as upstream's TunnelKeysAllocator: the first key
		// (the Layer2 switch's) stays the legacy key derived from the network
		// ID; only the transit router's comes from the allocated range.
		// Networks annotated before keep what they recorded.
		if keys = a.tunnelKeys.Held(owner); len(keys) < wantKeys {
			legacy, err := ovnk.LegacyTransitSwitchKey(ids.ID)
			if err != nil {
				undo()
				return ovnk.NetworkIDs{}, nil, nil, err
			}
			keys = append([]int{legacy}, keys...)
		}
	}
	first, last := a.tunnelKeys.Range()
	for _, k := range keys {
		if k < first || k > last {
			// Recorded before the range was narrowed: still valid, not ours to manage.
			continue
		}
		if err := a.tunnelKeys.Reserve(owner, k); err != nil {
			undo()
			return ovnk.NetworkIDs{}, nil, nil, err
		}
	}
	for len(keys) < wantKeys {
		k, err := a.tunnelKeys.Allocate(owner)
		if err != nil {
			undo()
			return ovnk.NetworkIDs{}, nil, nil, err
		}
		keys = append(keys, k)
		newKeys = append(newKeys, k)
	}
	ids.TunnelKeys = keys
	return ids, undo, ignored, nil
}

// heldByOther returns a key of keys another owner holds.
func (a *networkAllocators) heldByOther(owner string, keys []int) (int, bool) {
	for _, k := range keys {
		if o, ok := a.tunnelKeys.Owner(k); ok && o != owner {
			return k, true
		}
	}
	return 0, false
}

func (a *networkAllocators) isUnverified(owner string) bool { return a.unverified.has(owner) }

func (a *networkAllocators) setUnverified(owner string, v bool) { a.unverified.set(owner, v) }

// unverifiedSet holds the owners whose last write is not yet verified
// (write-then-verify; see networkAllocators.conflict and nodeReconciler.verify).
type unverifiedSet struct {
	mu sync.Mutex
	m  map[string]bool
}

func (s *unverifiedSet) has(owner string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[owner]
}

func (s *unverifiedSet) set(owner string, v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]bool{}
	}
	if v {
		s.m[owner] = true
	} else {
		delete(s.m, owner)
	}
}

// conflict looks, straight in the apiserver, for another network whose
// annotations hold one of ids. Another process (a second manager without
// leader election, or an old leader) may have written the same ID to a
// different network; whichever writer lists after both writes sees it, so
// a writer that finds a conflict yields and no ID stays on two networks. It
// also makes this process's allocators learn the other network's IDs.
func (a *networkAllocators) conflict(ctx context.Context, owner string, ids ovnk.NetworkIDs) (other string, err error) {
	for _, kind := range []string{kindUDN, kindCUDN} {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(udnv1.GroupVersion.WithKind(kind + "List"))
		if err := a.reader.List(ctx, list); err != nil {
			return "", fmt.Errorf("checking network IDs: %w", err)
		}
		for _, o := range list.Items {
			other := networkKey(kind, o.Namespace, o.Name)
			if other == owner {
				continue
			}
			dec, err := ovnk.DecodeNetworkIDs(o.Annotations)
			id, hasID, keys := dec.ID, dec.HasID, dec.TunnelKeys
			if err != nil {
				continue
			}
			clash := hasID && id == ids.ID
			for _, k := range keys {
				clash = clash || slices.Contains(ids.TunnelKeys, k)
			}
			if clash {
				return other, nil
			}
		}
	}
	a.setUnverified(owner, false)
	return "", nil
}

// yield gives up owner's IDs. It reserves nothing for the other network:
// if both writers yield, neither may keep a phantom claim; the allocation
// cursor has moved past the IDs anyway, and every write is checked again.
func (a *networkAllocators) yield(owner string) {
	a.release(owner)
}

// release frees everything owner holds.
func (a *networkAllocators) release(owner string) {
	a.setUnverified(owner, false)
	a.networkIDs.ReleaseOwner(owner)
	a.tunnelKeys.ReleaseOwner(owner)
}
