package network

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/nsselect"
	"github.com/udnkit/udnkit/webhooks/admit"
)

// The CUDN webhook is called only for what the ValidatingAdmissionPolicies
// (files/policies) cannot see cheaply (the match condition):
//   - every new CUDN: it takes one of the cluster's network IDs (the
//     webhook's counters), and one whose name holds '-' or '.' may share OVN
//     names with another (see ovnk.NetworkPrefix). A policy with CUDN params
//     is evaluated once per CUDN of the cluster on each CUDN create, which
//     makes creating n CUDNs cost O(n²); the webhook reads one index entry;
//   - every namespace: a Primary CUDN on create, or when its
//     namespaceSelector changes (the webhook compares the selectors
//     semantically).
// +kubebuilder:webhook:path=/validate-k8s-ovn-org-v1-clusteruserdefinednetwork,mutating=false,failurePolicy=fail,sideEffects=None,groups=k8s.ovn.org,resources=clusteruserdefinednetworks,verbs=create;update,versions=v1,name=clusteruserdefinednetworks.udnkit.k8s.ovn.org,admissionReviewVersions=v1,timeoutSeconds=5,patch=`{"matchConditions":[{"name":"new-or-primary-selector-changed","expression":"request.operation == 'CREATE' || object.spec.network.?layer2.?role.orValue(object.spec.network.?layer3.?role.orValue('')) == 'Primary' \u0026\u0026 object.spec.namespaceSelector != oldObject.spec.namespaceSelector"}]}`
// +kubebuilder:rbac:groups=k8s.ovn.org,resources=userdefinednetworks;clusteruserdefinednetworks,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// ClusterUserDefinedNetworkValidator checks what neither CEL nor a
// ValidatingAdmissionPolicy can on a ClusterUserDefinedNetwork, as it needs
// every namespace or every CUDN: that a Primary CUDN selects no namespace
// that already has a primary network, and which of them lack the
// primary-network label (a warning); that a new CUDN's OVN objects are not
// named like another's; and that the cluster has a network ID left for it. The network's own spec is the policies'
// (udnkit-network-config, udnkit-network-warnings).
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
	// Limits: a new CUDN needs one of the cluster's network IDs.
	Limits Limits
	// Counts are the networks of each namespace and of the cluster
	// (NewNetworkCounts); nil: no limit is checked.
	Counts *NetworkCounts
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
	var errs field.ErrorList
	if old == nil {
		if err := checkLimits(ctx, v.Counts, v.Limits, "", cudn.Name); err != nil {
			return nil, err
		}
		var err error
		if errs, err = v.validateName(ctx, cudn); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
	}
	// The selector may change on update, so a Primary CUDN is checked again
	// whenever it does (the match condition sends only those requests; this
	// repeats it for a server without match conditions and for selectors
	// that differ only in form).
	if !cudn.Spec.Network.IsPrimary() || old != nil && equalSelectors(old.Spec.NamespaceSelector, cudn.Spec.NamespaceSelector) {
		return admit.Verdict("ClusterUserDefinedNetwork", cudn.Name, errs, nil)
	}
	primaryErrs, unlabelled, err := v.validatePrimary(ctx, cudn)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	errs = append(errs, primaryErrs...)
	var warnings []string
	if len(unlabelled) > 0 {
		warnings = append(warnings, fmt.Sprintf(
			"spec.namespaceSelector: selects %d namespace(s) without the label %s (%s); their pods keep the cluster default network.",
			len(unlabelled), ovnk.LabelPrimaryUserDefinedNetwork, firstNames(unlabelled)))
	}
	return admit.Verdict("ClusterUserDefinedNetwork", cudn.Name, errs, warnings)
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
	// A selector that names its namespaces reads only those.
	nss, err := nsselect.Namespaces(ctx, r, sel)
	if err != nil {
		return nil, nil, fmt.Errorf("listing namespaces: %w", err)
	}
	if len(nss) == 0 {
		return nil, nil, nil
	}
	p, err := loadPrimaries(ctx, r, "")
	if err != nil {
		return nil, nil, err
	}
	conflicts := map[string][]primaryNetwork{}
	var unlabelled []string
	for i := range nss {
		ns := &nss[i]
		others, err := p.of(ctx, ns, "ClusterUserDefinedNetwork", cudn.Name)
		if err != nil {
			return nil, nil, err
		}
		if len(others) > 0 {
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

// validateName refuses a new CUDN whose OVN objects would be named like
// another CUDN's (names that differ only in '-' versus '.'). It decides from
// the cache's IndexOVNPrefix and confirms a refusal against the apiserver.
func (v *ClusterUserDefinedNetworkValidator) validateName(ctx context.Context, cudn *udnv1.ClusterUserDefinedNetwork) (field.ErrorList, error) {
	prefix := ovnk.NetworkPrefix(ovnk.CUDNNetworkName(cudn.Name))
	var list udnv1.ClusterUserDefinedNetworkList
	if err := v.Client.List(ctx, &list, client.MatchingFields{IndexOVNPrefix: prefix}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing ClusterUserDefinedNetworks: %w", err)
	}
	other := namedLike(list.Items, cudn.Name)
	if other != "" && v.APIReader != nil {
		// The cache may hold a CUDN deleted moments ago: only one the
		// apiserver has refuses.
		if err := v.APIReader.List(ctx, &list); err != nil {
			return nil, fmt.Errorf("listing ClusterUserDefinedNetworks: %w", err)
		}
		other = namedLike(list.Items, cudn.Name)
	}
	if other == "" {
		return nil, nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), cudn.Name, fmt.Sprintf(
		"its OVN objects would be named like those of ClusterUserDefinedNetwork %s (OVN-Kubernetes replaces '-' and '/' with '.', giving both the prefix %s); choose another name.",
		other, prefix))}, nil
}

// namedLike returns the first CUDN of items, other than name itself, whose
// OVN prefix is name's.
func namedLike(items []udnv1.ClusterUserDefinedNetwork, name string) string {
	prefix := ovnk.NetworkPrefix(ovnk.CUDNNetworkName(name))
	for i := range items {
		if n := items[i].Name; n != name && ovnk.NetworkPrefix(ovnk.CUDNNetworkName(n)) == prefix {
			return n
		}
	}
	return ""
}
