package addresses

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	ipamclaimsv1alpha1 "github.com/k8snetworkplumbingwg/ipamclaims/pkg/crd/ipamclaims/v1alpha1"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/fairqueue"
	"github.com/udnkit/udnkit/internal/phase"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/kubevirt"
	"github.com/udnkit/udnkit/ovnk/nsselect"
	"github.com/udnkit/udnkit/ovnk/podannotation"
	"github.com/udnkit/udnkit/reconcilers/addresses/attach"
	"github.com/udnkit/udnkit/reconcilers/addresses/ipalloc"
	"github.com/udnkit/udnkit/reconcilers/idalloc"
)

// Event reasons besides the ipalloc reasons (IPAddressConflict,
// MACAddressConflict, SubnetExhausted, InvalidRequest).
const (
	ReasonInvalidSelectionElement = attach.ReasonInvalidSelectionElement
	ReasonIPAMClaimNotFound       = "IPAMClaimNotFound"
	ReasonDeprecatedAnnotation    = "DeprecatedAnnotation"
	ReasonInvalidNetwork          = "InvalidNetwork"
	// ReasonIPAMClaimInUse: the pod names an IPAMClaim another VM's pod
	// holds (or one made for another VM); it gets no addresses from it.
	ReasonIPAMClaimInUse = "IPAMClaimInUse"
)

// retryConflicts is how soon a refused pod is tried again: a conflict or an
// exhausted subnet can clear when another pod goes away.
const retryConflicts = 30 * time.Second

// podRecord is what the reconciler remembers of a pod it gave addresses.
type podRecord struct {
	uid     types.UID
	network string
	owner   string
	vm      vmInfo
	vmName  string
}

// netState is one network's allocator.
type netState struct {
	ref  networkRef
	cfg  ipalloc.Config
	pool *ipalloc.Pool
	// tunnels hands out the pods' tunnel_id (one per pod, as upstream's
	// cluster manager does for Layer2 networks).
	tunnels *idalloc.IDAllocator
	// joinSubnets are routed via the gateway in every pod's entry.
	joinSubnets []netip.Prefix
	// vmOrigin is the node where a VM's addresses were first allocated.
	vmOrigin map[string]string
}

// Reconciler allocates pods' addresses on Primary Layer2 networks.
//
// Every pod reconcile is serialised, API calls included. The controller runs
// one worker, and Reconcile holds mu from start to end: across the cache
// reads, the IPAMClaim status write and the pod annotation patch. What a
// reconcile reads from this state therefore still holds when it writes the
// pod: the pod's netState, the claim's holders, the pool's allocation. A
// finer lock (per network, per owner) would have to keep these consistent
// across calls that release it, and each of them is a leak or a conflict
// when it is not:
//   - the pods of one VM share an owner: forgetting one pod releases the
//     owner's addresses only while no other pod holds them, so the holder
//     count and the pool must change together;
//   - network rebuilds a network's state from a list of its pods and claims
//     and replaces the state when the network's spec changes, while pods of
//     that network may be half-way through a reconcile;
//   - a pod's record may name another network than the one it is
//     reconciled for, so a reconcile can touch two networks' states;
//   - an IPAMClaim is checked against every pod of the network that holds
//     its owner (claimInUse).
//
// The cost: pods get their addresses one at a time, at about one API write
// each (two with an IPAMClaim); a burst of pods waits in the queue. The
// queue serves namespaces in turn, so one namespace's burst delays another
// namespace's pod by about one reconcile per namespace with pods waiting.
type Reconciler struct {
	client   client.Client
	recorder events.EventRecorder
	cfg      ovnk.ClusterConfig

	// mu guards networks, pods, holders and seq, and every netState's pool,
	// tunnels and vmOrigin; Reconcile holds it throughout (see above).
	mu       sync.Mutex
	networks map[string]*netState
	pods     map[types.NamespacedName]podRecord
	// holders counts the pods recorded per network and owner (a VM's pods
	// share their owner), so forgetting one pod does not scan every pod.
	holders map[holderKey]int
	// seq orders pods the reconciler met, to break creationTimestamp ties.
	seq uint64
	// fifo gives the controller controller-runtime's default queue instead
	// of the per-namespace fair one (benchmarks compare the two).
	fifo bool
	// attach holds the pools of every other network (Layer3, Secondary
	// Layer2 and Localnet); mu guards it too.
	attach *attach.Allocator
}

// holderKey is a network and an owner of addresses on it.
type holderKey struct{ network, owner string }

// record remembers a pod, keeping its place in the order if already known.
func (r *Reconciler) record(nn types.NamespacedName, rec podRecord) {
	old, ok := r.pods[nn]
	if ok && old.uid == rec.uid {
		rec.vm.seq = old.vm.seq
	} else {
		r.seq++
		rec.vm.seq = r.seq
	}
	if ok {
		r.unhold(old)
	}
	r.pods[nn] = rec
	r.holders[holderKey{rec.network, rec.owner}]++
}

// unhold drops rec from holders and says whether another pod still holds
// its network and owner.
func (r *Reconciler) unhold(rec podRecord) bool {
	k := holderKey{rec.network, rec.owner}
	if r.holders[k]--; r.holders[k] <= 0 {
		delete(r.holders, k)
		return false
	}
	return true
}

func newReconciler(c client.Client, recorder events.EventRecorder, cfg ovnk.ClusterConfig) *Reconciler {
	return &Reconciler{client: c, recorder: recorder, cfg: cfg, attach: attach.New(cfg.ServiceCIDRs),
		networks: map[string]*netState{}, pods: map[types.NamespacedName]podRecord{}, holders: map[holderKey]int{}}
}

// setup watches pods, and UDNs, CUDNs and namespaces to revisit their
// pods, NADs to revisit the pods of their namespace, and nodes whose host
// subnets change to revisit their pods.
func (r *Reconciler) setup(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &udnv1.ClusterUserDefinedNetwork{}, indexCUDNNamespaces, nsselect.IndexKeys); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, indexPodNode, podNode); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("addresses").
		For(&corev1.Pod{}).
		Watches(&udnv1.UserDefinedNetwork{}, handler.EnqueueRequestsFromMapFunc(r.podsOfObjectNamespace)).
		Watches(&udnv1.ClusterUserDefinedNetwork{}, handler.EnqueueRequestsFromMapFunc(r.podsOfCUDN)).
		// A namespace's labels decide which CUDN selects it.
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.podsOfNamespace)).
		Watches(&nadv1.NetworkAttachmentDefinition{}, handler.EnqueueRequestsFromMapFunc(r.podsOfObjectNamespace),
			builder.WithPredicates(predicate.NewPredicateFuncs(ownedNAD))).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.podsOfNode),
			builder.WithPredicates(nodeSubnetsChanged)).
		WithOptions(r.queueOptions())
	if err := r.watchClaims(mgr, b); err != nil {
		return err
	}
	return b.Complete(r)
}

// watchClaims watches IPAMClaims, when the cluster serves them (and starts
// claimReleaser, which frees a deleted claim's addresses), for two
// reasons: their informer then syncs before the first reconcile, where a
// network's first pod used to start it (listing the network's claims) and
// wait a second for it; and a claim's creation revisits the pods of its
// namespace, so a pod that named it before it existed gets its addresses
// then rather than at its next retry.
func (r *Reconciler) watchClaims(mgr ctrl.Manager, b *builder.Builder) error {
	_, err := mgr.GetRESTMapper().RESTMapping(ipamclaimsv1alpha1.SchemeGroupVersion.WithKind("IPAMClaim").GroupKind(), ipamclaimsv1alpha1.SchemeGroupVersion.Version)
	if meta.IsNoMatchError(err) {
		return nil
	}
	if err != nil {
		return err
	}
	b.Watches(&ipamclaimsv1alpha1.IPAMClaim{}, handler.EnqueueRequestsFromMapFunc(r.podsOfObjectNamespace), builder.WithPredicates(claimCreated))
	return claimReleaser{r}.setup(mgr)
}

// claimCreated passes IPAMClaim creations only: the reconciler writes the
// claims' status, and those updates must not revisit every pod.
var claimCreated = predicate.Funcs{
	UpdateFunc:  func(event.UpdateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// queueOptions: one worker, since Reconcile holds mu throughout (see
// Reconciler), over a queue that hands out pods round-robin over their
// namespaces (fairqueue.ByNamespace). With one worker the queue's order is
// the order pods get addresses in, so a FIFO would make a pod wait for every
// pod created before it in any namespace; in turn, it waits for about one
// reconcile per namespace with pods queued.
func (r *Reconciler) queueOptions() controller.Options {
	opts := controller.Options{MaxConcurrentReconciles: 1}
	if !r.fifo {
		opts.NewQueue = fairqueue.ByNamespace
	}
	return opts
}

func (r *Reconciler) podsOfNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	return r.podsIn(ctx, o.GetName())
}

func (r *Reconciler) podsOfObjectNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	return r.podsIn(ctx, o.GetNamespace())
}

func (r *Reconciler) podsOfCUDN(ctx context.Context, o client.Object) []reconcile.Request {
	cudn, ok := o.(*udnv1.ClusterUserDefinedNetwork)
	if !ok {
		return nil
	}
	n := &primaryLayer2{ref: networkRef{Name: cudn.Name}}
	sel, err := metaSelector(cudn)
	if err != nil {
		return nil
	}
	n.selector = sel
	namespaces, err := n.namespaces(ctx, r.client)
	if err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, ns := range namespaces {
		out = append(out, r.podsIn(ctx, ns)...)
	}
	return out
}

func (r *Reconciler) podsIn(ctx context.Context, namespace string) []reconcile.Request {
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.InNamespace(namespace)); err != nil {
		return nil
	}
	out := make([]reconcile.Request, len(pods.Items))
	for i, p := range pods.Items {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)}
	}
	return out
}

// podScope carries one pod reconcile from phase to phase.
type podScope struct {
	phase.Stop
	nn  types.NamespacedName
	pod corev1.Pod
	// touched are the networks whose pools the reconcile may change: the
	// one the pod held and the one it gets.
	touched []string
	// primary is the namespace's Primary network (Layer2 with subnets, or
	// Layer3), if any; net is it when it is Layer2.
	primary *primaryLayer2
	net     *primaryLayer2
	st      *netState
	key     string // the pod's entry in k8s.ovn.org/pod-networks
	in      intent
	claim   *ipamclaimsv1alpha1.IPAMClaim
	alloc   ipalloc.Allocation
	// tunnelID is the pod's tunnel_id.
	tunnelID int
}

// Reconcile gives a scheduled pod its addresses, or a Warning event, one
// phase after another (mu held throughout; see Reconciler).
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &podScope{nn: req.NamespacedName}
	// Only the pool the pod held and the one it gets can change here:
	// publishing every pool after every reconcile cost pods × networks.
	if rec, ok := r.pods[s.nn]; ok {
		s.touched = append(s.touched, rec.network)
	}
	defer func() { r.observePools(s.touched...) }()
	phases := []phase.Func[*podScope]{
		r.getPodOrForget,
		r.skipUnscheduled,
		r.findPrimaryNetwork,
		r.attachNetworks,
		r.findPodNetwork,
		r.readIntent,
		r.keepWrittenAddresses,
		r.warnDeprecatedClaim,
		r.restoreFromClaim,
		r.allocateAddresses,
		r.ensureTunnelID,
		r.writePodNetworks,
	}
	return phase.Run(ctx, s, phases)
}

// getPodOrForget reads the pod; one that is gone, or was recreated, is
// forgotten.
func (r *Reconciler) getPodOrForget(ctx context.Context, s *podScope) (reconcile.Result, error) {
	if err := r.client.Get(ctx, s.nn, &s.pod); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(s.nn)
			return s.Done(reconcile.Result{}, nil)
		}
		return s.Done(reconcile.Result{}, err)
	}
	if rec, ok := r.pods[s.nn]; ok && rec.uid != s.pod.UID {
		r.forget(s.nn)
	}
	return reconcile.Result{}, nil
}

// skipUnscheduled ends the reconcile of a pod that is not scheduled or on
// the host network; a pod that finished gives its addresses back.
func (r *Reconciler) skipUnscheduled(_ context.Context, s *podScope) (reconcile.Result, error) {
	if s.pod.Spec.NodeName == "" || s.pod.Spec.HostNetwork {
		return s.Done(reconcile.Result{}, nil)
	}
	if terminal(&s.pod) {
		r.forget(s.nn)
		return s.Done(reconcile.Result{}, nil)
	}
	return reconcile.Result{}, nil
}

// findPrimaryNetwork finds the Primary network of the pod's namespace
// that udnkit gives addresses on, once for both paths.
func (r *Reconciler) findPrimaryNetwork(ctx context.Context, s *podScope) (reconcile.Result, error) {
	net, err := findSelected(ctx, r.client, s.pod.Namespace, func(spec udnv1.NetworkSpec) bool { return eligible(spec) || isPrimaryLayer3(spec) })
	if err != nil {
		return s.Done(reconcile.Result{}, err)
	}
	s.primary = net
	return reconcile.Result{}, nil
}

// findPodNetwork takes the Primary Layer2 network of the pod's namespace
// and its allocator; a pod of no such network is left alone.
func (r *Reconciler) findPodNetwork(ctx context.Context, s *podScope) (reconcile.Result, error) {
	net := s.primary
	if net == nil || !eligible(net.spec) {
		return s.Done(reconcile.Result{}, nil)
	}
	s.touched = append(s.touched, net.ref.ID())
	st, err := r.network(ctx, net)
	if err != nil {
		r.warn(&s.pod, ReasonInvalidNetwork, err.Error())
		return s.Done(reconcile.Result{}, nil)
	}
	s.net, s.st, s.key = net, st, net.ref.Key(s.pod.Namespace)
	return reconcile.Result{}, nil
}

// readIntent reads what the pod asks for (addresses, MAC, an IPAMClaim).
func (r *Reconciler) readIntent(_ context.Context, s *podScope) (reconcile.Result, error) {
	in, err := r.intentOf(&s.pod, s.net)
	if err != nil {
		r.warn(&s.pod, ReasonInvalidSelectionElement, err.Error())
		return s.Done(reconcile.Result{}, nil)
	}
	s.in = in
	return reconcile.Result{}, nil
}

// keepWrittenAddresses: the annotation is written once; what it says is
// the pod's allocation.
func (r *Reconciler) keepWrittenAddresses(ctx context.Context, s *podScope) (reconcile.Result, error) {
	pod := &s.pod
	existing, err := podNetwork(pod, s.key)
	if err == nil && existing == nil {
		return reconcile.Result{}, nil
	}
	if err == nil {
		err = r.adopt(pod, s.st, s.in, existing)
	}
	if err != nil {
		err = forNamespace(err, pod.Namespace)
		r.warn(pod, ipalloc.ReasonOf(err), fmt.Sprintf("pod annotation %s[%q] cannot be used: %v", ovnk.AnnotationPodNetworks, s.key, err))
		return s.Done(reconcile.Result{}, nil)
	}
	return s.Done(reconcile.Result{}, r.publishOwnerNode(ctx, pod, s.st, s.in))
}

// warnDeprecatedClaim warns about the deprecated IPAMClaim annotation.
func (r *Reconciler) warnDeprecatedClaim(_ context.Context, s *podScope) (reconcile.Result, error) {
	if s.in.deprecatedClaim {
		r.warn(&s.pod, ReasonDeprecatedAnnotation, fmt.Sprintf("annotation %s is deprecated and will be removed in a future release; use ipam-claim-reference in %s",
			ovnk.AnnotationPrimaryUDNIPAMClaim, ovnk.AnnotationDefaultNetwork))
	}
	return reconcile.Result{}, nil
}

// restoreFromClaim reads the pod's IPAMClaim and makes the pool hold what
// its status records for the pod's owner.
func (r *Reconciler) restoreFromClaim(ctx context.Context, s *podScope) (reconcile.Result, error) {
	if s.in.claim == "" {
		return reconcile.Result{}, nil
	}
	pod := &s.pod
	claim := &ipamclaimsv1alpha1.IPAMClaim{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: s.in.claim}, claim); err != nil {
		if apierrors.IsNotFound(err) {
			r.warn(pod, ReasonIPAMClaimNotFound, fmt.Sprintf("IPAMClaim %s/%s referenced by the pod does not exist", pod.Namespace, s.in.claim))
			return s.Done(reconcile.Result{RequeueAfter: retryConflicts}, nil)
		}
		return s.Done(reconcile.Result{}, err)
	}
	if msg := r.claimInUse(s.net.ref.ID(), s.nn, s.in, claim); msg != "" {
		// The claim and its status stay the holder's.
		r.warn(pod, ReasonIPAMClaimInUse, msg)
		return s.Done(reconcile.Result{RequeueAfter: retryConflicts}, nil)
	}
	s.claim = claim
	if err := restoreClaim(s.st.pool, s.in, claim); err != nil {
		return s.Done(r.refuse(ctx, pod, claim, s.net, err))
	}
	return reconcile.Result{}, nil
}

// allocateAddresses gives the pod's owner its addresses, records the pod
// and writes the IPAMClaim's status.
func (r *Reconciler) allocateAddresses(ctx context.Context, s *podScope) (reconcile.Result, error) {
	pod, in, st := &s.pod, s.in, s.st
	_, held := st.pool.Lookup(in.owner)
	alloc, err := st.pool.Allocate(in.owner, in.request)
	if err != nil {
		return s.Done(r.refuse(ctx, pod, s.claim, s.net, err))
	}
	s.alloc = alloc
	r.record(s.nn, podRecord{uid: pod.UID, network: s.net.ref.ID(), owner: in.owner, vm: in.vm, vmName: in.vmName})
	if in.vm.name != "" && !held {
		st.vmOrigin[in.owner] = pod.Spec.NodeName
	}
	if s.claim != nil {
		if err := r.setClaimStatus(ctx, s.claim, pod, alloc, nil); err != nil {
			return s.Done(reconcile.Result{}, err)
		}
	}
	return reconcile.Result{}, nil
}

// ensureTunnelID gives the pod its tunnel_id; a write that failed before
// keeps the one it had.
func (r *Reconciler) ensureTunnelID(ctx context.Context, s *podScope) (reconcile.Result, error) {
	owner := podOwner(&s.pod)
	if held := s.st.tunnels.Held(owner); len(held) > 0 {
		s.tunnelID = held[0]
		return reconcile.Result{}, nil
	}
	id, err := s.st.tunnels.Allocate(owner)
	if err != nil {
		return s.Done(r.refuse(ctx, &s.pod, s.claim, s.net, &ipalloc.Error{Reason: ipalloc.ReasonSubnetExhausted, Message: err.Error()}))
	}
	s.tunnelID = id
	return reconcile.Result{}, nil
}

// writePodNetworks writes the pod's k8s.ovn.org/pod-networks entry (and a
// VM's address owner node) under the pod's resourceVersion.
func (r *Reconciler) writePodNetworks(ctx context.Context, s *podScope) (reconcile.Result, error) {
	pod, st := &s.pod, s.st
	pn, err := podannotation.Layer2PrimaryPodNetwork(s.alloc.IPs, s.alloc.MAC, st.pool.Gateways(), r.cfg.ServiceCIDRs, st.joinSubnets,
		s.tunnelID, encapIP(pod, s.key, s.net.ref.NetworkName()))
	if err != nil {
		return s.Done(reconcile.Result{}, err)
	}
	value, err := podannotation.WithPodNetwork(pod.Annotations, s.key, pn)
	if err != nil {
		return s.Done(reconcile.Result{}, err)
	}
	patch := client.MergeFromWithOptions(pod.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[ovnk.AnnotationPodNetworks] = value
	if s.in.vm.name != "" {
		pod.Annotations[kubevirt.AnnotationAddressOwnerNode] = st.vmOrigin[s.in.owner]
	}
	if err := r.client.Patch(ctx, pod, patch); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(s.nn)
			return reconcile.Result{}, nil
		}
		// The allocation stays with its owner; the retry writes it again.
		// (Upstream's cluster manager releases it and allocates anew, so
		// after losing a race with the default network's writer its pod
		// gets the round-robin allocator's next address instead.)
		return s.Done(reconcile.Result{}, err)
	}
	return reconcile.Result{}, nil
}

// claimInUse says why pod nn may not take addresses from claim, or "": one
// IPAMClaim serves the pods of one VM (a live migration's source and
// target), the VM its owner reference names if any. Admission refuses the
// rest; this catches pods admitted together before either was given
// addresses. It scans the pods only when the claim is held.
func (r *Reconciler) claimInUse(network string, nn types.NamespacedName, in intent, claim *ipamclaimsv1alpha1.IPAMClaim) string {
	ref := claim.Namespace + "/" + claim.Name
	if msg := claimMadeForOther(claim, in.vmName); msg != "" {
		return msg
	}
	if r.holders[holderKey{network, in.owner}] == 0 {
		return ""
	}
	for other, rec := range r.pods {
		if other == nn || rec.network != network || rec.owner != in.owner {
			continue
		}
		if rec.vmName != "" && rec.vmName == in.vmName {
			return ""
		}
		return claimHeldBy(ref, other.Name, rec.vmName, in.vmName)
	}
	return ""
}

// claimMadeForOther says why a pod of VM vm ("" for none) gets no
// addresses from a claim its owner reference gives to another VM, or "".
func claimMadeForOther(claim *ipamclaimsv1alpha1.IPAMClaim, vm string) string {
	if owner := kubevirt.VMOwnerOf(claim.OwnerReferences); owner != "" && owner != vm {
		return fmt.Sprintf("IPAMClaim %s/%s belongs to VM %s; this pod runs %s and gets no addresses from it", claim.Namespace, claim.Name, owner, vmWords(vm))
	}
	return ""
}

// claimHeldBy says that claim ref, held by pod holder of VM holderVM (""
// for none), gives no addresses to a pod of VM vm.
func claimHeldBy(ref, holder, holderVM, vm string) string {
	holder = "pod " + holder
	if holderVM != "" {
		holder += " of VM " + holderVM
	}
	return fmt.Sprintf("IPAMClaim %s is held by %s; only the pods of one VM may share a claim, and this pod runs %s, so it gets no addresses from it",
		ref, holder, vmWords(vm))
}

func vmWords(vm string) string {
	if vm == "" {
		return "no VM"
	}
	return "VM " + vm
}

// refuse reports an allocation failure on the pod and its claim, and tries
// again later: a conflict or an exhausted subnet clears when a pod goes.
func (r *Reconciler) refuse(ctx context.Context, pod *corev1.Pod, claim *ipamclaimsv1alpha1.IPAMClaim, net *primaryLayer2, err error) (reconcile.Result, error) {
	err = forNamespace(err, pod.Namespace)
	r.warn(pod, ipalloc.ReasonOf(err), fmt.Sprintf("failed to allocate addresses on network %s: %v", net.ref.Key(pod.Namespace), err))
	if claim != nil {
		if serr := r.setClaimStatus(ctx, claim, pod, ipalloc.Allocation{}, err); serr != nil {
			return reconcile.Result{}, serr
		}
	}
	if ipalloc.ReasonOf(err) == ipalloc.ReasonInvalidRequest {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{RequeueAfter: retryConflicts}, nil
}

// adopt records an allocation found in the pod's annotation (written before
// a restart, or by this reconciler a moment ago).
func (r *Reconciler) adopt(pod *corev1.Pod, st *netState, in intent, pn *podannotation.PodNetwork) error {
	alloc, tunnelID, err := allocationOf(pn)
	if err != nil {
		return err
	}
	// Addresses first, then the tunnel ID, as rebuild restores them: a
	// copied annotation is reported as the address conflict it is.
	if held, ok := st.pool.Lookup(in.owner); !ok {
		if err := st.pool.Restore(in.owner, alloc); err != nil {
			return err
		}
		if err := st.reserveTunnel(pod, tunnelID); err != nil {
			st.pool.Release(in.owner)
			return err
		}
		if in.vm.name != "" {
			st.vmOrigin[in.owner] = pod.Spec.NodeName
		}
	} else if !sameAddresses(held, alloc) {
		return fmt.Errorf("it holds %s but %s holds %v %s", pn.IPAddresses, in.owner, held.IPs, held.MAC)
	} else if err := st.reserveTunnel(pod, tunnelID); err != nil {
		return err
	}
	r.record(client.ObjectKeyFromObject(pod), podRecord{uid: pod.UID, network: st.ref.ID(), owner: in.owner, vm: in.vm, vmName: in.vmName})
	return nil
}

func sameAddresses(a, b ipalloc.Allocation) bool {
	return reflect.DeepEqual(a.IPs, b.IPs) && a.MAC.String() == b.MAC.String()
}

// forget drops a pod that is gone or finished, freeing addresses only it
// held: a claim keeps its addresses, a VM keeps them while any of its pods
// remains.
//
// The last pod of a claim deleted meanwhile frees the claim's addresses.
func (r *Reconciler) forget(nn types.NamespacedName) {
	for _, owner := range r.attach.Forget(nn) {
		if r.claimGone(owner) {
			r.attach.ReleaseClaim(owner)
		}
	}
	rec, ok := r.pods[nn]
	if !ok {
		return
	}
	delete(r.pods, nn)
	held := r.unhold(rec)
	st := r.networks[rec.network]
	if st == nil {
		return
	}
	st.tunnels.ReleaseOwner(podOwnerOf(nn))
	if _, claim := attach.ClaimOf(rec.owner); claim && (held || !r.claimGone(rec.owner)) {
		return
	}
	if held {
		return // another pod (of the same VM) holds the addresses
	}
	st.pool.Release(rec.owner)
	delete(st.vmOrigin, rec.owner)
}

func (r *Reconciler) warn(pod *corev1.Pod, reason, note string) {
	r.recorder.Eventf(pod, nil, corev1.EventTypeWarning, reason, "AllocateAddresses", "%s", note)
}

func terminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// network returns the network's allocator, building it from the cluster
// (pods' annotations, IPAMClaims) before its first allocation.
func (r *Reconciler) network(ctx context.Context, net *primaryLayer2) (*netState, error) {
	cfg, err := poolConfig(net.spec, r.cfg.PreconfiguredUDNAddresses)
	if err != nil {
		return nil, err
	}
	if st, ok := r.networks[net.ref.ID()]; ok && reflect.DeepEqual(st.cfg, cfg) {
		return st, nil
	}
	pool, err := ipalloc.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("network %s: %w", net.ref.ID(), err)
	}
	namespaces, err := net.namespaces(ctx, r.client)
	if err != nil {
		return nil, err
	}
	var pods []corev1.Pod
	var claims []ipamclaimsv1alpha1.IPAMClaim
	for _, ns := range namespaces {
		var pl corev1.PodList
		if err := r.client.List(ctx, &pl, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		pods = append(pods, pl.Items...)
		var cl ipamclaimsv1alpha1.IPAMClaimList
		if err := r.client.List(ctx, &cl, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		claims = append(claims, cl.Items...)
	}
	st := &netState{ref: net.ref, cfg: cfg, pool: pool, vmOrigin: map[string]string{},
		tunnels:     idalloc.NewIDAllocator("pod tunnel ID", podannotation.FirstPodTunnelID, podannotation.MaxPodTunnelID),
		joinSubnets: r.joinSubnets(net.spec)}
	records, errs := r.rebuild(st, net, pods, claims)
	for _, p := range pods {
		if rec, ok := records[client.ObjectKeyFromObject(&p)]; ok {
			r.record(client.ObjectKeyFromObject(&p), rec)
		}
	}
	for _, err := range errs {
		log.FromContext(ctx).Error(err, "rebuilding the address pool", "network", net.ref.ID())
	}
	r.networks[net.ref.ID()] = st
	return st, nil
}

// rebuild restores the pool from the pods' annotations and then from the
// IPAMClaims no pod holds, so nothing handed out before is handed out again.
func (r *Reconciler) rebuild(st *netState, net *primaryLayer2, pods []corev1.Pod, claims []ipamclaimsv1alpha1.IPAMClaim) (map[types.NamespacedName]podRecord, []error) {
	records := map[types.NamespacedName]podRecord{}
	var errs []error
	// Oldest pod first: of two annotations claiming one address (a forged
	// one, written before the admission policies) the older pod's is
	// restored; the younger pod's is ignored, and its reconcile reports it
	// in an Event.
	sortOldestFirst(pods)
	for i := range pods {
		pod := &pods[i]
		if terminal(pod) || pod.Spec.NodeName == "" {
			continue
		}
		pn, err := podNetwork(pod, net.ref.Key(pod.Namespace))
		if err != nil || pn == nil {
			if err != nil {
				errs = append(errs, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err))
			}
			continue
		}
		in, err := r.intentOf(pod, net)
		if err != nil {
			in = intent{owner: podOwner(pod)}
		}
		alloc, tunnelID, err := allocationOf(pn)
		if err == nil {
			err = st.pool.Restore(in.owner, alloc)
		}
		if err == nil {
			if err = st.reserveTunnel(pod, tunnelID); err != nil {
				st.pool.Release(in.owner)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err))
			continue
		}
		records[client.ObjectKeyFromObject(pod)] = podRecord{uid: pod.UID, network: net.ref.ID(), owner: in.owner, vm: in.vm, vmName: in.vmName}
	}
	st.vmOrigin = vmOrigins(pods, records)
	for i := range claims {
		c := &claims[i]
		if c.Spec.Network != net.ref.NetworkName() || len(c.Status.IPs) == 0 {
			continue
		}
		if err := restoreClaim(st.pool, intent{owner: attach.ClaimOwner(c.Namespace, c.Name)}, c); err != nil {
			errs = append(errs, fmt.Errorf("IPAMClaim %s/%s: %w", c.Namespace, c.Name, err))
		}
	}
	return records, errs
}

// sortOldestFirst orders pods by creation, then namespace and name.
func sortOldestFirst(pods []corev1.Pod) {
	slices.SortStableFunc(pods, func(a, b corev1.Pod) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
}

// restoreClaim gives the claim's owner the claim's recorded IPs, unless it
// already holds addresses. The MAC is the requested one or the derived one.
func restoreClaim(pool *ipalloc.Pool, in intent, claim *ipamclaimsv1alpha1.IPAMClaim) error {
	if _, ok := pool.Lookup(in.owner); ok || len(claim.Status.IPs) == 0 {
		return nil
	}
	a, err := attach.ClaimAllocation(claim.Status.IPs, in.request.MAC)
	if err != nil {
		return err
	}
	return pool.Restore(in.owner, a)
}

// reserveTunnel records a pod's tunnel_id read back from its annotation; a
// pod written before tunnel IDs were allocated (0) gets none here and keeps
// working, one out of range or held by another pod is refused.
func (st *netState) reserveTunnel(pod *corev1.Pod, id int) error {
	if id == 0 {
		return nil
	}
	if err := st.tunnels.Reserve(podOwner(pod), id); err != nil {
		owner, _ := st.tunnels.Owner(id)
		return &ipalloc.Error{Reason: ipalloc.ReasonInvalidRequest, Owner: owner, Message: err.Error()}
	}
	return nil
}

// joinSubnets are the network's join subnets, or the cluster's default UDN
// join subnets of the network's IP families.
func (r *Reconciler) joinSubnets(spec udnv1.NetworkSpec) []netip.Prefix {
	if own, err := ovnk.ParsePrefixes(strings.Join(spec.JoinSubnetCIDRs(), ",")); err == nil && len(own) > 0 {
		return own
	}
	return r.cfg.UDNJoinSubnets
}

// publishOwnerNode writes, on a live-migratable VM's pod, the node that owns
// the VM's addresses (kubevirt.AnnotationAddressOwnerNode), for the dataplane.
func (r *Reconciler) publishOwnerNode(ctx context.Context, pod *corev1.Pod, st *netState, in intent) error {
	origin := st.vmOrigin[in.owner]
	if in.vm.name == "" || origin == "" || pod.Annotations[kubevirt.AnnotationAddressOwnerNode] == origin {
		return nil
	}
	patch := client.MergeFromWithOptions(pod.DeepCopy(), client.MergeFromWithOptimisticLock{})
	pod.Annotations[kubevirt.AnnotationAddressOwnerNode] = origin
	return client.IgnoreNotFound(r.client.Patch(ctx, pod, patch))
}
