package webhooks

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

// defaultNetworkPath is the field path of the default-network annotation.
var defaultNetworkPath = field.NewPath("metadata", "annotations").Key(ovnk.AnnotationDefaultNetwork)

// PodValidator validates predefined addresses (OKEP-5233) in the
// v1.multus-cni.io/default-network annotation of pods whose namespace has a
// Primary Layer2 network, and keeps the annotation unchanged after create.
// With Config.PreconfiguredUDNAddresses off it admits every pod.
type PodValidator struct {
	// Client reads namespaces, UDNs, CUDNs and IPAMClaims: the manager's
	// cache (see ClusterUserDefinedNetworkValidator).
	Client client.Reader
	// APIReader, when set, confirms against the apiserver what the cache
	// does not hold yet (a namespace or IPAMClaim created moments ago).
	APIReader client.Reader
	Config    ovnk.ClusterConfig
}

var _ admission.Validator[*corev1.Pod] = &PodValidator{}

// ValidateCreate implements admission.Validator.
func (v *PodValidator) ValidateCreate(ctx context.Context, pod *corev1.Pod) (admission.Warnings, error) {
	value, ok := pod.Annotations[ovnk.AnnotationDefaultNetwork]
	if !v.Config.PreconfiguredUDNAddresses || !ok {
		return nil, nil
	}
	spec, err := cachedPrimaryNetworkOf(ctx, v.Client, v.APIReader, pod.Namespace)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if spec == nil || spec.Layer2 == nil {
		return nil, nil // the annotation keeps its usual Multus meaning
	}
	nse, warnings, err := ovnk.DecodeDefaultNetworkSelection(value, pod.Namespace)
	if err != nil {
		return nil, invalidPod(pod, field.ErrorList{field.Invalid(defaultNetworkPath, value,
			fmt.Sprintf("must be a NetworkSelectionElement: %v.", err))})
	}
	errs := ValidateNetworkSelection(defaultNetworkPath, nse, spec.Layer2)
	if ref := nse.IPAMClaimReference; ref != "" {
		var claim ipamclaimsv1alpha1.IPAMClaim
		key := client.ObjectKey{Namespace: pod.Namespace, Name: ref}
		err := v.Client.Get(ctx, key, &claim)
		if apierrors.IsNotFound(err) && v.APIReader != nil {
			// Created moments ago, perhaps: ask the apiserver before refusing.
			err = v.APIReader.Get(ctx, key, &claim)
		}
		switch {
		case apierrors.IsNotFound(err):
			errs = append(errs, field.Invalid(defaultNetworkPath.Child("ipam-claim-reference"), ref, fmt.Sprintf(
				"IPAMClaim %s/%s does not exist; create it before the pod.", pod.Namespace, ref)))
		case err != nil:
			return nil, apierrors.NewInternalError(fmt.Errorf("reading IPAMClaim %s/%s: %w", pod.Namespace, ref, err))
		}
	}
	if len(errs) > 0 {
		return nil, invalidPod(pod, errs)
	}
	recordDecision("Pod", nil)
	return append(warnings, NetworkSelectionWarnings(defaultNetworkPath, nse)...), nil
}

// ValidateUpdate implements admission.Validator: the default-network
// annotation cannot be added, removed or changed (the same rule as the
// ValidatingAdmissionPolicy, for clusters without one).
func (v *PodValidator) ValidateUpdate(_ context.Context, old, pod *corev1.Pod) (admission.Warnings, error) {
	if !v.Config.PreconfiguredUDNAddresses {
		return nil, nil
	}
	if errs := ValidateDefaultNetworkUnchanged(old.Annotations, pod.Annotations); len(errs) > 0 {
		return nil, invalidPod(pod, errs)
	}
	return nil, nil
}

// ValidateDelete implements admission.Validator; deletes are always allowed.
func (v *PodValidator) ValidateDelete(context.Context, *corev1.Pod) (admission.Warnings, error) {
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
	recordDecision("Pod", errs)
	name := pod.Name
	if name == "" {
		name = pod.GenerateName
	}
	return apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Pod").GroupKind(), name, errs)
}

// PodDefaulter rewrites the deprecated k8s.ovn.org/primary-udn-ipamclaim
// annotation of new pods in namespaces with a Primary Layer2 network into
// the equivalent v1.multus-cni.io/default-network NetworkSelectionElement,
// with a deprecation warning (see MigrateIPAMClaimAnnotation). It is a plain
// admission.Handler because typed defaulters cannot return warnings.
type PodDefaulter struct {
	// Client and APIReader: see PodValidator.
	Client    client.Reader
	APIReader client.Reader
	Config    ovnk.ClusterConfig
	Decoder   admission.Decoder
}

// Handle implements admission.Handler.
func (d *PodDefaulter) Handle(ctx context.Context, req admission.Request) admission.Response {
	if !d.Config.PreconfiguredUDNAddresses || req.Operation != admissionv1.Create {
		return admission.Allowed("")
	}
	var pod corev1.Pod
	if err := d.Decoder.Decode(req, &pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if _, ok := pod.Annotations[ovnk.AnnotationPrimaryUDNIPAMClaim]; !ok {
		return admission.Allowed("")
	}
	namespace := pod.Namespace
	if namespace == "" {
		namespace = req.Namespace
	}
	spec, err := cachedPrimaryNetworkOf(ctx, d.Client, d.APIReader, namespace)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if spec == nil || spec.Layer2 == nil {
		return admission.Allowed("")
	}
	annotations, warnings := MigrateIPAMClaimAnnotation(pod.Annotations)
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

// cachedPrimaryNetworkOf is primaryNetworkOf on the indexed cache c; a
// namespace the cache does not hold yet is read from live (when set).
func cachedPrimaryNetworkOf(ctx context.Context, c, live client.Reader, namespace string) (*udnv1.NetworkSpec, error) {
	spec, _, err := primaryNetworkOf(ctx, reader{Reader: c, indexed: true}, namespace)
	if apierrors.IsNotFound(err) && live != nil {
		spec, _, err = primaryNetworkOf(ctx, reader{Reader: live}, namespace)
	}
	return spec, err
}

// escapeJSONPointer escapes one JSON pointer token (RFC 6901).
func escapeJSONPointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
