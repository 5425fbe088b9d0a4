package webhooks

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
)

// The UDN webhook is called only for a new Primary UDN (its match
// condition), and makes every check of that request: the apiserver calls it
// anyway for one primary network per namespace (a policy would evaluate that
// rule once per CUDN, each costing the apiserver more than this webhook's
// whole call beyond a few CUDNs, BenchmarkCreateUDN), so the
// ValidatingAdmissionPolicies skip exactly these requests (their match
// conditions) and a Primary UDN create pays one mechanism, not both. The
// checks are this package's offline ones (ValidateNetworkSpec,
// NetworkWarnings), and the refusals read as the policies' do
// (TestPoliciesAgreeWithOfflineChecks). Updates are the policies': the
// webhook is not registered for them.
// +kubebuilder:webhook:path=/validate-k8s-ovn-org-v1-userdefinednetwork,mutating=false,failurePolicy=fail,sideEffects=None,groups=k8s.ovn.org,resources=userdefinednetworks,verbs=create,versions=v1,name=userdefinednetworks.udnkit.k8s.ovn.org,admissionReviewVersions=v1,timeoutSeconds=5,patch=`{"matchConditions":[{"name":"primary","expression":"object.spec.?layer2.?role.orValue(object.spec.?layer3.?role.orValue('')) == 'Primary'"}]}`

// UserDefinedNetworkValidator checks a new Primary UserDefinedNetwork: its
// CIDRs against the cluster's internal ranges and its default gateways (as
// udnkit-network-config does for every other network), its namespace's
// primary-network label, that no UDN of its namespace has its OVN names (as
// udnkit-udn-peers does for a Secondary UDN), and that the namespace has no
// primary network yet: another Primary UDN, or a Primary CUDN selecting it.
// It warns as udnkit-network-warnings does.
type UserDefinedNetworkValidator struct {
	// Client and APIReader: see ClusterUserDefinedNetworkValidator.
	Client    client.Reader
	APIReader client.Reader
	// Config holds the cluster's ranges, as the policies' params do.
	Config ovnk.ClusterConfig
}

var _ admission.Validator[*udnv1.UserDefinedNetwork] = &UserDefinedNetworkValidator{}

// ValidateCreate implements admission.Validator.
func (v *UserDefinedNetworkValidator) ValidateCreate(ctx context.Context, udn *udnv1.UserDefinedNetwork) (admission.Warnings, error) {
	spec := udn.Spec.Network()
	if !spec.IsPrimary() {
		// Not sent by the apiserver (the match condition): the policies'.
		return udnVerdict(udn.Name, nil, nil)
	}
	path := field.NewPath("spec")
	errs := ValidateNetworkSpec(path, nil, spec, v.Config)
	collision, err := ovnNameCollision(ctx, v.Client, v.APIReader, udn)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	primary, err := v.checkPrimary(ctx, reader{Reader: v.Client, indexed: true}, udn)
	if err == nil && len(primary) > 0 && v.APIReader != nil {
		// Confirm a refusal the cache suggests against the apiserver.
		primary, err = v.checkPrimary(ctx, reader{Reader: v.APIReader}, udn)
	}
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	errs = append(append(errs, collision...), primary...)
	return udnVerdict(udn.Name, errs, NetworkWarnings(path, spec, v.Config))
}

// ValidateUpdate implements admission.Validator; the webhook is not
// registered for updates (a UDN's name, role and topology are immutable; its
// new CIDRs are udnkit-network-config's).
func (v *UserDefinedNetworkValidator) ValidateUpdate(context.Context, *udnv1.UserDefinedNetwork, *udnv1.UserDefinedNetwork) (admission.Warnings, error) {
	return nil, nil
}

// ValidateDelete implements admission.Validator; deletes are always allowed.
func (v *UserDefinedNetworkValidator) ValidateDelete(context.Context, *udnv1.UserDefinedNetwork) (admission.Warnings, error) {
	return nil, nil
}

// udnVerdict is verdict in the policies' words: the message is each
// error's "<field>: <detail>", space-separated, as udnkit's policies write
// theirs (a 422 whose causes name every field), so a user reads the same
// sentence whether a policy or this webhook refused the network.
func udnVerdict(name string, errs field.ErrorList, warnings []string) (admission.Warnings, error) {
	recordDecision(udnv1.KindUserDefinedNetwork, errs)
	if len(errs) == 0 {
		return warnings, nil
	}
	status := apierrors.NewInvalid(udnv1.GroupVersion.WithKind(udnv1.KindUserDefinedNetwork).GroupKind(), name, errs)
	status.ErrStatus.Message = PolicyMessage(errs)
	return warnings, status
}

// PolicyMessage renders errs as udnkit's ValidatingAdmissionPolicies word
// their messages: "<field>: <detail>" for each, space-separated.
func PolicyMessage(errs field.ErrorList) string {
	parts := make([]string, len(errs))
	for i, e := range errs {
		parts[i] = e.Field + ": " + e.Detail
	}
	return strings.Join(parts, " ")
}

// checkPrimary checks a new Primary UDN against its namespace: the
// primary-network label, and no other primary network there.
func (v *UserDefinedNetworkValidator) checkPrimary(ctx context.Context, r reader, udn *udnv1.UserDefinedNetwork) (field.ErrorList, error) {
	var ns corev1.Namespace
	if err := r.Get(ctx, client.ObjectKey{Name: udn.Namespace}, &ns); apierrors.IsNotFound(err) {
		return field.ErrorList{field.NotFound(field.NewPath("metadata", "namespace"), udn.Namespace)}, nil
	} else if err != nil {
		return nil, fmt.Errorf("reading namespace %s: %w", udn.Namespace, err)
	}
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
	if others := p.of(&ns, udnv1.KindUserDefinedNetwork, udn.Name); len(others) > 0 {
		topology := "layer2"
		if udn.Spec.Layer3 != nil {
			topology = "layer3"
		}
		errs = append(errs, field.Forbidden(field.NewPath("spec", topology, "role"), fmt.Sprintf(
			"namespace %s already has a primary network: %s; a namespace can have only one.", ns.Name, refs(others))))
	}
	return errs, nil
}
