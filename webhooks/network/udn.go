package network

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
	"github.com/udnkit/udnkit/webhooks/admit"
)

// The UDN webhook is called for every new UserDefinedNetwork: what it
// checks (the network IDs left to the namespace and to the cluster, the
// names and Primary networks already in the namespace) depends on what the
// namespace holds, which a ValidatingAdmissionPolicy could only read as
// params, evaluated once per UDN of the namespace (a create in a namespace
// of 700 UDNs cost the apiserver milliseconds more than in an empty one).
// The webhook reads counters and index entries: its cost does not grow
// with the namespace. The network's own spec stays the policies'.
// +kubebuilder:webhook:path=/validate-k8s-ovn-org-v1-userdefinednetwork,mutating=false,failurePolicy=fail,sideEffects=None,groups=k8s.ovn.org,resources=userdefinednetworks,verbs=create,versions=v1,name=userdefinednetworks.udnkit.k8s.ovn.org,admissionReviewVersions=v1,timeoutSeconds=5

// Limits bounds the networks admission lets in.
type Limits struct {
	// PerNamespace is the most UserDefinedNetworks one namespace may hold,
	// each taking one of the cluster's network IDs; 0: no limit.
	PerNamespace int
	// Cluster is how many networks (UDNs and CUDNs together) the cluster's
	// network IDs serve: ovnk.MaxNetworkID.
	Cluster int
}

// DefaultMaxNetworksPerNamespace is the default Limits.PerNamespace (the
// manager's --max-networks-per-namespace): 41 namespaces at the limit hold
// every network ID of a cluster.
const DefaultMaxNetworksPerNamespace = 100

// FlagMaxNetworksPerNamespace is the manager flag that sets
// Limits.PerNamespace; refusals name it.
const FlagMaxNetworksPerNamespace = "max-networks-per-namespace"

// DefaultLimits are the production limits.
func DefaultLimits() Limits {
	return Limits{PerNamespace: DefaultMaxNetworksPerNamespace, Cluster: ovnk.MaxNetworkID}
}

// Validate checks the limits.
func (l Limits) Validate() error {
	if l.PerNamespace < 0 {
		return fmt.Errorf("--%s=%d: must be 0 (no limit) or positive", FlagMaxNetworksPerNamespace, l.PerNamespace)
	}
	if l.Cluster < 1 || l.Cluster > ovnk.MaxNetworkID {
		return fmt.Errorf("the cluster's network limit %d is outside [1, %d]", l.Cluster, ovnk.MaxNetworkID)
	}
	return nil
}

// UserDefinedNetworkValidator checks a new UserDefinedNetwork against what
// its namespace and the cluster already hold: the per-namespace and
// cluster-wide network limits (403 Forbidden, as a ResourceQuota refuses),
// OVN name collisions and one primary network per namespace (422).
type UserDefinedNetworkValidator struct {
	// Client reads namespaces, UDNs and CUDNs: the manager's cache, with
	// IndexFields' indexes.
	Client client.Reader
	// APIReader, when set, confirms against the apiserver a refusal the
	// cache suggests (a network deleted moments ago refuses nothing).
	APIReader client.Reader
	Limits    Limits
	// Counts are the networks of each namespace and of the cluster
	// (NewNetworkCounts); nil: no limit is checked.
	Counts *NetworkCounts
}

var _ admission.Validator[*udnv1.UserDefinedNetwork] = &UserDefinedNetworkValidator{}

// IndexUDNOVNPrefix is the field index of UserDefinedNetworks by the prefix
// of their OVN objects (ovnk.NetworkPrefix): UDNs of one namespace whose
// names differ only in '-' versus '.' share it.
const IndexUDNOVNPrefix = "udnkit.webhooks.udnOVNPrefix"

// ValidateCreate implements admission.Validator.
func (v *UserDefinedNetworkValidator) ValidateCreate(ctx context.Context, u *udnv1.UserDefinedNetwork) (admission.Warnings, error) {
	if err := checkLimits(ctx, v.Counts, v.Limits, u.Namespace, u.Name); err != nil {
		return nil, err
	}
	var errs field.ErrorList
	collision, err := v.namedLike(ctx, u)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if collision != "" {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), u.Name, fmt.Sprintf(
			"its OVN objects would be named like those of UserDefinedNetwork %s/%s (OVN-Kubernetes replaces '-' and '/' with '.', giving both the prefix %s); choose another name.",
			u.Namespace, collision, ovnk.NetworkPrefix(ovnk.UDNNetworkName(u.Namespace, u.Name)))))
	}
	if spec := u.Spec.Network(); spec.IsPrimary() {
		other, err := v.otherPrimary(ctx, u)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		if other != "" {
			errs = append(errs, field.Forbidden(rolePath(spec), fmt.Sprintf(
				"namespace %s already has a primary network: %s; a namespace can have only one.", u.Namespace, other)))
		}
	}
	return admit.Verdict("UserDefinedNetwork", u.Name, errs, nil)
}

// ValidateUpdate implements admission.Validator; the webhook is called on
// create only.
func (v *UserDefinedNetworkValidator) ValidateUpdate(context.Context, *udnv1.UserDefinedNetwork, *udnv1.UserDefinedNetwork) (admission.Warnings, error) {
	return nil, nil
}

// ValidateDelete implements admission.Validator; deletes are always allowed.
func (v *UserDefinedNetworkValidator) ValidateDelete(context.Context, *udnv1.UserDefinedNetwork) (admission.Warnings, error) {
	return nil, nil
}

func rolePath(spec udnv1.NetworkSpec) *field.Path {
	if spec.Layer3 != nil {
		return field.NewPath("spec", "layer3", "role")
	}
	return field.NewPath("spec", "layer2", "role")
}

// dryRun says whether the request under review writes nothing.
func dryRun(ctx context.Context) bool {
	req, err := admission.RequestFromContext(ctx)
	return err == nil && req.DryRun != nil && *req.DryRun
}

// Reasons of the limits' refusals in udnkit_admission_decisions_total.
const (
	reasonNamespaceLimit = "NamespaceNetworkLimit"
	reasonClusterIDs     = "ClusterNetworkIDsExhausted"
)

// checkLimits refuses a new network (namespace "" for a CUDN) that would
// pass the per-namespace limit or need a network ID the cluster no longer
// has, and reserves one for it otherwise. Without counts (a validator not
// built with counts) it checks nothing.
func checkLimits(ctx context.Context, counts *NetworkCounts, limits Limits, namespace, name string) error {
	if counts == nil {
		return nil
	}
	kind, resource := udnv1.KindUserDefinedNetwork, "userdefinednetworks"
	if namespace == "" {
		kind, resource = udnv1.KindClusterUserDefinedNetwork, "clusteruserdefinednetworks"
	}
	gr := udnv1.GroupVersion.WithResource(resource).GroupResource()
	err := counts.admit(ctx, namespace, name, !dryRun(ctx), func(u usage) error {
		if namespace != "" && limits.PerNamespace > 0 && u.namespace >= limits.PerNamespace {
			admit.RecordDenial(kind, reasonNamespaceLimit)
			return apierrors.NewForbidden(gr, name, fmt.Errorf(
				"namespace %s already has %d UserDefinedNetworks, the most one namespace may have (the manager's --%s=%d): each takes one of the cluster's %d network IDs. Delete one, or ask a cluster administrator to raise the limit",
				namespace, u.namespace, FlagMaxNetworksPerNamespace, limits.PerNamespace, limits.Cluster))
		}
		if u.cluster >= limits.Cluster {
			admit.RecordDenial(kind, reasonClusterIDs)
			return apierrors.NewForbidden(gr, name, fmt.Errorf(
				"all %d network IDs of the cluster are held by its %d UserDefinedNetworks and ClusterUserDefinedNetworks (one being deleted holds its ID until it is gone): OVN-Kubernetes supports no more networks. Delete a network first",
				limits.Cluster, u.cluster))
		}
		return nil
	})
	if err != nil && !apierrors.IsForbidden(err) {
		return apierrors.NewInternalError(err)
	}
	return err
}

// namedLike returns the name of another UDN of u's namespace whose OVN
// objects would be named like u's, or "". It reads IndexUDNOVNPrefix and
// confirms a hit against the apiserver.
func (v *UserDefinedNetworkValidator) namedLike(ctx context.Context, u *udnv1.UserDefinedNetwork) (string, error) {
	if !strings.ContainsAny(u.Name, "-.") {
		// Only a name with '-' or '.' maps to a prefix another name shares.
		return "", nil
	}
	var list udnv1.UserDefinedNetworkList
	if err := v.Client.List(ctx, &list, client.InNamespace(u.Namespace), client.UnsafeDisableDeepCopy,
		client.MatchingFields{IndexUDNOVNPrefix: ovnk.NetworkPrefix(ovnk.UDNNetworkName(u.Namespace, u.Name))}); err != nil {
		return "", fmt.Errorf("listing UserDefinedNetworks: %w", err)
	}
	for _, other := range list.Items {
		if other.Name == u.Name {
			continue
		}
		if v.APIReader != nil {
			// The cache may hold a UDN deleted moments ago.
			err := v.APIReader.Get(ctx, client.ObjectKeyFromObject(&other), &udnv1.UserDefinedNetwork{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return "", fmt.Errorf("reading UserDefinedNetwork %s/%s: %w", other.Namespace, other.Name, err)
			}
		}
		return other.Name, nil
	}
	return "", nil
}

// otherPrimary describes the primary network u's namespace already has (a
// live Primary UDN, or a Primary CUDN selecting it), or "". It decides from
// the cache's indexes and confirms a refusal against the apiserver.
func (v *UserDefinedNetworkValidator) otherPrimary(ctx context.Context, u *udnv1.UserDefinedNetwork) (string, error) {
	other, err := otherPrimaryIn(ctx, reader{Reader: v.Client, indexed: true}, u)
	if v.APIReader == nil || err == nil && other == "" {
		return other, err
	}
	// Confirm (or, with a namespace the cache lacks, decide) on the apiserver.
	return otherPrimaryIn(ctx, reader{Reader: v.APIReader}, u)
}

func otherPrimaryIn(ctx context.Context, r reader, u *udnv1.UserDefinedNetwork) (string, error) {
	var ns corev1.Namespace
	if err := r.Get(ctx, client.ObjectKey{Name: u.Namespace}, &ns); err != nil {
		if apierrors.IsNotFound(err) && !r.indexed {
			return "", nil // the apiserver refuses a UDN in a missing namespace
		}
		return "", err
	}
	p, err := loadPrimaries(ctx, r, u.Namespace)
	if err != nil {
		return "", err
	}
	nets, err := p.of(ctx, &ns, "UserDefinedNetwork", u.Name)
	if err != nil || len(nets) == 0 {
		return "", err
	}
	return refs(nets), nil
}
