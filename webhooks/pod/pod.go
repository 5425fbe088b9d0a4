// Package pod holds the pod webhooks: the validator of the
// v1.multus-cni.io/default-network annotation's NetworkSelectionElement
// (requested IPs and MAC against the namespace's primary network and the
// pods holding them, OKEP-5233; IPAMClaim references) and the defaulter of
// the deprecated k8s.ovn.org/primary-udn-ipamclaim annotation.
package pod

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	ipamclaimsv1alpha1 "github.com/k8snetworkplumbingwg/ipamclaims/pkg/crd/ipamclaims/v1alpha1"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
	"github.com/udnkit/udnkit/webhooks/admit"
	"github.com/udnkit/udnkit/webhooks/network"
)

// The pod webhooks only see namespaces that can have a primary user defined
// network (the label, which cannot be added later) and never the system
// namespaces, so pods elsewhere never wait on udnkit; and there only the
// pods they act on (matchConditions): the validating one a new pod with the
// v1.multus-cni.io/default-network annotation or an update that changes it,
// the mutating one a new pod with k8s.ovn.org/primary-udn-ipamclaim. Every
// other pod create or update costs the apiserver no webhook call.
// +kubebuilder:webhook:path=/validate--v1-pod,mutating=false,failurePolicy=fail,sideEffects=None,groups="",resources=pods,verbs=create;update,versions=v1,name=pods.udnkit.k8s.ovn.org,admissionReviewVersions=v1,timeoutSeconds=5,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"k8s.ovn.org/primary-user-defined-network","operator":"Exists"},{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","kube-public","kube-node-lease","ovn-kubernetes"]}]},"matchConditions":[{"name":"default-network-annotation","expression":"request.operation == 'CREATE' ? has(object.metadata.annotations) \u0026\u0026 'v1.multus-cni.io/default-network' in object.metadata.annotations : (has(object.metadata.annotations) \u0026\u0026 'v1.multus-cni.io/default-network' in object.metadata.annotations ? [object.metadata.annotations['v1.multus-cni.io/default-network']] : []) != (has(oldObject.metadata.annotations) \u0026\u0026 'v1.multus-cni.io/default-network' in oldObject.metadata.annotations ? [oldObject.metadata.annotations['v1.multus-cni.io/default-network']] : [])"}]}`
// +kubebuilder:webhook:path=/mutate--v1-pod,mutating=true,failurePolicy=fail,sideEffects=None,groups="",resources=pods,verbs=create,versions=v1,name=pods-defaulting.udnkit.k8s.ovn.org,admissionReviewVersions=v1,timeoutSeconds=5,reinvocationPolicy=Never,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"k8s.ovn.org/primary-user-defined-network","operator":"Exists"},{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","kube-public","kube-node-lease","ovn-kubernetes"]}]},"matchConditions":[{"name":"ipamclaim-annotation","expression":"has(object.metadata.annotations) \u0026\u0026 'k8s.ovn.org/primary-udn-ipamclaim' in object.metadata.annotations"}]}`
// +kubebuilder:rbac:groups=k8s.cni.cncf.io,resources=ipamclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch

// defaultNetworkPath is the field path of the default-network annotation.
var defaultNetworkPath = field.NewPath("metadata", "annotations").Key(ovnk.AnnotationDefaultNetwork)

// Validator validates predefined addresses (OKEP-5233) in the
// v1.multus-cni.io/default-network annotation of pods whose namespace has a
// Primary Layer2 network, and keeps the annotation unchanged after create.
// With Config.PreconfiguredUDNAddresses off it admits every pod.
type Validator struct {
	// Client reads namespaces, UDNs, CUDNs and IPAMClaims: the manager's
	// cache (see ClusterUserDefinedNetworkValidator).
	Client client.Reader
	// APIReader, when set, confirms against the apiserver what the cache
	// does not hold yet (a namespace or IPAMClaim created moments ago).
	APIReader client.Reader
	Config    ovnk.ClusterConfig
}

var _ admission.Validator[*corev1.Pod] = &Validator{}

// MutatePath is where Defaulter is served (the generated
// MutatingWebhookConfiguration points there).
const MutatePath = "/mutate--v1-pod"

// ValidateCreate implements admission.Validator.
func (v *Validator) ValidateCreate(ctx context.Context, pod *corev1.Pod) (admission.Warnings, error) {
	value, ok := pod.Annotations[ovnk.AnnotationDefaultNetwork]
	if !v.Config.PreconfiguredUDNAddresses || !ok {
		return nil, nil
	}
	spec, ref, err := network.CachedPrimaryNetwork(ctx, v.Client, v.APIReader, pod.Namespace)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if spec == nil || spec.Layer2 == nil {
		return nil, nil // the annotation keeps its usual Multus meaning
	}
	nse, warnings, err := podannotation.DecodeDefaultNetworkSelection(value, pod.Namespace)
	if err != nil {
		return nil, invalidPod(pod, field.ErrorList{field.Invalid(defaultNetworkPath, value,
			fmt.Sprintf("must be a NetworkSelectionElement: %v.", err))})
	}
	errs := ValidateNetworkSelection(defaultNetworkPath, nse, spec.Layer2)
	var conflict error
	if ref := nse.IPAMClaimReference; ref != "" {
		refPath := defaultNetworkPath.Child("ipam-claim-reference")
		if refErrs := ValidateClaimReference(refPath, ref); len(refErrs) > 0 {
			errs = append(errs, refErrs...)
		} else {
			claim, err := v.claim(ctx, pod.Namespace, ref)
			switch {
			case apierrors.IsNotFound(err):
				errs = append(errs, field.Invalid(refPath, ref, fmt.Sprintf(
					"IPAMClaim %s/%s does not exist; create it before the pod.", pod.Namespace, ref)))
			case err != nil:
				return nil, apierrors.NewInternalError(err)
			default:
				conflict = claimConflict(ctx, v.APIReader, pod, claim)
			}
		}
	}
	if len(errs) == 0 {
		held, err := v.addressHolders(ctx, pod, nse, ref)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		errs = held
	}
	if len(errs) > 0 {
		return nil, invalidPod(pod, errs)
	}
	if conflict != nil {
		return nil, conflict
	}
	admit.RecordDecision("Pod", nil)
	return append(warnings, NetworkSelectionWarnings(defaultNetworkPath, nse)...), nil
}

// claim reads an IPAMClaim from the cache, or from the apiserver when the
// cache does not hold it (created moments ago, perhaps).
func (v *Validator) claim(ctx context.Context, namespace, name string) (*ipamclaimsv1alpha1.IPAMClaim, error) {
	return readClaim(ctx, v.Client, v.APIReader, namespace, name)
}

func readClaim(ctx context.Context, cached, live client.Reader, namespace, name string) (*ipamclaimsv1alpha1.IPAMClaim, error) {
	var claim ipamclaimsv1alpha1.IPAMClaim
	key := client.ObjectKey{Namespace: namespace, Name: name}
	err := cached.Get(ctx, key, &claim)
	if apierrors.IsNotFound(err) && live != nil {
		err = live.Get(ctx, key, &claim)
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading IPAMClaim %s/%s: %w", namespace, name, err)
	}
	return &claim, err
}

// ValidateUpdate implements admission.Validator: the default-network
// annotation cannot be added, removed or changed (the same rule as the
// ValidatingAdmissionPolicy, for clusters without one).
func (v *Validator) ValidateUpdate(_ context.Context, old, pod *corev1.Pod) (admission.Warnings, error) {
	if !v.Config.PreconfiguredUDNAddresses {
		return nil, nil
	}
	if errs := ValidateDefaultNetworkUnchanged(old.Annotations, pod.Annotations); len(errs) > 0 {
		return nil, invalidPod(pod, errs)
	}
	return nil, nil
}

// ValidateDelete implements admission.Validator; deletes are always allowed.
func (v *Validator) ValidateDelete(context.Context, *corev1.Pod) (admission.Warnings, error) {
	return nil, nil
}

// ValidateDefaultNetworkUnchanged refuses adding, removing or changing the
// v1.multus-cni.io/default-network annotation between old and cur.
func ValidateDefaultNetworkUnchanged(old, cur map[string]string) field.ErrorList {
	o, hadOld := old[ovnk.AnnotationDefaultNetwork]
	n, hasNew := cur[ovnk.AnnotationDefaultNetwork]
	if hadOld == hasNew && o == n {
		return nil
	}
	return field.ErrorList{field.Forbidden(defaultNetworkPath, fmt.Sprintf(
		"the %s annotation cannot be added, removed or changed after the pod was created.", ovnk.AnnotationDefaultNetwork))}
}

func invalidPod(pod *corev1.Pod, errs field.ErrorList) error {
	admit.RecordDecision("Pod", errs)
	name := pod.Name
	if name == "" {
		name = pod.GenerateName
	}
	return apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Pod").GroupKind(), name, admit.Bounded(errs))
}

// Defaulter handles the deprecated k8s.ovn.org/primary-udn-ipamclaim
// annotation of new pods in namespaces with a Primary Layer2 network: it
// refuses a value that is no IPAMClaim name (422 naming the annotation)
// and, where the annotation is in use, a claim another VM's pods hold (409,
// see Validator); with OKEP-5233 on it rewrites the annotation into the
// equivalent v1.multus-cni.io/default-network NetworkSelectionElement, with
// a deprecation warning (see MigrateIPAMClaimAnnotation), which
// Validator then checks. It is a plain admission.Handler because typed
// defaulters cannot return warnings.
type Defaulter struct {
	// Client and APIReader: see Validator.
	Client    client.Reader
	APIReader client.Reader
	Config    ovnk.ClusterConfig
	Decoder   admission.Decoder
}

// claimAnnotationPath is the field path of the deprecated claim annotation.
var claimAnnotationPath = field.NewPath("metadata", "annotations").Key(ovnk.AnnotationPrimaryUDNIPAMClaim)

// Handle implements admission.Handler.
func (d *Defaulter) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("")
	}
	var pod corev1.Pod
	if err := d.Decoder.Decode(req, &pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	claim, ok := pod.Annotations[ovnk.AnnotationPrimaryUDNIPAMClaim]
	if !ok {
		return admission.Allowed("")
	}
	if pod.Namespace == "" {
		pod.Namespace = req.Namespace
	}
	spec, err := network.CachedPrimaryNetworkOf(ctx, d.Client, d.APIReader, pod.Namespace)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if spec == nil || spec.Layer2 == nil {
		return admission.Allowed("")
	}
	// Where the annotation is in use: as the NetworkSelectionElement it
	// becomes (OKEP-5233 on, no element set), or read by the address
	// reconciler on a Persistent network (OKEP-5233 off).
	_, hasNSE := pod.Annotations[ovnk.AnnotationDefaultNetwork]
	persistent := spec.Layer2.IPAM != nil && spec.Layer2.IPAM.Lifecycle == udnv1.IPAMLifecyclePersistent
	feature := d.Config.PreconfiguredUDNAddresses
	if feature && hasNSE || !feature && !persistent {
		return d.migrate(pod.Annotations)
	}
	if errs := ValidateClaimReference(claimAnnotationPath, claim); len(errs) > 0 {
		return admit.Denied(invalidPod(&pod, errs))
	}
	if !feature {
		c, err := readClaim(ctx, d.Client, d.APIReader, pod.Namespace, claim)
		switch {
		case apierrors.IsNotFound(err):
			// The reconciler reports it on the pod and waits for it.
		case err != nil:
			return admission.Errored(http.StatusInternalServerError, err)
		default:
			if err := claimConflict(ctx, d.APIReader, &pod, c); err != nil {
				return admit.Denied(err)
			}
		}
		return admission.Allowed("")
	}
	return d.migrate(pod.Annotations)
}

// migrate answers with MigrateIPAMClaimAnnotation's patch and warnings
// (OKEP-5233 on), or admits the pod unchanged.
func (d *Defaulter) migrate(podAnnotations map[string]string) admission.Response {
	if !d.Config.PreconfiguredUDNAddresses {
		return admission.Allowed("")
	}
	annotations, warnings := MigrateIPAMClaimAnnotation(podAnnotations)
	if annotations == nil {
		return admission.Allowed("").WithWarnings(warnings...)
	}
	// One JSON patch operation that adds the annotation (the map exists: it
	// holds the old one), rather than a diff of the re-encoded pod.
	return admission.Patched("", jsonpatch.JsonPatchOperation{
		Operation: "add",
		Path:      "/metadata/annotations/" + escapeJSONPointer(ovnk.AnnotationDefaultNetwork),
		Value:     annotations[ovnk.AnnotationDefaultNetwork],
	}).WithWarnings(warnings...)
}

// escapeJSONPointer escapes one JSON pointer token (RFC 6901).
func escapeJSONPointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
