package addresses

import (
	"context"
	"fmt"

	ipamclaimsv1alpha1 "github.com/k8snetworkplumbingwg/ipamclaims/pkg/crd/ipamclaims/v1alpha1"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/kubevirt"
	"github.com/udnkit/udnkit/ovnk/podannotation"
	"github.com/udnkit/udnkit/reconcilers/addresses/attach"
	"github.com/udnkit/udnkit/reconcilers/addresses/ipalloc"
)

// intent is who owns a pod's addresses and what it asks for.
type intent struct {
	// owner is "claim/<ns>/<claim>", "vm/<ns>/<vm>" or "pod/<ns>/<pod>".
	owner string
	claim string
	// deprecatedClaim says the claim came from k8s.ovn.org/primary-udn-ipamclaim.
	deprecatedClaim bool
	vm              vmInfo
	// vmName is the VM the pod runs (kubevirt.VMNameOf), migratable or not: the
	// pods of one VM may share a claim.
	vmName  string
	request ipalloc.Request
}

func podOwner(pod *corev1.Pod) string { return podOwnerOf(client.ObjectKeyFromObject(pod)) }

func podOwnerOf(nn types.NamespacedName) string { return "pod/" + nn.Namespace + "/" + nn.Name }

// intentOf reads the pod's NetworkSelectionElement (when the feature is on)
// or the deprecated claim annotation (Persistent networks), and its VM.
func (r *Reconciler) intentOf(pod *corev1.Pod, net *primaryLayer2) (intent, error) {
	in := intent{owner: podOwner(pod), vm: vmOf(pod), vmName: kubevirt.VMNameOf(pod)}
	var nse bool
	if r.cfg.PreconfiguredUDNAddresses {
		var e *nadv1.NetworkSelectionElement
		if v, ok := pod.Annotations[ovnk.AnnotationDefaultNetwork]; ok {
			var err error
			if e, _, err = podannotation.DecodeDefaultNetworkSelection(v, pod.Namespace); err != nil {
				return in, fmt.Errorf("annotation %s: %w", ovnk.AnnotationDefaultNetwork, err)
			}
		}
		if e != nil {
			nse = true
			in.request = ipalloc.Request{IPs: e.IPRequest, MAC: e.MacRequest}
			in.claim = e.IPAMClaimReference
		}
	}
	if l2 := net.spec.Layer2; !nse && l2.IPAM != nil && l2.IPAM.Lifecycle == udnv1.IPAMLifecyclePersistent {
		in.claim = pod.Annotations[ovnk.AnnotationPrimaryUDNIPAMClaim]
		in.deprecatedClaim = in.claim != ""
	}
	switch {
	case in.claim != "":
		in.owner = attach.ClaimOwner(pod.Namespace, in.claim)
	case in.vm.name != "":
		in.owner = "vm/" + pod.Namespace + "/" + in.vm.name
	}
	return in, nil
}

func metaSelector(cudn *udnv1.ClusterUserDefinedNetwork) (labels.Selector, error) {
	return metav1.LabelSelectorAsSelector(&cudn.Spec.NamespaceSelector)
}

// setClaimStatus records the allocation (or the failure) in the claim's
// status: ips, ownerPod and the IPsAllocated condition. It is written once,
// while the claim holds no addresses: the first pod that gets them stays its
// ownerPod across a live migration, and a pod refused the claim later leaves
// the holder's status alone (as OVN-Kubernetes' IPAMClaim reconciler).
func (r *Reconciler) setClaimStatus(ctx context.Context, claim *ipamclaimsv1alpha1.IPAMClaim, pod *corev1.Pod, alloc ipalloc.Allocation, allocErr error) error {
	if len(claim.Status.IPs) > 0 {
		return nil
	}
	patch := client.MergeFrom(claim.DeepCopy())
	cond := metav1.Condition{Type: ovnk.ConditionIPsAllocated, ObservedGeneration: claim.Generation}
	if allocErr == nil {
		claim.Status.IPs = claim.Status.IPs[:0]
		for _, ip := range alloc.IPs {
			claim.Status.IPs = append(claim.Status.IPs, ip.String())
		}
		claim.Status.OwnerPod = &ipamclaimsv1alpha1.OwnerPod{Name: pod.Name}
		cond.Status, cond.Reason = metav1.ConditionTrue, ovnk.ReasonSuccessfulAllocation
		cond.Message = fmt.Sprintf("allocated %v to pod %s", claim.Status.IPs, pod.Name)
	} else {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, claimReason(allocErr), allocErr.Error()
	}
	if claim.Status.IPs == nil {
		claim.Status.IPs = []string{}
	}
	meta.SetStatusCondition(&claim.Status.Conditions, cond)
	return r.client.Status().Patch(ctx, claim, patch)
}

// claimReason maps an allocation failure to the claim condition reasons.
func claimReason(err error) string {
	switch reason := ipalloc.ReasonOf(err); reason {
	case ipalloc.ReasonSubnetExhausted, ipalloc.ReasonIPAddressConflict, ipalloc.ReasonMACAddressConflict:
		return reason
	}
	return ipalloc.ReasonInternalError
}
