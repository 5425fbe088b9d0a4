// Package nad holds the NetworkAttachmentDefinition validator: a UDN's or
// CUDN's network name only in that network's own NADs (nadtrust's rule).
package nad

import (
	"context"
	"fmt"
	"slices"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/nadtrust"
	"github.com/udnkit/udnkit/webhooks/admit"
)

// The NAD webhook keeps the network names of UDNs and CUDNs to the NADs
// their reconciler writes, whoever writes them: who may write a NAD with
// udnkit's label, OVN-Kubernetes' annotations or a k8s.ovn.org owner is the
// ValidatingAdmissionPolicy udnkit-nad-writers' (identity, CEL); whether a
// network name belongs to a UDN or CUDN takes parsing the config and a
// lookup, so it is here. It is called (matchConditions) on a NAD create, on
// an update that changes spec.config or adds a k8s.ovn.org owner reference,
// and only when the config holds "_" or "\" (every UDN's and CUDN's network
// name has an "_", which JSON can also spell "\u005f") or a k8s.ovn.org
// owner is set: a NAD of another CNI, or an update that only touches
// labels, finalizers or status, costs the apiserver no webhook call.
// +kubebuilder:webhook:path=/validate-k8s-cni-cncf-io-v1-networkattachmentdefinition,mutating=false,failurePolicy=fail,sideEffects=None,groups=k8s.cni.cncf.io,resources=network-attachment-definitions,verbs=create;update,versions=v1,name=network-attachment-definitions.udnkit.k8s.ovn.org,admissionReviewVersions=v1,timeoutSeconds=5,patch=`{"matchConditions":[{"name":"config-or-owner-set","expression":"(request.operation == 'CREATE' || object.?spec.?config.orValue('') != oldObject.?spec.?config.orValue('') || object.metadata.?ownerReferences.orValue([]).exists(o, o.apiVersion.startsWith('k8s.ovn.org/') \u0026\u0026 !oldObject.metadata.?ownerReferences.orValue([]).exists(p, p == o))) \u0026\u0026 (object.?spec.?config.orValue('').contains('_') || object.?spec.?config.orValue('').contains('\\\\') || object.metadata.?ownerReferences.orValue([]).exists(o, o.apiVersion.startsWith('k8s.ovn.org/')))"}]}`
// +kubebuilder:rbac:groups=k8s.ovn.org,resources=userdefinednetworks;clusteruserdefinednetworks,verbs=get;list;watch

// nadResource names NADs in refusals.
var nadResource = schema.GroupResource{Group: nadv1.SchemeGroupVersion.Group, Resource: "network-attachment-definitions"}

// configPath is the field the network names are read from.
var configPath = field.NewPath("spec", "config")

// Validator refuses a NAD whose config names the
// network of a UserDefinedNetwork or ClusterUserDefinedNetwork (see
// ovnk.OwnerOfNetworkName: every such name, whether or not that network
// exists yet, so no NAD can claim a network before its owner is created)
// unless the NAD is that network's own by nadtrust's rule, the rule udnkit's
// consumers apply: controlled by that UDN or CUDN, with its UID, named like
// it (in a UDN's namespace), naming its network and itself, with its IDs. A
// NAD a UDN or CUDN controls must pass that rule too. Other NADs, of any
// CNI, are admitted: user-written secondary networks of OVN-Kubernetes' type
// stay possible, as upstream allows them.
type Validator struct {
	// Client reads UDNs and CUDNs: the manager's cache. A network created
	// moments ago may be missing; a refusal is confirmed with APIReader.
	Client client.Reader
	// APIReader, when set, reads the apiserver to confirm a refusal the
	// cache suggests (the reconciler writes a new network's NAD right after
	// the network appears).
	APIReader client.Reader
}

var _ admission.Validator[*nadv1.NetworkAttachmentDefinition] = &Validator{}

// SetupWithManager registers the validator on mgr's webhook server, at the
// path of the marker above.
func SetupWithManager(mgr ctrl.Manager, cached, live client.Reader) error {
	return ctrl.NewWebhookManagedBy(mgr, &nadv1.NetworkAttachmentDefinition{}).
		WithValidator(&Validator{Client: cached, APIReader: live}).Complete()
}

// ValidateCreate implements admission.Validator.
func (v *Validator) ValidateCreate(ctx context.Context, nad *nadv1.NetworkAttachmentDefinition) (admission.Warnings, error) {
	return v.validate(ctx, nil, nad)
}

// ValidateUpdate implements admission.Validator.
func (v *Validator) ValidateUpdate(ctx context.Context, old, nad *nadv1.NetworkAttachmentDefinition) (admission.Warnings, error) {
	return v.validate(ctx, old, nad)
}

// ValidateDelete implements admission.Validator. Deletes are admitted: a
// tenant may delete only NADs of its own namespace, a deleted UDN or CUDN
// NAD stays (finalizer) while a pod uses it and its reconciler writes it
// again, and refusing deletes would hold up namespace deletion and the
// garbage collector.
func (v *Validator) ValidateDelete(context.Context, *nadv1.NetworkAttachmentDefinition) (admission.Warnings, error) {
	return nil, nil
}

func (v *Validator) validate(ctx context.Context, old, nad *nadv1.NetworkAttachmentDefinition) (admission.Warnings, error) {
	if old != nil && old.Spec.Config == nad.Spec.Config && !addsNetworkOwner(old, nad) {
		// Unchanged names and no new owner (the same test as the match
		// condition): removing an owner reference, as the garbage collector
		// does when orphaning, leaves a NAD nobody acts on.
		return nil, nil
	}
	errs, err := v.checkNames(ctx, v.Client, nad)
	if err == nil && len(errs) > 0 && v.APIReader != nil {
		errs, err = v.checkNames(ctx, v.APIReader, nad)
	}
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	admit.RecordDecision("NetworkAttachmentDefinition", errs)
	if len(errs) > 0 {
		return nil, apierrors.NewForbidden(nadResource, nad.Name, admit.Bounded(errs).ToAggregate())
	}
	return nil, nil
}

// checkNames applies the rule with r. A NAD that names a UDN's or CUDN's
// network, or that a UDN or CUDN controls, must pass nadtrust's rule (the
// one udnkit's consumers apply: controlled by that network, with its UID,
// named like it, naming its network) with that network as its owner.
func (v *Validator) checkNames(ctx context.Context, r client.Reader, nad *nadv1.NetworkAttachmentDefinition) (field.ErrorList, error) {
	type claim struct {
		name  string
		owner ovnk.NetworkOwner
	}
	names := ovnk.NetConfNetworkNames(nad.Spec.Config)
	var claims []claim
	for _, name := range names {
		if owner, ok := ovnk.OwnerOfNetworkName(name); ok {
			claims = append(claims, claim{name, owner})
		}
	}
	if len(claims) == 0 && (len(names) == 0 || networkController(nad) == nil) {
		return nil, nil
	}
	verified, err := nadtrust.Verify(ctx, r, nad)
	untrusted, isUntrusted := nadtrust.IsUntrusted(err)
	if err != nil && !isUntrusted {
		return nil, err
	}
	var errs field.ErrorList
	if len(claims) == 0 {
		return append(errs, field.Forbidden(configPath, fmt.Sprintf(
			"a UserDefinedNetwork or ClusterUserDefinedNetwork controls this NetworkAttachmentDefinition, which fails udnkit's ownership rule: %s", untrusted.Message))), nil
	}
	for _, c := range claims {
		exists, err := networkExists(ctx, r, c.owner)
		if err != nil {
			return nil, err
		}
		switch {
		case !exists:
			errs = append(errs, field.Forbidden(configPath, fmt.Sprintf(
				"network name %q is reserved for %s, which does not exist; create that network instead of a NetworkAttachmentDefinition naming it",
				c.name, c.owner)))
		case isUntrusted:
			errs = append(errs, field.Forbidden(configPath, fmt.Sprintf(
				"network name %q belongs to %s; only its own NetworkAttachmentDefinitions, which udnkit writes, may name it, and this one fails udnkit's ownership rule: %s",
				c.name, c.owner, untrusted.Message)))
		case (ovnk.NetworkOwner{Kind: verified.Kind, Namespace: verified.Namespace, Name: verified.Name}) != c.owner:
			errs = append(errs, field.Forbidden(configPath, fmt.Sprintf(
				"network name %q belongs to %s, not to the NetworkAttachmentDefinition's controller %s %s",
				c.name, c.owner, verified.Kind, verified.Name)))
		}
	}
	return errs, nil
}

// networkController is nad's controller owner reference if it is a
// k8s.ovn.org/v1 UserDefinedNetwork or ClusterUserDefinedNetwork.
func networkController(nad *nadv1.NetworkAttachmentDefinition) *metav1.OwnerReference {
	ref := metav1.GetControllerOfNoCopy(nad)
	if ref == nil || ref.APIVersion != udnv1.GroupVersion.String() ||
		ref.Kind != udnv1.KindUserDefinedNetwork && ref.Kind != udnv1.KindClusterUserDefinedNetwork {
		return nil
	}
	return ref
}

// addsNetworkOwner reports whether nad has a k8s.ovn.org owner reference old
// lacks.
func addsNetworkOwner(old, nad *nadv1.NetworkAttachmentDefinition) bool {
	for _, ref := range nad.OwnerReferences {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != udnv1.GroupVersion.Group {
			continue
		}
		if !slices.ContainsFunc(old.OwnerReferences, func(o metav1.OwnerReference) bool { return equality.Semantic.DeepEqual(o, ref) }) {
			return true
		}
	}
	return false
}

// networkExists reports whether the UDN or CUDN owner exists.
func networkExists(ctx context.Context, r client.Reader, owner ovnk.NetworkOwner) (bool, error) {
	if len(validation.IsDNS1123Subdomain(owner.Name)) > 0 {
		// A name no object can have (a CUDN's network name is any name
		// under cluster_udn_).
		return false, nil
	}
	var obj client.Object = &udnv1.UserDefinedNetwork{}
	if owner.Kind == udnv1.KindClusterUserDefinedNetwork {
		obj = &udnv1.ClusterUserDefinedNetwork{}
	}
	err := r.Get(ctx, client.ObjectKey{Namespace: owner.Namespace, Name: owner.Name}, obj)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", owner, err)
	}
	return true, nil
}
