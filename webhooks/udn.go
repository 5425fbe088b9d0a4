package webhooks

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
)

// The UDN webhook is called only for a new Primary UDN (its match
// condition): one primary network per namespace. Everything else about a
// UDN is checked by the ValidatingAdmissionPolicies, in the apiserver. A
// policy would evaluate that rule once per CUDN, each costing the apiserver
// more than this webhook's whole call beyond a few CUDNs (BenchmarkCreateUDN);
// the webhook reads the Primary networks from an indexed cache, O(1) in the
// number of CUDNs.
// +kubebuilder:webhook:path=/validate-k8s-ovn-org-v1-userdefinednetwork,mutating=false,failurePolicy=fail,sideEffects=None,groups=k8s.ovn.org,resources=userdefinednetworks,verbs=create,versions=v1,name=userdefinednetworks.udnkit.k8s.ovn.org,admissionReviewVersions=v1,timeoutSeconds=5,patch=`{"matchConditions":[{"name":"primary","expression":"object.spec.?layer2.?role.orValue(object.spec.?layer3.?role.orValue('')) == 'Primary'"}]}`

// UserDefinedNetworkValidator refuses a new Primary UserDefinedNetwork in a
// namespace that already has a primary network: another Primary UDN there,
// or a Primary CUDN selecting it.
type UserDefinedNetworkValidator struct {
	// Client and APIReader: see ClusterUserDefinedNetworkValidator.
	Client    client.Reader
	APIReader client.Reader
}

var _ admission.Validator[*udnv1.UserDefinedNetwork] = &UserDefinedNetworkValidator{}

// ValidateCreate implements admission.Validator.
func (v *UserDefinedNetworkValidator) ValidateCreate(ctx context.Context, udn *udnv1.UserDefinedNetwork) (admission.Warnings, error) {
	if !udn.Spec.Network().IsPrimary() {
		return verdict("UserDefinedNetwork", udn.Name, nil, nil)
	}
	errs, err := v.checkPrimary(ctx, reader{Reader: v.Client, indexed: true}, udn)
	if err == nil && len(errs) > 0 && v.APIReader != nil {
		// Confirm a refusal the cache suggests against the apiserver.
		errs, err = v.checkPrimary(ctx, reader{Reader: v.APIReader}, udn)
	}
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return verdict("UserDefinedNetwork", udn.Name, errs, nil)
}

// ValidateUpdate implements admission.Validator; the webhook is not
// registered for updates (a UDN's role and topology are immutable).
func (v *UserDefinedNetworkValidator) ValidateUpdate(context.Context, *udnv1.UserDefinedNetwork, *udnv1.UserDefinedNetwork) (admission.Warnings, error) {
	return nil, nil
}

// ValidateDelete implements admission.Validator; deletes are always allowed.
func (v *UserDefinedNetworkValidator) ValidateDelete(context.Context, *udnv1.UserDefinedNetwork) (admission.Warnings, error) {
	return nil, nil
}

func (v *UserDefinedNetworkValidator) checkPrimary(ctx context.Context, r reader, udn *udnv1.UserDefinedNetwork) (field.ErrorList, error) {
	var ns corev1.Namespace
	if err := r.Get(ctx, client.ObjectKey{Name: udn.Namespace}, &ns); apierrors.IsNotFound(err) {
		return field.ErrorList{field.NotFound(field.NewPath("metadata", "namespace"), udn.Namespace)}, nil
	} else if err != nil {
		return nil, fmt.Errorf("reading namespace %s: %w", udn.Namespace, err)
	}
	p, err := loadPrimaries(ctx, r, udn.Namespace)
	if err != nil {
		return nil, err
	}
	others := p.of(&ns, "UserDefinedNetwork", udn.Name)
	if len(others) == 0 {
		return nil, nil
	}
	topology := "layer2"
	if udn.Spec.Layer3 != nil {
		topology = "layer3"
	}
	return field.ErrorList{field.Forbidden(field.NewPath("spec", topology, "role"), fmt.Sprintf(
		"namespace %s already has a primary network: %s; a namespace can have only one.", ns.Name, refs(others)))}, nil
}
