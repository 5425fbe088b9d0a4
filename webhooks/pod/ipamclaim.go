package pod

import (
	"context"
	"fmt"
	"strings"

	ipamclaimsv1alpha1 "github.com/k8snetworkplumbingwg/ipamclaims/pkg/crd/ipamclaims/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/ovnk/kubevirt"
	"github.com/udnkit/udnkit/webhooks/admit"
)

// ValidateClaimReference checks an IPAMClaim reference (the
// ipam-claim-reference of a NetworkSelectionElement or the deprecated
// k8s.ovn.org/primary-udn-ipamclaim annotation): the name of an IPAMClaim
// in the pod's own namespace. path is the field that holds it.
func ValidateClaimReference(path *field.Path, ref string) field.ErrorList {
	msgs := validation.IsDNS1123Subdomain(ref)
	if len(msgs) == 0 {
		return nil
	}
	hint := ""
	if strings.Contains(ref, "/") {
		hint = " without a namespace (the claim must be in the pod's namespace)"
	}
	return field.ErrorList{field.Invalid(path, ref, fmt.Sprintf(
		"must be the name of an IPAMClaim in the pod's namespace, such as my-claim,%s: %s.", hint, strings.Join(msgs, "; ")))}
}

// claimConflict refuses (409 Conflict) a new pod naming claim when the
// claim serves another VM's pods: one IPAMClaim serves the pods of one VM,
// its source and target pods during a live migration (the same VM name,
// kubevirt.VMNameOf). The claim belongs to the VM its owner reference names,
// and while the pod in its status.ownerPod exists, to that pod's VM (or to
// that pod alone, when it runs no VM). live reads the owner pod (the
// webhooks cache no pods); a pod that is gone holds nothing.
func claimConflict(ctx context.Context, live client.Reader, pod *corev1.Pod, claim *ipamclaimsv1alpha1.IPAMClaim) error {
	vm := kubevirt.VMNameOf(pod)
	ref := claim.Namespace + "/" + claim.Name
	if owner := kubevirt.VMOwnerOf(claim.OwnerReferences); owner != "" && owner != vm {
		return podConflict(pod, fmt.Sprintf("IPAMClaim %s belongs to VM %s; only that VM's pods may use it, and this pod runs %s.", ref, owner, vmWords(vm)))
	}
	if claim.Status.OwnerPod == nil || claim.Status.OwnerPod.Name == "" || claim.Status.OwnerPod.Name == pod.Name || live == nil {
		return nil
	}
	holder := &metav1.PartialObjectMetadata{}
	holder.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	err := live.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: claim.Status.OwnerPod.Name}, holder)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return apierrors.NewInternalError(fmt.Errorf("reading pod %s/%s, the owner of IPAMClaim %s: %w", claim.Namespace, claim.Status.OwnerPod.Name, ref, err))
	}
	holderVM := kubevirt.VMNameOf(&corev1.Pod{ObjectMeta: holder.ObjectMeta})
	if holderVM != "" && holderVM == vm {
		return nil // the VM's other pod: a live migration's source or target
	}
	owner := "pod " + holder.Name
	if holderVM != "" {
		owner += " of VM " + holderVM
	}
	return podConflict(pod, fmt.Sprintf("IPAMClaim %s is held by %s (its status.ownerPod); only the pods of one VM may share a claim, and this pod runs %s.", ref, owner, vmWords(vm)))
}

func vmWords(vm string) string {
	if vm == "" {
		return "no VM"
	}
	return "VM " + vm
}

func podConflict(pod *corev1.Pod, msg string) error {
	admit.RecordDenial("Pod", reasonClaimInUse)
	name := pod.Name
	if name == "" {
		name = pod.GenerateName
	}
	return apierrors.NewConflict(corev1.Resource("pods"), name, fmt.Errorf("%s", msg))
}

// reasonClaimInUse counts claim conflicts in udnkit_admission_decisions_total.
const reasonClaimInUse = "IPAMClaimInUse"
