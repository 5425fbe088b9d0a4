package webhooks

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
)

// The CUDN webhook is called only for what the ValidatingAdmissionPolicies
// (files/policies) cannot see, every namespace: a Primary CUDN on create, or
// when its namespaceSelector changes (the match condition; the webhook
// compares the selectors semantically).
// +kubebuilder:webhook:path=/validate-k8s-ovn-org-v1-clusteruserdefinednetwork,mutating=false,failurePolicy=fail,sideEffects=None,groups=k8s.ovn.org,resources=clusteruserdefinednetworks,verbs=create;update,versions=v1,name=clusteruserdefinednetworks.udnkit.k8s.ovn.org,admissionReviewVersions=v1,timeoutSeconds=5,patch=`{"matchConditions":[{"name":"primary-selector-set","expression":"object.spec.network.?layer2.?role.orValue(object.spec.network.?layer3.?role.orValue('')) == 'Primary' && (request.operation == 'CREATE' || object.spec.namespaceSelector != oldObject.spec.namespaceSelector)"}]}`
// +kubebuilder:rbac:groups=k8s.ovn.org,resources=userdefinednetworks;clusteruserdefinednetworks,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// ClusterUserDefinedNetworkValidator checks what neither CEL nor a
// ValidatingAdmissionPolicy can on a ClusterUserDefinedNetwork, as it needs
// every namespace: that a Primary CUDN selects no namespace that already has
// a primary network, and which of them lack the primary-network label (a
// warning). The network's own spec and name are the policies'
// (udnkit-network-config, udnkit-network-warnings, udnkit-cudn-peers).
type ClusterUserDefinedNetworkValidator struct {
	// Client reads namespaces, UDNs and CUDNs: the manager's cache, with
	// IndexFields' indexes (SetupWithManager). A network created moments ago
	// may not be in it yet; the reconcilers settle the conflict that lets
	// through (the older network keeps the namespace).
	Client client.Reader
	// APIReader, when set, reads the apiserver to confirm a refusal the cache
	// suggests, so a network or namespace the cache is behind on never gets
	// a request refused. Only refusals pay for it.
	APIReader client.Reader
}

var _ admission.Validator[*udnv1.ClusterUserDefinedNetwork] = &ClusterUserDefinedNetworkValidator{}

// ValidateCreate implements admission.Validator.
func (v *ClusterUserDefinedNetworkValidator) ValidateCreate(ctx context.Context, cudn *udnv1.ClusterUserDefinedNetwork) (admission.Warnings, error) {
	return v.validate(ctx, nil, cudn)
}

// ValidateUpdate implements admission.Validator.
func (v *ClusterUserDefinedNetworkValidator) ValidateUpdate(ctx context.Context, old, cudn *udnv1.ClusterUserDefinedNetwork) (admission.Warnings, error) {
	return v.validate(ctx, old, cudn)
}

// ValidateDelete implements admission.Validator; deletes are always allowed.
func (v *ClusterUserDefinedNetworkValidator) ValidateDelete(context.Context, *udnv1.ClusterUserDefinedNetwork) (admission.Warnings, error) {
	return nil, nil
}

func (v *ClusterUserDefinedNetworkValidator) validate(ctx context.Context, old, cudn *udnv1.ClusterUserDefinedNetwork) (admission.Warnings, error) {
	// The selector may change on update, so a Primary CUDN is checked again
	// whenever it does (the match condition sends only those requests; this
	// repeats it for a server without match conditions and for selectors
	// that differ only in form).
	if !cudn.Spec.Network.IsPrimary() || old != nil && equalSelectors(old.Spec.NamespaceSelector, cudn.Spec.NamespaceSelector) {
		return verdict("ClusterUserDefinedNetwork", cudn.Name, nil, nil)
	}
	errs, unlabelled, err := v.validatePrimary(ctx, cudn)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	var warnings []string
	if len(unlabelled) > 0 {
		warnings = append(warnings, fmt.Sprintf(
			"spec.namespaceSelector: selects %d namespace(s) without the label %s (%s); their pods keep the cluster default network.",
			len(unlabelled), ovnk.LabelPrimaryUserDefinedNetwork, firstNames(unlabelled)))
	}
	return verdict("ClusterUserDefinedNetwork", cudn.Name, errs, warnings)
}

// verdict turns a network's errors and warnings into the admission answer:
// a 422 naming every field, with the warnings either way.
func verdict(kind, name string, errs field.ErrorList, warnings []string) (admission.Warnings, error) {
	recordDecision(kind, errs)
	if len(errs) > 0 {
		return warnings, apierrors.NewInvalid(udnv1.GroupVersion.WithKind(kind).GroupKind(), name, errs)
	}
	return warnings, nil
}

// validatePrimary refuses a Primary CUDN that selects a namespace with
// another primary network, and returns the selected namespaces that lack the
// primary-network label (a warning: the label cannot be added later). It
// decides from the cache and confirms a refusal against the apiserver.
func (v *ClusterUserDefinedNetworkValidator) validatePrimary(ctx context.Context, cudn *udnv1.ClusterUserDefinedNetwork) (field.ErrorList, []string, error) {
	errs, unlabelled, err := v.checkPrimary(ctx, reader{Reader: v.Client, indexed: true}, cudn)
	if err != nil || len(errs) == 0 || v.APIReader == nil {
		return errs, unlabelled, err
	}
	return v.checkPrimary(ctx, reader{Reader: v.APIReader}, cudn)
}

func (v *ClusterUserDefinedNetworkValidator) checkPrimary(ctx context.Context, r reader, cudn *udnv1.ClusterUserDefinedNetwork) (field.ErrorList, []string, error) {
	selPath := field.NewPath("spec", "namespaceSelector")
	sel, err := metav1.LabelSelectorAsSelector(&cudn.Spec.NamespaceSelector)
	if err != nil {
		return field.ErrorList{field.Invalid(selPath, cudn.Spec.NamespaceSelector, err.Error())}, nil, nil
	}
	var nss corev1.NamespaceList
	opts := []client.ListOption{client.MatchingLabelsSelector{Selector: sel}}
	if r.indexed {
		opts = append(opts, client.UnsafeDisableDeepCopy)
	}
	if err := r.List(ctx, &nss, opts...); err != nil {
		return nil, nil, fmt.Errorf("listing namespaces: %w", err)
	}
	if len(nss.Items) == 0 {
		return nil, nil, nil
	}
	p, err := loadPrimaries(ctx, r, "")
	if err != nil {
		return nil, nil, err
	}
	conflicts := map[string][]primaryNetwork{}
	var unlabelled []string
	for i := range nss.Items {
		ns := &nss.Items[i]
		if others := p.of(ns, "ClusterUserDefinedNetwork", cudn.Name); len(others) > 0 {
			conflicts[ns.Name] = others
		}
		if _, ok := ns.Labels[ovnk.LabelPrimaryUserDefinedNetwork]; !ok {
			unlabelled = append(unlabelled, ns.Name)
		}
	}
	if len(conflicts) == 0 {
		return nil, unlabelled, nil
	}
	return field.ErrorList{field.Forbidden(selPath, fmt.Sprintf(
		"selects %d namespace(s) that already have a primary network: %s; a namespace can have only one.",
		len(conflicts), describeConflicts(conflicts)))}, unlabelled, nil
}

func equalSelectors(a, b metav1.LabelSelector) bool {
	sa, errA := metav1.LabelSelectorAsSelector(&a)
	sb, errB := metav1.LabelSelectorAsSelector(&b)
	if errA != nil || errB != nil {
		return false
	}
	return sa.String() == sb.String()
}
