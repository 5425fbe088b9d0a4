package reconcilers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/phase"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/netconf"
	"github.com/udnkit/udnkit/ovnk/podannotation"
	"github.com/udnkit/udnkit/reconcilers/idalloc"
	"github.com/udnkit/udnkit/reconcilers/internal/conditions"
	"github.com/udnkit/udnkit/reconcilers/internal/nadindex"
	"github.com/udnkit/udnkit/reconcilers/networkids"
)

const (
	kindUDN  = udnv1.KindUserDefinedNetwork
	kindCUDN = udnv1.KindClusterUserDefinedNetwork

	// indexNADController indexes NADs by their controller's UID.
	indexNADController = ".metadata.controllerUID"

	// nadWorkers bounds the NAD writes one reconcile has in flight (a CUDN
	// may select thousands of namespaces).
	nadWorkers = 8

	// maxPodsInMessage bounds the pods a condition names.
	maxPodsInMessage = 5
	// maxListedInMessage bounds the namespaces and problems a condition
	// lists (a condition message holds at most 32768 bytes).
	maxListedInMessage = 50
	// maxEventNote is the events.k8s.io limit on an event's note.
	maxEventNote = 1024

	// Event reasons.
	eventSyncError = "SyncError"
	// eventTransitSubnetsMoved (Normal): a Primary Layer2 network's subnets
	// overlap the default transit subnets, so it got others (OKEP-5094
	// option 4). Admission does not warn about it (udnctl validate does).
	eventTransitSubnetsMoved = "TransitSubnetsMoved"
	eventNetworkIDsFailed    = "NetworkIDAllocationFailed"
	// eventNetworkIDIgnored: a network's recorded ID or tunnel keys were
	// another (older) network's or out of range; it gets new ones.
	eventNetworkIDIgnored = "NetworkIDIgnored"
	eventForeignNAD       = "ForeignNetworkAttachmentDefinition"
)

func setupIndexes(mgr ctrl.Manager) error {
	indexer := mgr.GetFieldIndexer()
	if err := nadindex.Register(context.Background(), indexer, indexNADController); err != nil {
		return err
	}
	return setupConflictIndexes(indexer)
}

// network is a UDN or CUDN seen through what the two share.
type network struct {
	obj    client.Object
	kind   string
	spec   udnv1.NetworkSpec
	status *udnv1.NetworkStatus
	// conflict, set by resolveConflicts (conflicts.go), overrides the status.
	conflict *conflict
	// uplinks is a CUDN's spec.uplinks.
	uplinks []string
	// conditions are written beside NetworkCreated: the fields udnkit
	// admits (upstream's API) but does not implement.
	conditions []metav1.Condition
}

func (n network) key() string { return networkids.Key(n.kind, n.obj.GetNamespace(), n.obj.GetName()) }

// wantsTunnelKeys: the Layer2 switch and the transit router of a Primary
// Layer2 network get centrally allocated keys (OKEP-5094 option 3), recorded
// in k8s.ovn.org/tunnel-keys in that order: [switch key, transit router key].
func (n network) wantsTunnelKeys() int {
	if n.spec.Topology == udnv1.NetworkTopologyLayer2 && n.spec.IsPrimary() {
		return 2
	}
	return 0
}

type networkReconciler struct {
	client   client.Client
	reader   client.Reader
	cfg      *Config
	ids      *networkids.Allocators
	recorder recorder.EventRecorder
	owner    string
}

func newNetworkReconciler(mgr ctrl.Manager, cfg *Config, ids *networkids.Allocators, name string) *networkReconciler {
	return &networkReconciler{client: mgr.GetClient(), reader: mgr.GetAPIReader(), cfg: cfg, ids: ids, recorder: mgr.GetEventRecorder(name), owner: name}
}

// listed joins up to max items and says how many more there are.
func listed(items []string, sep string, max int) string {
	if len(items) <= max {
		return strings.Join(items, sep)
	}
	return fmt.Sprintf("%s%sand %d more", strings.Join(items[:max], sep), sep, len(items)-max)
}

func (r *networkReconciler) event(obj client.Object, reason, msg string) {
	if len(msg) > maxEventNote {
		msg = msg[:maxEventNote-3] + "..."
	}
	r.recorder.Eventf(obj, nil, corev1.EventTypeWarning, reason, "Reconcile", "%s", msg)
}

// transitSubnets picks a Primary Layer2 network's transit subnets.
func (r *networkReconciler) transitSubnets(spec udnv1.NetworkSpec) ([]netip.Prefix, error) {
	return netconf.TransitSubnetsFor(spec, r.cfg.Cluster)
}

// podsUsing lists (up to all) pods in namespace whose k8s.ovn.org/pod-networks
// annotation has an entry for the NAD namespace/name.
func (r *networkReconciler) podsUsing(ctx context.Context, namespace, name string) ([]string, error) {
	pods := &metav1.PartialObjectMetadataList{}
	pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := r.client.List(ctx, pods, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	key := namespace + "/" + name
	var out []string
	for _, p := range pods.Items {
		if podUsesNAD(p.Annotations, key) {
			out = append(out, p.Namespace+"/"+p.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// podNetworkKeys is the NAD keys of a pod's k8s.ovn.org/pod-networks; a
// malformed annotation names none (the pod then holds no NAD in use).
func podNetworkKeys(annotations map[string]string) []string {
	keys, _ := podannotation.DecodePodNetworkKeys(annotations)
	return keys
}

// podUsesNAD reports whether a pod's k8s.ovn.org/pod-networks holds an
// attachment through the NAD key ("<namespace>/<name>"): its plain entry or
// any indexed one of a NAD the pod names more than once.
func podUsesNAD(annotations map[string]string, key string) bool {
	return len(podannotation.KeysOfNAD(slices.Values(podNetworkKeys(annotations)), key)) > 0
}

func inUseMessage(nad string, pods []string) string {
	shown := pods
	more := ""
	if len(shown) > maxPodsInMessage {
		shown = shown[:maxPodsInMessage]
		more = fmt.Sprintf(" and %d more", len(pods)-maxPodsInMessage)
	}
	return fmt.Sprintf("NetworkAttachmentDefinition %s is in use by pods [%s]%s", nad, strings.Join(shown, ", "), more)
}

// ownedNADs lists the NADs n controls, from the cache.
func (r *networkReconciler) ownedNADs(ctx context.Context, n network) ([]nadv1.NetworkAttachmentDefinition, error) {
	var list nadv1.NetworkAttachmentDefinitionList
	opts := []client.ListOption{client.MatchingFields{indexNADController: string(n.obj.GetUID())}}
	if n.kind == kindUDN {
		opts = append(opts, client.InNamespace(n.obj.GetNamespace()))
	}
	if err := r.client.List(ctx, &list, opts...); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// ownedNADsToRelease reads the NADs n controls so that a NAD created moments
// ago cannot be missed before the CR's finalizer goes. A UDN's one NAD (its
// namespace, its name) comes from the cache when the cache holds it with
// udnkit's finalizer (a NAD is created with it and keeps it until released,
// so the copy names everything its release must undo; a stale copy makes
// the release's preconditions fail and the reconcile retry), and otherwise
// from a GET, which the apiserver serves from etcd at once. A CUDN's NADs
// are listed from the apiserver; a LIST waits until its watch cache has
// caught up (up to its 100 ms progress request period).
func (r *networkReconciler) ownedNADsToRelease(ctx context.Context, n network) ([]nadv1.NetworkAttachmentDefinition, error) {
	var list nadv1.NetworkAttachmentDefinitionList
	if n.kind == kindUDN {
		nad, err := r.udnNAD(ctx, n)
		if err != nil || nad == nil {
			return nil, err
		}
		list.Items = append(list.Items, *nad)
	} else if err := r.reader.List(ctx, &list, client.HasLabels{ovnk.LabelUserDefinedNetwork}); err != nil {
		return nil, err
	}
	var out []nadv1.NetworkAttachmentDefinition
	for _, nad := range list.Items {
		if ref := metav1.GetControllerOf(&nad); ref != nil && ref.UID == n.obj.GetUID() {
			out = append(out, nad)
		}
	}
	return out, nil
}

// udnNAD is the NAD of a UDN's name in its namespace (nil when there is
// none): the cache's copy when it carries udnkit's finalizer, else the
// apiserver's.
func (r *networkReconciler) udnNAD(ctx context.Context, n network) (*nadv1.NetworkAttachmentDefinition, error) {
	var nad nadv1.NetworkAttachmentDefinition
	key := client.ObjectKeyFromObject(n.obj)
	if err := r.client.Get(ctx, key, &nad); err == nil && controllerutil.ContainsFinalizer(&nad, ovnk.FinalizerUserDefinedNetworkProtection) {
		return &nad, nil
	}
	nad = nadv1.NetworkAttachmentDefinition{}
	err := r.reader.Get(ctx, key, &nad)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &nad, nil
}

// releaseNAD deletes an owned NAD and removes udnkit's finalizer from it,
// unless a pod still uses it; then it returns the in-use message.
func (r *networkReconciler) releaseNAD(ctx context.Context, nad *nadv1.NetworkAttachmentDefinition) (string, error) {
	pods, err := r.podsUsing(ctx, nad.Namespace, nad.Name)
	if err != nil {
		return "", err
	}
	if len(pods) > 0 {
		return inUseMessage(nad.Namespace+"/"+nad.Name, pods), nil
	}
	// The deletion and the finalizer's removal are sent at once: a NAD
	// being deleted is gone for the zones' dataplanes (zone.Deleted), so
	// the deletion is not held behind the patch, and either order ends
	// with the NAD gone. Both name the NAD's UID, so neither touches a NAD
	// of the same name made since.
	var deleteErr error
	var wg sync.WaitGroup
	if nad.DeletionTimestamp.IsZero() {
		gone := nad.DeepCopy() // the patch below decodes its reply into nad
		wg.Go(func() {
			deleteErr = r.client.Delete(ctx, gone, client.Preconditions{UID: &gone.UID})
		})
	}
	patchErr := removeFinalizer(ctx, r.client, nad, ovnk.FinalizerUserDefinedNetworkProtection)
	wg.Wait()
	return "", client.IgnoreNotFound(errors.Join(deleteErr, patchErr))
}

// desiredNAD builds the NAD n wants in namespace.
func (r *networkReconciler) desiredNAD(n network, namespace string, ids ovnk.NetworkIDs, transit []netip.Prefix) (*nadv1.NetworkAttachmentDefinition, error) {
	src := netconf.NADSource{Kind: n.kind, Spec: n.spec, Uplinks: n.uplinks, Meta: metav1.ObjectMeta{
		Name: n.obj.GetName(), Namespace: n.obj.GetNamespace(), UID: n.obj.GetUID(),
		Labels: n.obj.GetLabels(), Annotations: n.obj.GetAnnotations()}}
	return netconf.NewNAD(src, namespace, r.cfg.Cluster, transit, ids)
}

// errForeignNAD marks a NAD of the same name that udnkit does not own.
var errForeignNAD = errors.New("foreign NetworkAttachmentDefinition")

// ensureNAD creates or repairs the NAD; it never touches a foreign one.
func (r *networkReconciler) ensureNAD(ctx context.Context, n network, want *nadv1.NetworkAttachmentDefinition) error {
	var cur nadv1.NetworkAttachmentDefinition
	err := r.client.Get(ctx, client.ObjectKeyFromObject(want), &cur)
	if apierrors.IsNotFound(err) {
		if err := r.client.Create(ctx, want); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("NetworkAttachmentDefinition %s/%s appeared while creating it; retrying: %w", want.Namespace, want.Name, err)
			}
			return fmt.Errorf("creating NetworkAttachmentDefinition %s/%s: %w", want.Namespace, want.Name, err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if ref := metav1.GetControllerOf(&cur); ref == nil || ref.UID != n.obj.GetUID() {
		return fmt.Errorf("%w %s/%s already exists and is not managed by this %s; udnkit will not overwrite it", errForeignNAD, cur.Namespace, cur.Name, n.kind)
	}
	if !cur.DeletionTimestamp.IsZero() {
		// Someone deleted our NAD: once no pod uses it, let it go and
		// create it again.
		msg, err := r.releaseNAD(ctx, &cur)
		if err != nil {
			return err
		}
		if msg != "" {
			return fmt.Errorf("NetworkAttachmentDefinition %s/%s is being deleted but cannot be restored yet: %s", cur.Namespace, cur.Name, msg)
		}
		return fmt.Errorf("NetworkAttachmentDefinition %s/%s was deleted; recreating it", cur.Namespace, cur.Name)
	}
	changed := false
	if cur.Spec.Config != want.Spec.Config {
		cur.Spec.Config, changed = want.Spec.Config, true
	}
	if cur.Labels == nil {
		cur.Labels = map[string]string{}
	}
	for k, v := range want.Labels {
		if old, ok := cur.Labels[k]; !ok || old != v {
			cur.Labels[k], changed = v, true
		}
	}
	if cur.Annotations == nil {
		cur.Annotations = map[string]string{}
	}
	for k, v := range want.Annotations {
		if cur.Annotations[k] != v {
			cur.Annotations[k], changed = v, true
		}
	}
	if controllerutil.AddFinalizer(&cur, ovnk.FinalizerUserDefinedNetworkProtection) {
		changed = true
	}
	if !changed {
		return nil
	}
	if err := r.client.Update(ctx, &cur); err != nil {
		return fmt.Errorf("updating NetworkAttachmentDefinition %s/%s: %w", cur.Namespace, cur.Name, err)
	}
	return nil
}

// applyStatus writes the NetworkCreated condition, the network's other
// conditions (n.conditions: the fields udnkit admits but does not implement)
// and transitSubnets with server-side apply; conditions.Changed keeps each
// condition's lastTransitionTime while its status holds.
func (r *networkReconciler) applyStatus(ctx context.Context, n network, status metav1.ConditionStatus, reason, message string, transit []netip.Prefix) error {
	status, reason, message = n.conflict.override(status, reason, message)
	want := append([]metav1.Condition{{Type: udnv1.ConditionNetworkCreated, Status: status, Reason: reason, Message: message}}, n.conditions...)
	conds, changed := conditions.Changed(n.status.Conditions, n.obj.GetGeneration(), want)
	if !changed && sameTransit(n.status.TransitSubnets, transit) {
		return nil
	}
	list := make([]any, 0, len(conds))
	for _, c := range conds {
		list = append(list, map[string]any{
			"type": c.Type, "status": string(c.Status), "reason": c.Reason, "message": c.Message,
			"observedGeneration": c.ObservedGeneration, "lastTransitionTime": c.LastTransitionTime.UTC().Format(time.RFC3339),
		})
	}
	st := map[string]any{"conditions": list}
	if len(transit) > 0 {
		ts := make([]any, 0, len(transit))
		for _, p := range transit {
			ts = append(ts, p.String())
		}
		st["transitSubnets"] = ts
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": st}}
	u.SetAPIVersion(udnv1.GroupVersion.String())
	u.SetKind(n.kind)
	u.SetName(n.obj.GetName())
	u.SetNamespace(n.obj.GetNamespace())
	err := r.client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(r.owner), client.ForceOwnership)
	return client.IgnoreNotFound(err)
}

func sameTransit(have udnv1.DualStackCIDRs, want []netip.Prefix) bool {
	if len(have) != len(want) {
		return false
	}
	for i := range have {
		if string(have[i]) != want[i].String() {
			return false
		}
	}
	return true
}

// networkScope carries one reconcileNetwork pass from phase to phase.
type networkScope struct {
	phase.Stop
	// req is what the reconcile was asked for; the getters fill n and
	// namespaces from it.
	req        ctrl.Request
	n          network
	namespaces []string
	// ids and undo come from allocateIDs; undo gives the IDs back when
	// recordIDs cannot write them.
	ids  ovnk.NetworkIDs
	undo func()
	// transit comes from chooseTransitSubnets.
	transit []netip.Prefix
	// wanted, created and problems come from ensureNADs; problems also
	// from removeUnwantedNADs.
	wanted   map[string]bool
	created  []string
	problems []string
}

// reconcileNetwork drives n towards one NAD in each of namespaces, one
// phase after another.
func (r *networkReconciler) reconcileNetwork(ctx context.Context, n network, namespaces []string) (ctrl.Result, error) {
	return phase.Run(ctx, &networkScope{n: n, namespaces: namespaces}, r.networkPhases())
}

// runNetwork reconciles the network req names: get reads it into the scope
// (and says which namespaces it wants), its namespace conflicts are
// settled, then the network phases follow.
func (r *networkReconciler) runNetwork(ctx context.Context, req ctrl.Request, get ...phase.Func[*networkScope]) (ctrl.Result, error) {
	phases := append(append(get, r.settleConflicts), r.networkPhases()...)
	return phase.Run(ctx, &networkScope{req: req}, phases)
}

// settleConflicts keeps, of the namespaces the network wants, those no
// other network holds (resolveConflicts).
func (r *networkReconciler) settleConflicts(ctx context.Context, s *networkScope) (ctrl.Result, error) {
	namespaces, err := r.resolveConflicts(ctx, &s.n, s.namespaces)
	if err != nil {
		return s.Done(ctrl.Result{}, err)
	}
	s.namespaces = namespaces
	return ctrl.Result{}, nil
}

// networkPhases drive a network whose namespaces are settled towards one NAD
// in each of them.
func (r *networkReconciler) networkPhases() []phase.Func[*networkScope] {
	return []phase.Func[*networkScope]{
		r.finalizeIfDeleted,
		r.checkJoinSubnets,
		r.allocateIDs,
		r.recordIDs,
		r.verifyIDs,
		r.chooseTransitSubnets,
		r.ensureNADs,
		r.removeUnwantedNADs,
		r.reportNetworkStatus,
	}
}

// finalizeIfDeleted hands a network that is being deleted to finalize.
func (r *networkReconciler) finalizeIfDeleted(ctx context.Context, s *networkScope) (ctrl.Result, error) {
	if s.n.obj.GetDeletionTimestamp().IsZero() {
		return ctrl.Result{}, nil
	}
	res, err := r.finalize(ctx, s.n)
	return s.Done(res, err)
}

// allocateIDs picks the network's ID and tunnel keys (keeping those its
// annotations record when they are still its own).
func (r *networkReconciler) allocateIDs(ctx context.Context, s *networkScope) (ctrl.Result, error) {
	n := s.n
	ids, undo, ignored, err := r.ids.Ensure(ctx, n.key(), n.obj.GetAnnotations(), n.wantsTunnelKeys())
	if errors.Is(err, networkids.ErrClaimUnverified) {
		return s.Done(ctrl.Result{RequeueAfter: conflictRetry}, nil)
	}
	if len(ignored) > 0 {
		r.event(n.obj, eventNetworkIDIgnored, fmt.Sprintf("ignored what this network's annotations record: %s; udnkit could not have written it; allocating anew", strings.Join(ignored, "; ")))
	}
	if err != nil {
		msg := fmt.Sprintf("failed to allocate network IDs: %v", err)
		r.event(n.obj, eventNetworkIDsFailed, msg)
		if serr := r.applyStatus(ctx, n, metav1.ConditionFalse, udnv1.ReasonSyncError, msg, nil); serr != nil {
			return s.Done(ctrl.Result{}, serr)
		}
		if errors.Is(err, idalloc.ErrExhausted) {
			// Freed IDs requeue nothing by themselves: retry slowly.
			return s.Done(ctrl.Result{RequeueAfter: 30 * time.Second}, nil)
		}
		return s.Done(ctrl.Result{}, err)
	}
	s.ids, s.undo = ids, undo
	return ctrl.Result{}, nil
}

// recordIDs puts the finalizer and the network IDs onto the CR in one
// optimistic update. When another write came first (the node controller's
// status condition on a new Layer3 network, most often), the CR is read
// again and, if it still records what the IDs were chosen from (the same
// generation and annotations), written once more at once rather than on
// a requeue.
func (r *networkReconciler) recordIDs(ctx context.Context, s *networkScope) (ctrl.Result, error) {
	n := s.n
	seen, generation := maps.Clone(n.obj.GetAnnotations()), n.obj.GetGeneration()
	err := r.writeIDs(ctx, n.obj, s.ids)
	if apierrors.IsConflict(err) && r.readAgainUnchanged(ctx, n.obj, seen, generation) {
		err = r.writeIDs(ctx, n.obj, s.ids)
	}
	if err != nil {
		s.undo()
		if apierrors.IsConflict(err) {
			return s.Done(ctrl.Result{RequeueAfter: conflictRetry}, nil)
		}
		return s.Done(ctrl.Result{}, err)
	}
	return ctrl.Result{}, nil
}

// writeIDs adds the finalizer and ids' annotations to obj and updates it,
// unless it has them already.
func (r *networkReconciler) writeIDs(ctx context.Context, obj client.Object, ids ovnk.NetworkIDs) error {
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	changed := ids.Encode(annotations)
	if !controllerutil.AddFinalizer(obj, ovnk.FinalizerUserDefinedNetworkProtection) && !changed {
		return nil
	}
	obj.SetAnnotations(annotations)
	return r.client.Update(ctx, obj)
}

// readAgainUnchanged reads obj straight from the apiserver (a GET, served
// from etcd) into obj and says whether it still has generation and the
// annotations seen: the write that came first changed neither its spec nor
// what its IDs were chosen from. The apiserver's own version replaces obj
// either way.
func (r *networkReconciler) readAgainUnchanged(ctx context.Context, obj client.Object, seen map[string]string, generation int64) bool {
	// Read into a new object (decoding into obj would merge into its
	// maps, keeping the failed write's additions), then replace obj's
	// contents with it.
	fresh := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(client.Object)
	if err := r.reader.Get(ctx, client.ObjectKeyFromObject(obj), fresh); err != nil {
		return false
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(fresh).Elem())
	return obj.GetGeneration() == generation && obj.GetDeletionTimestamp().IsZero() && maps.Equal(obj.GetAnnotations(), seen)
}

// verifyIDs: IDs not yet committed are checked, before any NAD advertises
// them, against another writer giving them to another network meanwhile,
// and committed (commitIDs) when no other network records them.
func (r *networkReconciler) verifyIDs(ctx context.Context, s *networkScope) (ctrl.Result, error) {
	n := s.n
	if !r.ids.NeedsCommit(n.key(), n.obj.GetAnnotations()) {
		return ctrl.Result{}, nil
	}
	other, superseded, err := r.ids.Conflict(ctx, n.key(), s.ids)
	if err != nil {
		return s.Done(ctrl.Result{}, err)
	}
	if superseded {
		// Another writer changed this network's IDs after this
		// process wrote them: its next reconcile starts from those.
		r.ids.Superseded(n.key())
		return s.Done(ctrl.Result{RequeueAfter: conflictRetry}, nil)
	}
	if other != nil {
		log.FromContext(ctx).Info("network IDs clash; yielding", "network", n.key(), "other", other.Owner())
		res, err := r.yieldIDs(ctx, n, s.ids, other)
		return s.Done(res, err)
	}
	if err := r.commitIDs(ctx, n, s.ids); err != nil {
		if apierrors.IsConflict(err) {
			// The CR changed since the check: check again.
			return s.Done(ctrl.Result{RequeueAfter: conflictRetry}, nil)
		}
		return s.Done(ctrl.Result{}, err)
	}
	return ctrl.Result{}, nil
}

// commitIDs marks ids committed on n's CR, only if the CR is still the
// version the check found alone with them (resourceVersion precondition):
// a commit is ordered by the apiserver against every other writer's write,
// and IDs seen committed are final. Of two networks, one check always
// finds the other's IDs: a claim removed between them would have to be
// uncommitted at its removal, and both removals and commits are
// conditional on the version they saw.
func (r *networkReconciler) commitIDs(ctx context.Context, n network, ids ovnk.NetworkIDs) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": n.obj.GetResourceVersion(),
		"annotations":     map[string]string{ovnk.AnnotationNetworkIDsCommitted: ids.CommitMark()},
	}})
	if err != nil {
		return err
	}
	if err := r.client.Patch(ctx, n.obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return err
	}
	r.ids.Committed(n.key())
	return nil
}

// chooseTransitSubnets picks the network's transit subnets and says so in an
// Event when they are not the cluster's defaults.
func (r *networkReconciler) chooseTransitSubnets(ctx context.Context, s *networkScope) (ctrl.Result, error) {
	n := s.n
	transit, err := r.transitSubnets(n.spec)
	if err != nil {
		msg := fmt.Sprintf("failed to choose transit subnets: %v", err)
		r.event(n.obj, eventSyncError, msg)
		return s.Done(ctrl.Result{}, r.applyStatus(ctx, n, metav1.ConditionFalse, udnv1.ReasonSyncError, msg, nil))
	}
	if !sameTransit(n.status.TransitSubnets, transit) && slices.ContainsFunc(transit, func(p netip.Prefix) bool { return !slices.Contains(r.cfg.Cluster.TransitSubnets, p) }) {
		r.recorder.Eventf(n.obj, nil, corev1.EventTypeNormal, eventTransitSubnetsMoved, "Reconcile",
			"the network's subnets overlap the default transit subnets %s (--%s); it uses %s instead, shown in status.transitSubnets.",
			ovnk.JoinPrefixes(r.cfg.Cluster.TransitSubnets), ovnk.FlagTransitSubnets, ovnk.JoinPrefixes(transit))
	}
	s.transit = transit
	return ctrl.Result{}, nil
}

// ensureNADs creates or repairs the NAD in each wanted namespace, nadWorkers
// at a time; what fails becomes a problem, not an error.
func (r *networkReconciler) ensureNADs(ctx context.Context, s *networkScope) (ctrl.Result, error) {
	n, namespaces := s.n, s.namespaces
	s.wanted = map[string]bool{}
	errs := make([]error, len(namespaces))
	sem := make(chan struct{}, nadWorkers)
	var wg sync.WaitGroup
	for i, ns := range namespaces {
		s.wanted[ns] = true
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			want, err := r.desiredNAD(n, ns, s.ids, s.transit)
			if err == nil {
				err = r.ensureNAD(ctx, n, want)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			if errors.Is(err, errForeignNAD) {
				r.event(n.obj, eventForeignNAD, err.Error())
			}
			s.problems = append(s.problems, err.Error())
			continue
		}
		s.created = append(s.created, namespaces[i])
	}
	return ctrl.Result{}, nil
}

// removeUnwantedNADs releases the owned NADs in namespaces no longer
// wanted; one that a pod still uses becomes a problem.
func (r *networkReconciler) removeUnwantedNADs(ctx context.Context, s *networkScope) (ctrl.Result, error) {
	owned, err := r.ownedNADs(ctx, s.n)
	if err != nil {
		return s.Done(ctrl.Result{}, err)
	}
	for i := range owned {
		if s.wanted[owned[i].Namespace] {
			continue
		}
		msg, err := r.releaseNAD(ctx, &owned[i])
		if err != nil {
			return s.Done(ctrl.Result{}, err)
		}
		if msg != "" {
			s.problems = append(s.problems, "cannot remove "+msg)
		}
	}
	return ctrl.Result{}, nil
}

// reportNetworkStatus writes NetworkCreated: the problems if there are
// any, else where the NADs were created.
func (r *networkReconciler) reportNetworkStatus(ctx context.Context, s *networkScope) (ctrl.Result, error) {
	n := s.n
	if len(s.problems) > 0 {
		sort.Strings(s.problems)
		msg := listed(s.problems, "; ", maxListedInMessage/5)
		log.FromContext(ctx).Info("network not fully synced", "network", n.key(), "problems", msg)
		r.event(n.obj, eventSyncError, msg)
		if err := r.applyStatus(ctx, n, metav1.ConditionFalse, udnv1.ReasonSyncError, msg, s.transit); err != nil {
			return s.Done(ctrl.Result{}, err)
		}
		// Foreign NADs and in-use NADs change through watched objects; the
		// rest is retried with backoff.
		return s.Done(ctrl.Result{RequeueAfter: 10 * time.Second}, nil)
	}
	msg := "NetworkAttachmentDefinition has been created"
	if n.kind == kindCUDN {
		sort.Strings(s.created)
		msg = fmt.Sprintf("NetworkAttachmentDefinition has been created in following namespaces: [%s]", listed(s.created, ", ", maxListedInMessage))
	}
	return s.Done(ctrl.Result{}, r.applyStatus(ctx, n, metav1.ConditionTrue, udnv1.ReasonNADCreated, msg, s.transit))
}

// yieldIDs removes IDs that another network also holds from n's CR, so n
// allocates again; the other network keeps them.
// The Event does not name the other network: the tenant who reads this
// network's events may not be allowed to read it.
func (r *networkReconciler) yieldIDs(ctx context.Context, n network, ids ovnk.NetworkIDs, other *networkids.Clash) (ctrl.Result, error) {
	annotations := n.obj.GetAnnotations()
	delete(annotations, ovnk.AnnotationNetworkID)
	delete(annotations, ovnk.AnnotationTunnelKeys)
	delete(annotations, ovnk.AnnotationNetworkIDsCommitted)
	n.obj.SetAnnotations(annotations)
	if err := r.client.Update(ctx, n.obj); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
		return ctrl.Result{}, err
	}
	r.ids.Yield(n.key(), other)
	r.recorder.Eventf(n.obj, nil, corev1.EventTypeNormal, "NetworkIDConflict", "Reconcile",
		"network ID %d / tunnel keys %v were also given to another network by another writer; allocating again", ids.ID, ids.TunnelKeys)
	return ctrl.Result{RequeueAfter: conflictRetry + time.Duration(rand.Int64N(int64(conflictRetry)))}, nil
}

// finalize removes the NADs once no pod uses them, then the CR's finalizer.
func (r *networkReconciler) finalize(ctx context.Context, n network) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(n.obj, ovnk.FinalizerUserDefinedNetworkProtection) {
		return ctrl.Result{}, nil
	}
	owned, err := r.ownedNADsToRelease(ctx, n)
	if err != nil {
		return ctrl.Result{}, err
	}
	var blocked []string
	for i := range owned {
		msg, err := r.releaseNAD(ctx, &owned[i])
		if err != nil {
			return ctrl.Result{}, err
		}
		if msg != "" {
			blocked = append(blocked, msg)
		}
	}
	if len(blocked) > 0 {
		sort.Strings(blocked)
		msg := "cannot delete the network: " + strings.Join(blocked, "; ")
		return ctrl.Result{}, r.applyStatus(ctx, n, metav1.ConditionFalse, udnv1.ReasonSyncError, msg, nil)
	}
	if err := removeFinalizer(ctx, r.client, n.obj, ovnk.FinalizerUserDefinedNetworkProtection); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	r.ids.Release(n.key())
	// The status says the network is going only to a CR that outlives
	// udnkit's finalizer (another finalizer holds it), as upstream's
	// status write after its finalizer's removal does: a CR whose last
	// finalizer went is gone, and a write to it would only be refused.
	if len(n.obj.GetFinalizers()) == 0 {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.applyStatus(ctx, n, metav1.ConditionFalse, udnv1.ReasonNADDeleted, "NetworkAttachmentDefinition is being deleted", nil)
}

// networksOfPod maps a pod's k8s.ovn.org/pod-networks entries to the
// networks that control those NADs.
func (r *networkReconciler) networksOfPod(ctx context.Context, obj client.Object, kind string) []ctrl.Request {
	var out []ctrl.Request
	seen := map[string]bool{}
	for _, key := range podNetworkKeys(obj.GetAnnotations()) {
		nadKey, ok := podannotation.NADOfKey(key)
		if !ok || seen[nadKey] {
			continue
		}
		seen[nadKey] = true
		ns, name, _ := strings.Cut(nadKey, "/")
		var nad nadv1.NetworkAttachmentDefinition
		if err := r.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &nad); err != nil {
			continue
		}
		if ref := metav1.GetControllerOf(&nad); ref != nil && ref.Kind == kind && ref.APIVersion == udnv1.GroupVersion.String() {
			req := ctrl.Request{NamespacedName: types.NamespacedName{Name: ref.Name}}
			if kind == kindUDN {
				req.Namespace = ns
			}
			out = append(out, req)
		}
	}
	return out
}

// conflictRetry is how soon a reconcile that lost an optimistic-concurrency
// race runs again (after the cache has caught up).
const conflictRetry = 200 * time.Millisecond

// removeFinalizer removes finalizer from obj by a JSON patch that first
// tests that the object is obj (its UID) and that the finalizer is where obj
// has it: unlike an update, the patch does not conflict with a write of
// another part of the object (a status, a deletion), and it fails if the
// object was replaced or its finalizers changed.
func removeFinalizer(ctx context.Context, c client.Client, obj client.Object, finalizer string) error {
	i := slices.Index(obj.GetFinalizers(), finalizer)
	if i < 0 {
		return nil
	}
	path := "/metadata/finalizers/" + strconv.Itoa(i)
	ops := []map[string]string{{"op": "test", "path": path, "value": finalizer}, {"op": "remove", "path": path}}
	if uid := obj.GetUID(); uid != "" {
		ops = append([]map[string]string{{"op": "test", "path": "/metadata/uid", "value": string(uid)}}, ops...)
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	return c.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch))
}
