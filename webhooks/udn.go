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

// +kubebuilder:webhook:path=/validate-k8s-ovn-org-v1-userdefinednetwork,mutating=false,failurePolicy=fail,sideEffects=None,groups=k8s.ovn.org,resources=userdefinednetworks,verbs=create;update,versions=v1,name=userdefinednetworks.udnkit.k8s.ovn.org,admissionReviewVersions=v1,timeoutSeconds=5
// +kubebuilder:webhook:path=/validate-k8s-ovn-org-v1-clusteruserdefinednetwork,mutating=false,failurePolicy=fail,sideEffects=None,groups=k8s.ovn.org,resources=clusteruserdefinednetworks,verbs=create;update,versions=v1,name=clusteruserdefinednetworks.udnkit.k8s.ovn.org,admissionReviewVersions=v1,timeoutSeconds=5
// +kubebuilder:rbac:groups=k8s.ovn.org,resources=userdefinednetworks;clusteruserdefinednetworks,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// UserDefinedNetworkValidator checks what CEL cannot on a UserDefinedNetwork:
// the cluster's internal ranges, one primary network per namespace and the
// namespace label a Primary UDN needs.
type UserDefinedNetworkValidator struct {
	// Client reads namespaces, UDNs and CUDNs: the manager's cache, with
	// IndexFields' indexes (SetupWithManager). A network created moments ago
	// may not be in it yet; the reconcilers settle the conflict that lets
	// through (the older network keeps the namespace).
	Client client.Reader
	// APIReader, when set, reads the apiserver to confirm a refusal the cache
	// suggests, so a network or namespace the cache is behind on never gets
	// a request refused. Only refusals pay for it.
	APIReader client.Reader
	Config    ovnk.ClusterConfig
}

var _ admission.Validator[*udnv1.UserDefinedNetwork] = &UserDefinedNetworkValidator{}

// ValidateCreate implements admission.Validator.
func (v *UserDefinedNetworkValidator) ValidateCreate(ctx context.Context, udn *udnv1.UserDefinedNetwork) (admission.Warnings, error) {
	return v.validate(ctx, nil, udn)
}

// ValidateUpdate implements admission.Validator.
func (v *UserDefinedNetworkValidator) ValidateUpdate(ctx context.Context, old, udn *udnv1.UserDefinedNetwork) (admission.Warnings, error) {
	return v.validate(ctx, old, udn)
}

// ValidateDelete implements admission.Validator; deletes are always allowed.
func (v *UserDefinedNetworkValidator) ValidateDelete(context.Context, *udnv1.UserDefinedNetwork) (admission.Warnings, error) {
	return nil, nil
}

func (v *UserDefinedNetworkValidator) validate(ctx context.Context, old, udn *udnv1.UserDefinedNetwork) (admission.Warnings, error) {
	spec := udn.Spec.Network()
	path := field.NewPath("spec")
	var oldSpec *udnv1.NetworkSpec
	if old != nil {
		s := old.Spec.Network()
		oldSpec = &s
	}
	errs := ValidateNetworkSpec(path, oldSpec, spec, v.Config)
	if old == nil {
		more, err := ovnNameCollision(ctx, v.Client, v.APIReader, udnv1.KindUserDefinedNetwork, udn.Namespace, udn.Name, udnPrefix(udn))
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		errs = append(errs, more...)
	}
	if old == nil && spec.IsPrimary() {
		more, err := v.validatePrimary(ctx, udn)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		errs = append(errs, more...)
	}
	return verdict("UserDefinedNetwork", udn.Name, errs, NetworkWarnings(path, spec, v.Config))
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

// validatePrimary checks a new Primary UDN against its namespace: the label
// and no other primary network. It decides from the cache and confirms a
// refusal against the apiserver.
func (v *UserDefinedNetworkValidator) validatePrimary(ctx context.Context, udn *udnv1.UserDefinedNetwork) (field.ErrorList, error) {
	errs, err := v.checkPrimary(ctx, reader{Reader: v.Client, indexed: true}, udn)
	if err != nil || len(errs) == 0 || v.APIReader == nil {
		return errs, err
	}
	return v.checkPrimary(ctx, reader{Reader: v.APIReader}, udn)
}

func (v *UserDefinedNetworkValidator) checkPrimary(ctx context.Context, r reader, udn *udnv1.UserDefinedNetwork) (field.ErrorList, error) {
	var ns corev1.Namespace
	if err := r.Get(ctx, client.ObjectKey{Name: udn.Namespace}, &ns); apierrors.IsNotFound(err) {
		return field.ErrorList{field.NotFound(field.NewPath("metadata", "namespace"), udn.Namespace)}, nil
	} else if err != nil {
		return nil, fmt.Errorf("reading namespace %s: %w", udn.Namespace, err)
	}
	rolePath := field.NewPath("spec").Child(topologyField(udn.Spec.Topology)).Child("role")
	var errs field.ErrorList
	if _, ok := ns.Labels[ovnk.LabelPrimaryUserDefinedNetwork]; !ok {
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "namespace"), fmt.Sprintf(
			"a Primary UserDefinedNetwork requires its namespace %s to have the label %s, set when the namespace is created.",
			ns.Name, ovnk.LabelPrimaryUserDefinedNetwork)))
	}
	p, err := loadPrimaries(ctx, r, udn.Namespace)
	if err != nil {
		return nil, err
	}
	if others := p.of(&ns, "UserDefinedNetwork", udn.Name); len(others) > 0 {
		errs = append(errs, field.Forbidden(rolePath, fmt.Sprintf(
			"namespace %s already has a primary network: %s; a namespace can have only one.",
			ns.Name, refs(others))))
	}
	return errs, nil
}

func topologyField(t udnv1.NetworkTopology) string {
	switch t {
	case udnv1.NetworkTopologyLayer3:
		return "layer3"
	case udnv1.NetworkTopologyLocalnet:
		return "localnet"
	}
	return "layer2"
}

// ClusterUserDefinedNetworkValidator checks what CEL cannot on a
// ClusterUserDefinedNetwork: the cluster's internal ranges and that a Primary
// CUDN selects no namespace that already has a primary network.
type ClusterUserDefinedNetworkValidator struct {
	// Client and APIReader: see UserDefinedNetworkValidator.
	Client    client.Reader
	APIReader client.Reader
	Config    ovnk.ClusterConfig
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
	path := field.NewPath("spec", "network")
	var oldSpec *udnv1.NetworkSpec
	if old != nil {
		oldSpec = &old.Spec.Network
	}
	errs := ValidateNetworkSpec(path, oldSpec, cudn.Spec.Network, v.Config)
	if old == nil {
		more, err := ovnNameCollision(ctx, v.Client, v.APIReader, udnv1.KindClusterUserDefinedNetwork, "", cudn.Name, cudnPrefix(cudn))
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		errs = append(errs, more...)
	}
	// The selector may change on update, so a Primary CUDN is checked again
	// whenever it does.
	selectorChanged := old == nil || !equalSelectors(old.Spec.NamespaceSelector, cudn.Spec.NamespaceSelector)
	warnings := NetworkWarnings(path, cudn.Spec.Network, v.Config)
	if cudn.Spec.Network.IsPrimary() && selectorChanged {
		more, unlabelled, err := v.validatePrimary(ctx, cudn)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		errs = append(errs, more...)
		if len(unlabelled) > 0 {
			warnings = append(warnings, fmt.Sprintf(
				"spec.namespaceSelector: selects %d namespace(s) without the label %s (%s); their pods keep the cluster default network.",
				len(unlabelled), ovnk.LabelPrimaryUserDefinedNetwork, firstNames(unlabelled)))
		}
	}
	return verdict("ClusterUserDefinedNetwork", cudn.Name, errs, warnings)
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
