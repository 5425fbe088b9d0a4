// Package networkids keeps the network ID and the centrally allocated tunnel
// keys of every UserDefinedNetwork and ClusterUserDefinedNetwork in one
// process: rebuilt once from what the cluster records, handed out to the UDN
// and CUDN controllers, and checked against other writers after each write.
// Without leader election, IDs reach a NAD only once committed on their CR
// (ovnk.AnnotationNetworkIDsCommitted, written conditionally on the version
// the check saw); committed IDs are final and never another network's.
// The integer allocators themselves are reconcilers/idalloc.
package networkids

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/nadtrust"
	"github.com/udnkit/udnkit/reconcilers/idalloc"
	"github.com/udnkit/udnkit/reconcilers/internal/pending"
)

// Options bound the IDs and say whether this process is their only writer.
type Options struct {
	// MaxNetworkID bounds network IDs (1..MaxNetworkID).
	MaxNetworkID int
	// TunnelKeyFirst and TunnelKeyLast bound the centrally allocated tunnel
	// keys.
	TunnelKeyFirst, TunnelKeyLast int
	// SingleWriter skips the check of each write against other writers.
	SingleWriter bool
}

// Allocators hold the network IDs and centrally allocated tunnel keys
// of every network. They are rebuilt once, from the annotations on the UDNs,
// CUDNs and NADs read straight from the apiserver, before the first
// allocation; a network's IDs are then written to its CR with the CR's
// resourceVersion, so a stale read can never commit a second ID.
type Allocators struct {
	reader client.Reader
	opts   Options
	// guard reports the NADs the rebuild ignores (ovnk/nadtrust).
	guard *nadtrust.Guard

	initMu sync.Mutex
	inited bool

	ensureMu sync.Mutex

	networkIDs *idalloc.IDAllocator
	tunnelKeys *idalloc.IDAllocator

	// unverified are owners whose newly allocated IDs have not yet been
	// checked against the apiserver (see Conflict).
	unverified pending.Set
	// learned are owners whose IDs this process only learned from another
	// writer's network (see Yield), not allocated or read from the owner's
	// own annotations.
	learned pending.Set
	// committed are owners whose IDs this process saw committed
	// (ovnk.AnnotationNetworkIDsCommitted, see NeedsCommit): final while the
	// network exists, never another committed network's.
	committed pending.Set
}

// Consumer is the consumer label of the rebuild's reports
// (udnkit_untrusted_nads_total).
const Consumer = "network-ids"

// New returns allocators that rebuild from reader on first use; rec
// reports the NADs the rebuild ignores.
func New(reader client.Reader, opts Options, rec recorder.EventRecorder) *Allocators {
	return &Allocators{
		reader:     reader,
		opts:       opts,
		guard:      &nadtrust.Guard{Reader: reader, Recorder: rec, Consumer: Consumer},
		networkIDs: idalloc.NewIDAllocator("network ID", 1, opts.MaxNetworkID),
		tunnelKeys: idalloc.NewIDAllocator("tunnel key", opts.TunnelKeyFirst, opts.TunnelKeyLast),
	}
}

// Key names a network's allocations.
func Key(kind, namespace, name string) string {
	if namespace == "" {
		return kind + "/" + name
	}
	return kind + "/" + namespace + "/" + name
}

// reserveFrom records the IDs an object's annotations hold for owner. What
// another network already holds is not reserved: Ensure gives the network
// new IDs, with an Event, when it next reconciles. lost says what was not
// reserved because another network holds it, without naming that network.
func (a *Allocators) reserveFrom(owner string, annotations map[string]string) (lost []string) {
	dec, err := ovnk.DecodeNetworkIDs(annotations)
	id, hasID, keys := dec.ID, dec.HasID, dec.TunnelKeys
	if err != nil {
		return nil
	}
	if hasID {
		if o, held := a.networkIDs.Owner(id); held && o != owner {
			lost = append(lost, fmt.Sprintf("network ID %d", id))
		}
		_ = a.networkIDs.Reserve(owner, id)
	}
	for _, k := range keys {
		if o, held := a.tunnelKeys.Owner(k); held && o != owner {
			lost = append(lost, fmt.Sprintf("tunnel key %d", k))
		}
		_ = a.tunnelKeys.Reserve(owner, k)
	}
	return lost
}

// recorded is one object whose annotations record a network's IDs.
type recorded struct {
	owner       string
	created     metav1.Time
	committed   bool
	annotations map[string]string
	// nad is set when the object is a NAD (reported when its claim loses).
	nad *nadv1.NetworkAttachmentDefinition
}

func (a *Allocators) ensureInit(ctx context.Context) error {
	a.initMu.Lock()
	defer a.initMu.Unlock()
	if a.inited {
		return nil
	}
	var all []recorded
	owners := map[string]client.Object{} // networkKey -> the UDN or CUDN
	var udns udnv1.UserDefinedNetworkList
	if err := a.reader.List(ctx, &udns); err != nil {
		return fmt.Errorf("rebuilding network IDs: %w", err)
	}
	for i := range udns.Items {
		u := &udns.Items[i]
		owners[Key(udnv1.KindUserDefinedNetwork, u.Namespace, u.Name)] = u
		all = append(all, recorded{owner: Key(udnv1.KindUserDefinedNetwork, u.Namespace, u.Name), created: u.CreationTimestamp, committed: ovnk.NetworkIDsCommitted(u.Annotations), annotations: u.Annotations})
	}
	var cudns udnv1.ClusterUserDefinedNetworkList
	if err := a.reader.List(ctx, &cudns); err != nil {
		return fmt.Errorf("rebuilding network IDs: %w", err)
	}
	for i := range cudns.Items {
		c := &cudns.Items[i]
		owners[Key(udnv1.KindClusterUserDefinedNetwork, "", c.Name)] = c
		all = append(all, recorded{owner: Key(udnv1.KindClusterUserDefinedNetwork, "", c.Name), created: c.CreationTimestamp, committed: ovnk.NetworkIDsCommitted(c.Annotations), annotations: c.Annotations})
	}
	// NADs carry the same annotations; a CR whose own annotation was lost
	// (a network OVN-Kubernetes created annotates only its NADs) still keeps
	// the ID its NADs advertise. Only NADs that pass the ownership rule
	// against the owners listed above count, each as old as its owner; the
	// others are reported and ignored.
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := a.reader.List(ctx, &nads, client.HasLabels{ovnk.LabelUserDefinedNetwork}); err != nil {
		return fmt.Errorf("rebuilding network IDs: %w", err)
	}
	lookup := func(kind string, key types.NamespacedName) (client.Object, error) {
		return owners[Key(kind, key.Namespace, key.Name)], nil
	}
	for i := range nads.Items {
		n := &nads.Items[i]
		owner, err := nadtrust.VerifyWith(n, lookup)
		if u, ok := nadtrust.IsUntrusted(err); ok {
			a.guard.Report(ctx, n, u.Reason, u.Message)
			continue
		}
		if err != nil {
			return fmt.Errorf("rebuilding network IDs: %w", err)
		}
		all = append(all, recorded{owner: Key(owner.Kind, owner.Namespace, owner.Name), created: owner.Created, annotations: n.Annotations, nad: n})
	}
	// Committed IDs first (no two networks' overlap, and no writer changes
	// them), then oldest network first, whatever its kind: of two networks
	// recording one ID (a forged annotation, a second writer's uncommitted
	// claim) the older keeps it and the younger is given a new one; it can
	// never take an older one's.
	slices.SortStableFunc(all, func(x, y recorded) int {
		return cmp.Or(cmpCommitted(x.committed, y.committed), x.created.Compare(y.created.Time), cmp.Compare(x.owner, y.owner))
	})
	for _, r := range all {
		lost := a.reserveFrom(r.owner, r.annotations)
		if r.committed && r.nad == nil && len(lost) == 0 {
			a.committed.Set(r.owner, true)
		}
		if len(lost) > 0 && r.nad != nil {
			a.guard.Report(ctx, r.nad, nadtrust.ReasonClaimLost, fmt.Sprintf("%s: held by an older network; this network gets new ones when it is next reconciled",
				strings.Join(lost, ", ")))
		}
	}
	a.inited = true
	return nil
}

// cmpCommitted orders committed before uncommitted.
func cmpCommitted(x, y bool) int {
	switch {
	case x == y:
		return 0
	case x:
		return -1
	}
	return 1
}

// Ensure returns the network's IDs: those the allocator already holds for
// it, those its annotations record, or new ones. undo releases what was newly
// allocated, for when the caller cannot persist it. Recorded values udnkit
// could not have written for this network (held by an older network, out of
// range) are replaced; ignored says which, without naming the other network,
// for an Event on this one.
func (a *Allocators) Ensure(ctx context.Context, owner string, annotations map[string]string, wantKeys int) (ids ovnk.NetworkIDs, undo func(), ignored []string, err error) {
	if err := a.ensureInit(ctx); err != nil {
		return ids, nil, nil, err
	}
	dec, err := ovnk.DecodeNetworkIDs(annotations)
	if err != nil {
		return ids, nil, nil, err
	}
	q := &idRequest{owner: owner, annotations: annotations, wantKeys: wantKeys, id: dec.ID, hasID: dec.HasID, keys: dec.TunnelKeys}
	// One network's IDs at a time: what Ensure reads of another network's
	// claim (held, unverified) is never half-way through an Ensure.
	a.ensureMu.Lock()
	defer a.ensureMu.Unlock()
	steps := []func(*idRequest) error{
		a.followCommitted,
		a.dropLearnedClaim,
		a.followOtherWriter,
		a.waitForUnverifiedClaims,
		a.chooseNetworkID,
		a.dropForeignKeys,
		a.ensureTunnelKeys,
		a.markUnverified,
	}
	for _, step := range steps {
		if err := step(q); err != nil {
			a.undo(q)
			return ovnk.NetworkIDs{}, nil, nil, err
		}
	}
	return q.ids, func() { a.undo(q) }, q.ignored, nil
}

// Owner names the network that holds the IDs.
func (c *Clash) Owner() string { return c.owner }

// idRequest carries one Ensure from step to step.
type idRequest struct {
	owner       string
	annotations map[string]string
	wantKeys    int
	// id, hasID and keys are what the annotations record, as the steps
	// still accept them.
	id    int
	hasID bool
	keys  []int
	// ids are the network's IDs; newID and newKeys are what of them this
	// ensure allocated.
	ids     ovnk.NetworkIDs
	newID   bool
	newKeys []int
	ignored []string
}

// undo takes back what q newly allocated, last first, so the network's
// retry gets the same IDs (idalloc.Unallocate): a write that failed on a
// conflict does not skip an ID.
func (a *Allocators) undo(q *idRequest) {
	for i := len(q.newKeys) - 1; i >= 0; i-- {
		a.tunnelKeys.Unallocate(q.owner, q.newKeys[i])
	}
	if q.newID {
		a.networkIDs.Unallocate(q.owner, q.ids.ID)
	}
}

// followCommitted: IDs the annotations record as committed are the
// network's for good. Whatever this process holds for it otherwise was
// never committed; whoever holds them here did not commit them (two
// networks' committed IDs never overlap), and is evicted: its next Ensure
// gives it others. Only a network this process knows committed (a forged
// mark, say) keeps them; chooseNetworkID then ignores the recorded ones.
func (a *Allocators) followCommitted(q *idRequest) error {
	if !ovnk.NetworkIDsCommitted(q.annotations) {
		return nil
	}
	if !slices.Equal(a.networkIDs.Held(q.owner), []int{q.id}) || !slices.Equal(a.tunnelKeys.Held(q.owner), sortedInRange(q.keys, a.tunnelKeys)) {
		a.networkIDs.ReleaseOwner(q.owner)
		a.tunnelKeys.ReleaseOwner(q.owner)
	}
	holders := []string{}
	if o, ok := a.networkIDs.Owner(q.id); ok {
		holders = append(holders, o)
	}
	for _, k := range q.keys {
		if o, ok := a.tunnelKeys.Owner(k); ok {
			holders = append(holders, o)
		}
	}
	for _, o := range holders {
		if o == q.owner || a.committed.Has(o) {
			continue
		}
		a.Release(o)
		a.SetUnverified(o, true)
	}
	a.learned.Set(q.owner, false)
	return nil
}

// dropLearnedClaim: learned claims keep the IDs from other networks; they
// never outrank what the owner's own annotations record.
func (a *Allocators) dropLearnedClaim(q *idRequest) error {
	if !a.learned.Has(q.owner) {
		return nil
	}
	a.learned.Set(q.owner, false)
	if !q.hasID || !slices.Equal(a.networkIDs.Held(q.owner), []int{q.id}) || !slices.Equal(a.tunnelKeys.Held(q.owner), sortedInRange(q.keys, a.tunnelKeys)) {
		a.networkIDs.ReleaseOwner(q.owner)
		a.tunnelKeys.ReleaseOwner(q.owner)
	}
	return nil
}

// followOtherWriter: this process's IDs for the network were never
// committed (its check is still to come, or found a clash, or it read them
// from annotations another writer has since replaced) and another writer
// recorded others: follow those rather than write these back, which made
// two writers take turns publishing their own. Committed IDs still win over
// an edited annotation (chooseNetworkID).
func (a *Allocators) followOtherWriter(q *idRequest) error {
	if held := a.networkIDs.Held(q.owner); q.hasID && len(held) > 0 && held[0] != q.id && !a.committed.Has(q.owner) {
		a.networkIDs.ReleaseOwner(q.owner)
		a.tunnelKeys.ReleaseOwner(q.owner)
	}
	return nil
}

// waitForUnverifiedClaims: another network's claim that this process has
// not yet checked against the apiserver is no reason to give this network
// new IDs: it may be the claim that yields. Wait for the check. (A network
// that waits holds nothing, one that holds something never waits: no two
// wait for each other.)
func (a *Allocators) waitForUnverifiedClaims(q *idRequest) error {
	if !q.hasID || len(a.networkIDs.Held(q.owner)) > 0 {
		return nil
	}
	if o, ok := a.networkIDs.Owner(q.id); ok && o != q.owner && a.IsUnverified(o) {
		return ErrClaimUnverified
	}
	for _, k := range q.keys {
		if o, ok := a.tunnelKeys.Owner(k); ok && o != q.owner && a.IsUnverified(o) {
			return ErrClaimUnverified
		}
	}
	return nil
}

// chooseNetworkID keeps the ID this process holds, else the recorded one,
// else allocates one.
func (a *Allocators) chooseNetworkID(q *idRequest) error {
	switch held := a.networkIDs.Held(q.owner); {
	case len(held) > 0 && (!q.hasID || held[0] != q.id):
		// What this process holds wins over an edited annotation: a
		// network's ID never changes while it exists. The recorded keys
		// went with the recorded ID (the switch key derives from it).
		q.ids.ID = held[0]
		q.keys = nil
	case q.hasID && a.networkIDs.Reserve(q.owner, q.id) == nil:
		q.ids.ID = q.id
	default:
		if q.hasID {
			first, last := a.networkIDs.Range()
			q.ignored = append(q.ignored, fmt.Sprintf("network ID %d (held by an older network, or outside [%d, %d])", q.id, first, last))
			q.keys = nil // the switch key derives from the ID
		}
		id, err := a.networkIDs.Allocate(q.owner)
		if err != nil {
			return err
		}
		q.ids.ID, q.newID = id, true
	}
	return nil
}

// dropForeignKeys ignores recorded tunnel keys that are not the network's:
// a legacy switch key of another network ID, or a key an older network
// holds.
func (a *Allocators) dropForeignKeys(q *idRequest) error {
	if k, ok := legacyKeyMismatch(q.keys, q.ids.ID); ok {
		q.ignored = append(q.ignored, fmt.Sprintf("tunnel keys %v (key %d is not network ID %d's switch key)", q.keys, k, q.ids.ID))
		q.keys = nil
	}
	if k, held := a.heldByOther(q.owner, q.keys); held {
		q.ignored = append(q.ignored, fmt.Sprintf("tunnel keys %v (key %d is held by an older network)", q.keys, k))
		q.keys = nil
	}
	return nil
}

// ensureTunnelKeys reserves the recorded keys in the allocated range and
// allocates the missing ones.
func (a *Allocators) ensureTunnelKeys(q *idRequest) error {
	if q.wantKeys > 0 && len(q.keys) == 0 {
		// OKEP-5094 option 3, as upstream's TunnelKeysAllocator: the first key
		// (the Layer2 switch's) stays the legacy key derived from the network
		// ID; only the transit router's comes from the allocated range.
		// Networks annotated before keep what they recorded.
		if q.keys = a.tunnelKeys.Held(q.owner); len(q.keys) < q.wantKeys {
			legacy, err := ovnk.LegacyTransitSwitchKey(q.ids.ID)
			if err != nil {
				return err
			}
			q.keys = append([]int{legacy}, q.keys...)
		}
	}
	first, last := a.tunnelKeys.Range()
	for _, k := range q.keys {
		if k < first || k > last {
			// Recorded before the range was narrowed: still valid, not ours to manage.
			continue
		}
		if err := a.tunnelKeys.Reserve(q.owner, k); err != nil {
			return err
		}
	}
	for len(q.keys) < q.wantKeys {
		k, err := a.tunnelKeys.Allocate(q.owner)
		if err != nil {
			return err
		}
		q.keys = append(q.keys, k)
		q.newKeys = append(q.newKeys, k)
	}
	q.ids.TunnelKeys = q.keys
	return nil
}

// markUnverified: IDs about to be written are unverified from this moment,
// not from after the write: another worker must not take them as checked
// (see ErrClaimUnverified) while the write is in flight.
func (a *Allocators) markUnverified(q *idRequest) error {
	if a.opts.SingleWriter {
		return nil
	}
	probe := make(map[string]string, len(q.annotations))
	for k, v := range q.annotations {
		probe[k] = v
	}
	if q.ids.Encode(probe) {
		a.SetUnverified(q.owner, true)
		a.committed.Set(q.owner, false)
	}
	return nil
}

// ErrClaimUnverified: a network's recorded IDs are claimed by another
// network whose write this process has not verified yet; retry shortly.
var ErrClaimUnverified = errors.New("the recorded network IDs are also claimed by a network whose IDs are being verified")

// legacyKeyMismatch returns a key of keys in the legacy transit switch key
// range that is not network id's: only id's own switch key may be there.
func legacyKeyMismatch(keys []int, id int) (int, bool) {
	want, err := ovnk.LegacyTransitSwitchKey(id)
	if err != nil {
		return 0, false
	}
	for _, k := range keys {
		if k >= ovnk.BaseTransitSwitchTunnelKey && k < ovnk.FirstAllocatedTunnelKey && k != want {
			return k, true
		}
	}
	return 0, false
}

// heldByOther returns a key of keys another owner holds.
func (a *Allocators) heldByOther(owner string, keys []int) (int, bool) {
	for _, k := range keys {
		if o, ok := a.tunnelKeys.Owner(k); ok && o != owner {
			return k, true
		}
	}
	return 0, false
}

// IsUnverified says that owner's IDs were written but not yet checked.
func (a *Allocators) IsUnverified(owner string) bool { return a.unverified.Has(owner) }

// SetUnverified marks owner's IDs as written and not yet checked (v), or
// checked.
func (a *Allocators) SetUnverified(owner string, v bool) { a.unverified.Set(owner, v) }

// sortedInRange returns the keys inside the allocator's range, sorted.
func sortedInRange(keys []int, alloc *idalloc.IDAllocator) []int {
	first, last := alloc.Range()
	out := make([]int, 0, len(keys))
	for _, k := range keys {
		if k >= first && k <= last {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// Clash is another network found holding some of a network's IDs.
type Clash struct {
	owner string
	ids   ovnk.NetworkIDs
}

// Conflict looks, straight in the apiserver, for another network whose
// annotations hold one of ids. Another process (a second manager without
// leader election, or an old leader) may have written the same ID to a
// different network; whichever check lists after both writes sees it, and a
// writer that finds a conflict yields. Both may yield; a check that finds
// none is followed by a commit conditional on the version it saw (see
// AnnotationNetworkIDsCommitted), so a claim another process committed
// meanwhile is never yielded, and none is published uncommitted.
// The other network and the IDs it records are returned for Yield.
// superseded says owner's own CR no longer records ids (another writer gave
// it other IDs, or it is gone): they must not be published either.
func (a *Allocators) Conflict(ctx context.Context, owner string, ids ovnk.NetworkIDs) (other *Clash, superseded bool, err error) {
	// Both kinds are listed at once: a consistent list may wait for the
	// apiserver's watch cache to catch up (up to its 100 ms progress
	// request period), and the two waits overlap.
	kinds := []string{udnv1.KindUserDefinedNetwork, udnv1.KindClusterUserDefinedNetwork}
	lists := make([]metav1.PartialObjectMetadataList, len(kinds))
	errs := make([]error, len(kinds))
	var wg sync.WaitGroup
	for i, kind := range kinds {
		lists[i].SetGroupVersionKind(udnv1.GroupVersion.WithKind(kind + "List"))
		wg.Go(func() { errs[i] = a.reader.List(ctx, &lists[i]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, false, fmt.Errorf("checking network IDs: %w", err)
	}
	superseded = true
	for i, kind := range kinds {
		for _, o := range lists[i].Items {
			other := Key(kind, o.Namespace, o.Name)
			dec, err := ovnk.DecodeNetworkIDs(o.Annotations)
			id, hasID, keys := dec.ID, dec.HasID, dec.TunnelKeys
			if other == owner {
				if err == nil && hasID && id == ids.ID && slices.Equal(keys, ids.TunnelKeys) {
					superseded = false
				}
				continue
			}
			if err != nil {
				continue
			}
			found := hasID && id == ids.ID
			for _, k := range keys {
				found = found || slices.Contains(ids.TunnelKeys, k)
			}
			if found {
				return &Clash{owner: other, ids: dec}, false, nil
			}
		}
	}
	return nil, superseded, nil
}

// NeedsCommit says the IDs annotations record must be checked (Conflict)
// and committed (Committed) before a NAD may publish them: they are not
// marked committed, and other writers may exist.
func (a *Allocators) NeedsCommit(owner string, annotations map[string]string) bool {
	if a.opts.SingleWriter || ovnk.NetworkIDsCommitted(annotations) {
		a.Committed(owner)
		return false
	}
	return true
}

// Committed records that owner's IDs are committed: checked, marked on its
// CR, final.
func (a *Allocators) Committed(owner string) {
	a.SetUnverified(owner, false)
	a.committed.Set(owner, true)
}

// Superseded gives up owner's IDs in this process only: its CR records
// others now, which its next reconcile reads and checks again.
func (a *Allocators) Superseded(owner string) {
	a.Release(owner)
	a.SetUnverified(owner, true)
}

// Yield gives up owner's IDs once its CR no longer records them, and learns
// the IDs the other network records. Without learning them, this process's
// allocators would count those IDs free: a reconcile of owner from a cache
// that still shows the yielded annotation would reserve them again and,
// the annotation looking unchanged, publish them in owner's NAD beside the
// other network's. For the same reason owner stays unverified: whatever IDs
// it uses next are checked against the apiserver before a NAD shows them.
// A learned claim only keeps the IDs from other owners; when the other
// network itself is reconciled its own annotations decide (Ensure), so a
// claim learned from a write that was itself yielded is dropped then.
func (a *Allocators) Yield(owner string, other *Clash) {
	a.Release(owner)
	a.SetUnverified(owner, true)
	if other == nil || len(a.networkIDs.Held(other.owner))+len(a.tunnelKeys.Held(other.owner)) > 0 {
		// This process has its own view of the other network already.
		return
	}
	learned := false
	if other.ids.HasID && a.networkIDs.Reserve(other.owner, other.ids.ID) == nil {
		learned = true
	}
	first, last := a.tunnelKeys.Range()
	for _, k := range other.ids.TunnelKeys {
		if k >= first && k <= last && a.tunnelKeys.Reserve(other.owner, k) == nil {
			learned = true
		}
	}
	if learned {
		a.learned.Set(other.owner, true)
	}
}

// Release frees everything owner holds.
func (a *Allocators) Release(owner string) {
	a.SetUnverified(owner, false)
	a.learned.Set(owner, false)
	a.committed.Set(owner, false)
	a.networkIDs.ReleaseOwner(owner)
	a.tunnelKeys.ReleaseOwner(owner)
}
