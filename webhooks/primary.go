package webhooks

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
)

// primaryNetwork is a Primary UDN or CUDN, as a namespace sees it.
type primaryNetwork struct {
	// ref names it for messages: "UserDefinedNetwork ns/name" or
	// "ClusterUserDefinedNetwork name".
	ref  string
	name string // UDN or CUDN name, for skipping the object under review
	kind string
	spec udnv1.NetworkSpec
}

type cudnSelector struct {
	net      primaryNetwork
	selector labels.Selector
}

// primaries is a snapshot of the cluster's primary networks: the Primary
// UDNs by namespace and the Primary CUDNs with their parsed selectors.
type primaries struct {
	udns  map[string][]primaryNetwork
	cudns []cudnSelector
}

// IndexPrimary is the field index udnkit's webhooks register on
// UserDefinedNetworks and ClusterUserDefinedNetworks (see IndexFields): "true"
// for a Primary network that is not being deleted. Listing with it (and, for
// UDNs, a namespace) reads only the networks a one-primary-per-namespace
// decision needs.
const IndexPrimary = "udnkit.webhooks.primary"

// IndexFields registers IndexPrimary with indexer (a manager's
// GetFieldIndexer(), before the manager starts). The webhooks' Client must
// be a cache with these indexes; see SetupWithManager.
func IndexFields(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &udnv1.UserDefinedNetwork{}, IndexPrimary, func(o client.Object) []string {
		u := o.(*udnv1.UserDefinedNetwork)
		return primaryIndexValue(u.Spec.Network().IsPrimary() && u.DeletionTimestamp == nil)
	}); err != nil {
		return fmt.Errorf("indexing UserDefinedNetworks: %w", err)
	}
	if err := indexer.IndexField(ctx, &udnv1.ClusterUserDefinedNetwork{}, IndexPrimary, func(o client.Object) []string {
		cu := o.(*udnv1.ClusterUserDefinedNetwork)
		return primaryIndexValue(cu.Spec.Network.IsPrimary() && cu.DeletionTimestamp == nil)
	}); err != nil {
		return fmt.Errorf("indexing ClusterUserDefinedNetworks: %w", err)
	}
	if err := indexer.IndexField(ctx, &udnv1.ClusterUserDefinedNetwork{}, IndexOVNPrefix, func(o client.Object) []string {
		return []string{ovnk.NetworkPrefix(ovnk.CUDNNetworkName(o.GetName()))}
	}); err != nil {
		return fmt.Errorf("indexing ClusterUserDefinedNetworks: %w", err)
	}
	return nil
}

// IndexOVNPrefix is the field index of ClusterUserDefinedNetworks by the
// prefix of their OVN objects (ovnk.NetworkPrefix): CUDNs whose names differ
// only in '-' versus '.' share it.
const IndexOVNPrefix = "udnkit.webhooks.ovnPrefix"

var primaryTrue = []string{"true"}

func primaryIndexValue(primary bool) []string {
	if primary {
		return primaryTrue
	}
	return nil
}

// reader is where the webhooks read the cluster: a cache with IndexFields'
// indexes (indexed) or, to confirm a refusal, the apiserver itself.
type reader struct {
	client.Reader
	indexed bool
}

// primaryOpts narrows a list to Primary networks: through the index (and
// without copying the cached objects, which are only read) on a cache, on
// the client side otherwise.
func (r reader) primaryOpts(opts ...client.ListOption) []client.ListOption {
	if r.indexed {
		opts = append(opts, client.MatchingFields{IndexPrimary: "true"}, client.UnsafeDisableDeepCopy)
	}
	return opts
}

// loadPrimaries reads the Primary UDNs (of namespace, or of every namespace
// when namespace is "") and every Primary CUDN: from the cache through
// IndexPrimary, O(Primary networks) with no copy, or from the apiserver.
func loadPrimaries(ctx context.Context, r reader, namespace string) (*primaries, error) {
	var udns udnv1.UserDefinedNetworkList
	var opts []client.ListOption
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	if err := r.List(ctx, &udns, r.primaryOpts(opts...)...); err != nil {
		return nil, fmt.Errorf("listing UserDefinedNetworks: %w", err)
	}
	var cudns udnv1.ClusterUserDefinedNetworkList
	if err := r.List(ctx, &cudns, r.primaryOpts()...); err != nil {
		return nil, fmt.Errorf("listing ClusterUserDefinedNetworks: %w", err)
	}
	p := &primaries{}
	for i := range udns.Items {
		u := &udns.Items[i]
		if spec := u.Spec.Network(); spec.IsPrimary() && u.DeletionTimestamp == nil {
			if p.udns == nil {
				p.udns = map[string][]primaryNetwork{}
			}
			p.udns[u.Namespace] = append(p.udns[u.Namespace], primaryNetwork{
				ref: "UserDefinedNetwork " + u.Namespace + "/" + u.Name, name: u.Name, kind: "UserDefinedNetwork", spec: spec})
		}
	}
	for i := range cudns.Items {
		cu := &cudns.Items[i]
		if !cu.Spec.Network.IsPrimary() || cu.DeletionTimestamp != nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(&cu.Spec.NamespaceSelector)
		if err != nil {
			continue // a CUDN with an invalid selector selects nothing
		}
		p.cudns = append(p.cudns, cudnSelector{selector: sel, net: primaryNetwork{
			ref: "ClusterUserDefinedNetwork " + cu.Name, name: cu.Name, kind: "ClusterUserDefinedNetwork", spec: cu.Spec.Network}})
	}
	return p, nil
}

// of returns the primary networks of ns, except the one of the given kind
// and name (the object under review).
func (p *primaries) of(ns *corev1.Namespace, skipKind, skipName string) []primaryNetwork {
	var out []primaryNetwork
	for _, n := range p.udns[ns.Name] {
		if n.kind != skipKind || n.name != skipName {
			out = append(out, n)
		}
	}
	set := labels.Set(ns.Labels)
	for _, c := range p.cudns {
		if (c.net.kind != skipKind || c.net.name != skipName) && c.selector.Matches(set) {
			out = append(out, c.net)
		}
	}
	return out
}

// primaryNetworkOf returns the spec of the primary network of namespace
// (a Primary UDN in it, or a Primary CUDN selecting it) and a description
// such as "UserDefinedNetwork ns/name", or nil when the namespace uses the
// cluster default network.
func primaryNetworkOf(ctx context.Context, r reader, namespace string) (*udnv1.NetworkSpec, string, error) {
	var ns corev1.Namespace
	if err := r.Get(ctx, client.ObjectKey{Name: namespace}, &ns); err != nil {
		return nil, "", fmt.Errorf("reading namespace %s: %w", namespace, err)
	}
	p, err := loadPrimaries(ctx, r, namespace)
	if err != nil {
		return nil, "", err
	}
	nets := p.of(&ns, "", "")
	if len(nets) == 0 {
		return nil, "", nil
	}
	return &nets[0].spec, nets[0].ref, nil
}

// maxNamed is how many conflicting namespaces a message names.
const maxNamed = 3

// describeConflicts renders "a (UserDefinedNetwork a/x), b (...) and 2 more".
func describeConflicts(conflicts map[string][]primaryNetwork) string {
	parts := make([]string, 0, len(conflicts))
	for n, nets := range conflicts {
		parts = append(parts, fmt.Sprintf("%s (%s)", n, refs(nets)))
	}
	return firstNames(parts)
}

func refs(nets []primaryNetwork) string {
	out := make([]string, len(nets))
	for i, n := range nets {
		out[i] = n.ref
	}
	return strings.Join(out, ", ")
}

// firstNames lists names in order, at most maxNamed, then "and N more".
func firstNames(names []string) string {
	sorted := slices.Sorted(slices.Values(names))
	if len(sorted) <= maxNamed {
		return strings.Join(sorted, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(sorted[:maxNamed], ", "), len(sorted)-maxNamed)
}
