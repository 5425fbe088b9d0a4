package addresses

import (
	"context"
	"fmt"

	ipamclaimsv1alpha1 "github.com/k8snetworkplumbingwg/ipamclaims/pkg/crd/ipamclaims/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/kubevirt"
	"github.com/udnkit/udnkit/ovnk/podannotation"
	"github.com/udnkit/udnkit/reconcilers/addresses/attach"
	"github.com/udnkit/udnkit/reconcilers/addresses/ipalloc"
)

// isPrimaryLayer3 selects a namespace's Primary Layer3 network.
func isPrimaryLayer3(spec udnv1.NetworkSpec) bool {
	return spec.Topology == udnv1.NetworkTopologyLayer3 && spec.IsPrimary()
}

// attachNetworks gives the pod its entries on its Primary Layer3 network
// and on the Secondary networks it names, restoring the entries it has and
// writing the new ones in one patch. A refused attachment (a Warning event)
// leaves the others alone; the Primary Layer2 phases follow either way.
func (r *Reconciler) attachNetworks(ctx context.Context, s *podScope) (reconcile.Result, error) {
	pod := &s.pod
	atts, err := r.attachmentsOf(ctx, pod, s.primary)
	if err != nil {
		return reconcile.Result{}, err
	}
	var res reconcile.Result
	entries := map[string]podannotation.PodNetwork{}
	for _, att := range atts {
		pn, err := r.attachOne(ctx, pod, att)
		if err != nil {
			err = forNamespace(err, pod.Namespace)
			r.warn(pod, ipalloc.ReasonOf(err), fmt.Sprintf("failed to allocate addresses on network %s: %v", att.Key, err))
			if reason := ipalloc.ReasonOf(err); reason != ipalloc.ReasonInvalidRequest && reason != ReasonInvalidNetwork {
				res.RequeueAfter = retryConflicts
			}
			continue
		}
		if pn != nil {
			entries[att.Key] = *pn
		}
	}
	if len(entries) == 0 {
		return res, nil
	}
	if err := r.writeEntries(ctx, s, entries); err != nil {
		// A stale pod (a conflict) would fail the Primary Layer2 write too.
		return s.Done(res, err)
	}
	return res, nil
}

// attachOne restores the pod's entry on att's network or allocates one (nil:
// the pod has its entry already).
func (r *Reconciler) attachOne(ctx context.Context, pod *corev1.Pod, att attach.Attachment) (*podannotation.PodNetwork, error) {
	nn := client.ObjectKeyFromObject(pod)
	existing, err := podannotation.DecodePodNetwork(pod.Annotations, att.Key)
	if err != nil {
		return nil, &ipalloc.Error{Reason: ipalloc.ReasonInvalidRequest, Message: err.Error()}
	}
	if existing != nil && r.attach.Held(nn, pod.UID, att) {
		return nil, nil
	}
	fresh, err := r.attach.Ensure(att)
	if err != nil {
		return nil, err
	}
	if fresh {
		if err := r.attach.Rebuild(ctx, r.resolver(), att, sortOldestFirst); err != nil {
			return nil, err
		}
	}
	if existing != nil {
		if err := r.attach.Restore(nn, pod.UID, att, existing); err != nil {
			return nil, fmt.Errorf("pod annotation %s cannot be used: %w", podannotation.PodNetworkField(att.Key), err)
		}
		return nil, nil
	}
	if att.Request.Claim != "" {
		return r.allocateForClaim(ctx, pod, att)
	}
	pn, err := r.attach.Allocate(nn, pod.UID, att)
	if err != nil {
		return nil, err
	}
	return &pn, nil
}

// allocateForClaim gives the pod the addresses of the IPAMClaim it names on
// a Secondary network with persistent IPs: those its status.ips records,
// else new ones, which the status then records. As upstream's
// IPAMClaimReconciler.Reconcile (pkg/persistentips/allocator.go) the status
// is written once, when it has no IPs yet: a failure is recorded only then,
// and a claim's recorded IPs are never overwritten.
func (r *Reconciler) allocateForClaim(ctx context.Context, pod *corev1.Pod, att attach.Attachment) (*podannotation.PodNetwork, error) {
	claim := &ipamclaimsv1alpha1.IPAMClaim{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: att.Request.Claim}, claim); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &ipalloc.Error{Reason: ReasonIPAMClaimNotFound, Message: fmt.Sprintf("IPAMClaim %s/%s referenced by the pod does not exist", pod.Namespace, att.Request.Claim)}
		}
		return nil, err
	}
	ref := claim.Namespace + "/" + claim.Name
	if claim.Spec.Network != att.Network.Name {
		return nil, &ipalloc.Error{Reason: ipalloc.ReasonInvalidRequest, Message: fmt.Sprintf("IPAMClaim %s is for network %q, not %q", ref, claim.Spec.Network, att.Network.Name)}
	}
	owner := attach.ClaimOwner(claim.Namespace, claim.Name)
	if msg, err := r.secondaryClaimInUse(ctx, pod, claim, owner); err != nil || msg != "" {
		if err == nil {
			err = &ipalloc.Error{Reason: ReasonIPAMClaimInUse, Message: msg}
		}
		return nil, err
	}
	err := r.attach.RestoreClaim(att, owner, claim.Status.IPs)
	var pn podannotation.PodNetwork
	if err == nil {
		pn, err = r.attach.Allocate(client.ObjectKeyFromObject(pod), pod.UID, att)
	}
	if len(claim.Status.IPs) > 0 {
		return &pn, err
	}
	var alloc ipalloc.Allocation
	if err == nil {
		parsed, perr := pn.Parse()
		if perr != nil {
			return nil, perr
		}
		alloc.IPs = parsed.IPs
	}
	if serr := r.setClaimStatus(ctx, claim, pod, alloc, err); serr != nil {
		return nil, serr
	}
	return &pn, err
}

// writeEntries adds entries to the pod's k8s.ovn.org/pod-networks under its
// resourceVersion, keeping every other network's entry (OVN-Kubernetes'
// "default" one included). A failed write keeps the allocations with the
// pod; the retry writes them again.
func (r *Reconciler) writeEntries(ctx context.Context, s *podScope, entries map[string]podannotation.PodNetwork) error {
	pod := &s.pod
	all, err := podannotation.DecodePodNetworks(pod.Annotations)
	if err != nil {
		return err
	}
	for k, pn := range entries {
		all[k] = pn
	}
	value, err := all.Encode()
	if err != nil {
		return err
	}
	patch := client.MergeFromWithOptions(pod.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[ovnk.AnnotationPodNetworks] = value
	if err := r.client.Patch(ctx, pod, patch); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(s.nn)
			return nil
		}
		return err
	}
	return nil
}

// attachmentsOf lists the pod's attachments besides Primary Layer2: its
// namespace's Primary Layer3 network, and each Secondary network its
// k8s.v1.cni.cncf.io/networks names through a NAD udnkit owns. What cannot
// be attached is reported in a Warning event and left out.
func (r *Reconciler) attachmentsOf(ctx context.Context, pod *corev1.Pod, net *primaryLayer2) ([]attach.Attachment, error) {
	var out []attach.Attachment
	primary, err := r.primaryLayer3Of(ctx, pod, net)
	if err != nil {
		return nil, err
	}
	if primary != nil {
		out = append(out, *primary)
	}
	secondaries, refused, err := r.resolver().Secondaries(ctx, pod)
	if err != nil {
		return nil, err
	}
	for _, f := range refused {
		r.warn(pod, f.Reason, f.Message)
	}
	return append(out, secondaries...), nil
}

func (r *Reconciler) resolver() attach.Resolver {
	return attach.Resolver{Reader: r.client, DefaultJoinSubnets: r.cfg.UDNJoinSubnets, PodNodeIndex: indexPodNode}
}

// primaryLayer3Of is the pod's attachment to its namespace's Primary Layer3
// network, if it has one and udnkit has rendered its NAD there. A MAC the
// default-network NetworkSelectionElement requests is honoured, its IPs
// are not (upstream's overrideActiveNSEWithDefaultNSE keeps node-local IPAM
// on Layer3).
func (r *Reconciler) primaryLayer3Of(ctx context.Context, pod *corev1.Pod, net *primaryLayer2) (*attach.Attachment, error) {
	if net == nil || !isPrimaryLayer3(net.spec) {
		return nil, nil
	}
	att, err := r.resolver().Through(ctx, pod, client.ObjectKey{Namespace: pod.Namespace, Name: net.ref.Name})
	if err != nil || att == nil {
		return nil, err
	}
	if r.cfg.PreconfiguredUDNAddresses {
		if v, ok := pod.Annotations[ovnk.AnnotationDefaultNetwork]; ok {
			e, _, err := podannotation.DecodeDefaultNetworkSelection(v, pod.Namespace)
			if err != nil {
				r.warn(pod, ReasonInvalidSelectionElement, fmt.Sprintf("annotation %s: %v", ovnk.AnnotationDefaultNetwork, err))
				return nil, nil
			}
			att.Request.MAC = e.MacRequest
		}
	}
	return att, nil
}

// indexPodNode indexes pods by spec.nodeName: a node's new host subnets
// revisit its pods, and a Layer3 pool is rebuilt from its node's pods.
const indexPodNode = "addresses.pod.nodeName"

func podNode(o client.Object) []string {
	if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName != "" {
		return []string{p.Spec.NodeName}
	}
	return nil
}

func (r *Reconciler) podsOfNode(ctx context.Context, o client.Object) []reconcile.Request {
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.MatchingFields{indexPodNode: o.GetName()}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, len(pods.Items))
	for i := range pods.Items {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pods.Items[i])}
	}
	return out
}

// ownedNAD: only NADs with udnkit's label can attach pods here.
func ownedNAD(o client.Object) bool {
	_, ok := o.GetLabels()[ovnk.LabelUserDefinedNetwork]
	return ok
}

// nodeSubnetsChanged passes node creations and the updates that change
// k8s.ovn.org/node-subnets, not the status heartbeats.
var nodeSubnetsChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetAnnotations()[ovnk.AnnotationNodeSubnets] != e.ObjectNew.GetAnnotations()[ovnk.AnnotationNodeSubnets]
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// secondaryClaimInUse says why the pod may not take addresses from claim,
// or "": as on Primary networks (claimInUse), one IPAMClaim serves the pods
// of one VM, the VM its owner reference names if any.
func (r *Reconciler) secondaryClaimInUse(ctx context.Context, pod *corev1.Pod, claim *ipamclaimsv1alpha1.IPAMClaim, owner string) (string, error) {
	ref, vm := claim.Namespace+"/"+claim.Name, kubevirt.VMNameOf(pod)
	if msg := claimMadeForOther(claim, vm); msg != "" {
		return msg, nil
	}
	for _, nn := range r.attach.ClaimHolders(owner, client.ObjectKeyFromObject(pod)) {
		var holder corev1.Pod
		if err := r.client.Get(ctx, nn, &holder); err != nil {
			if apierrors.IsNotFound(err) {
				continue // its deletion forgets it
			}
			return "", err
		}
		if hvm := kubevirt.VMNameOf(&holder); hvm == "" || hvm != vm {
			return claimHeldBy(ref, nn.Name, hvm, vm), nil
		}
	}
	return "", nil
}
