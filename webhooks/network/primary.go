package network

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/nsselect"
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

// IndexPrimary is the field index udnkit's webhooks register on
// UserDefinedNetworks (see IndexFields): "true" for a Primary network that
// is not being deleted. Listing with it and a namespace reads only the
// networks a one-primary-per-namespace decision needs.
const IndexPrimary = "udnkit.webhooks.primary"

// IndexPrimaryCUDNNamespaces is the field index udnkit's webhooks register
// on ClusterUserDefinedNetworks (see IndexFields): a Primary CUDN that is
// not being deleted under the namespaces its selector names, or
// nsselect.AnyNamespace (nsselect.IndexKeys); other CUDNs under none. The
// Primary CUDNs that may select a namespace are read in O(candidates), not
// O(Primary CUDNs) with every selector parsed.
const IndexPrimaryCUDNNamespaces = "udnkit.webhooks.primaryCUDNNamespaces"

// IndexFields registers IndexPrimary, IndexUDNOVNPrefix,
// IndexPrimaryCUDNNamespaces and IndexOVNPrefix with indexer (a manager's GetFieldIndexer(), before the
// manager starts). The webhooks' Client must be a cache with these indexes;
// see SetupWithManager.
func IndexFields(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &udnv1.UserDefinedNetwork{}, IndexPrimary, func(o client.Object) []string {
		return primaryIndexValue(livePrimaryUDN(o.(*udnv1.UserDefinedNetwork)))
	}); err != nil {
		return fmt.Errorf("indexing UserDefinedNetworks: %w", err)
	}
	if err := indexer.IndexField(ctx, &udnv1.UserDefinedNetwork{}, IndexUDNOVNPrefix, func(o client.Object) []string {
		return []string{ovnk.NetworkPrefix(ovnk.UDNNetworkName(o.GetNamespace(), o.GetName()))}
	}); err != nil {
		return fmt.Errorf("indexing UserDefinedNetworks: %w", err)
	}
	if err := indexer.IndexField(ctx, &udnv1.ClusterUserDefinedNetwork{}, IndexPrimaryCUDNNamespaces, func(o client.Object) []string {
		if !livePrimaryCUDN(o.(*udnv1.ClusterUserDefinedNetwork)) {
			return nil
		}
		return nsselect.IndexKeys(o)
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

// livePrimaryUDN and livePrimaryCUDN: a Primary network not being deleted
// holds its namespaces (one being deleted frees them).
func livePrimaryUDN(u *udnv1.UserDefinedNetwork) bool {
	return u.Spec.Network().IsPrimary() && u.DeletionTimestamp == nil
}

func livePrimaryCUDN(cu *udnv1.ClusterUserDefinedNetwork) bool {
	return cu.Spec.Network.IsPrimary() && cu.DeletionTimestamp == nil
}

// reader is where the webhooks read the cluster: a cache with IndexFields'
// indexes (indexed) or, to confirm a refusal, the apiserver itself.
type reader struct {
	client.Reader
	indexed bool
}

// primaries finds the primary networks of namespaces. On a cache it reads
// each namespace's through the indexes: its Primary UDNs and the Primary
// CUDNs whose selector may match it, with no copy. On the apiserver (only a
// refusal is confirmed there) it reads every Primary network once.
type primaries struct {
	r reader
	// On a cache: the Primary CUDNs by the namespaces their selectors may
	// match, those that name none read once for every namespace asked.
	cudnsOf *nsselect.Matcher
	// On the apiserver: the Primary UDNs by namespace and the Primary
	// CUDNs with their parsed selectors.
	udns  map[string][]primaryNetwork
	cudns []cudnSelector
}

// loadPrimaries prepares to find primary networks through r: on a cache,
// nothing is read yet; on the apiserver, the Primary UDNs (of namespace, or
// of every namespace when namespace is "") and every Primary CUDN.
func loadPrimaries(ctx context.Context, r reader, namespace string) (*primaries, error) {
	p := &primaries{r: r}
	if r.indexed {
		p.cudnsOf = nsselect.NewMatcher(r, IndexPrimaryCUDNNamespaces, livePrimaryCUDN)
		return p, nil
	}
	var udns udnv1.UserDefinedNetworkList
	var opts []client.ListOption
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	if err := r.List(ctx, &udns, opts...); err != nil {
		return nil, fmt.Errorf("listing UserDefinedNetworks: %w", err)
	}
	var cudns udnv1.ClusterUserDefinedNetworkList
	if err := r.List(ctx, &cudns); err != nil {
		return nil, fmt.Errorf("listing ClusterUserDefinedNetworks: %w", err)
	}
	p.udns = map[string][]primaryNetwork{}
	for i := range udns.Items {
		if u := &udns.Items[i]; livePrimaryUDN(u) {
			p.udns[u.Namespace] = append(p.udns[u.Namespace], udnPrimary(u))
		}
	}
	for i := range cudns.Items {
		cu := &cudns.Items[i]
		if !livePrimaryCUDN(cu) {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(&cu.Spec.NamespaceSelector)
		if err != nil {
			continue // a CUDN with an invalid selector selects nothing
		}
		p.cudns = append(p.cudns, cudnSelector{selector: sel, net: cudnPrimary(cu)})
	}
	return p, nil
}

func udnPrimary(u *udnv1.UserDefinedNetwork) primaryNetwork {
	return primaryNetwork{ref: "UserDefinedNetwork " + u.Namespace + "/" + u.Name, name: u.Name, kind: "UserDefinedNetwork", spec: u.Spec.Network()}
}

func cudnPrimary(cu *udnv1.ClusterUserDefinedNetwork) primaryNetwork {
	return primaryNetwork{ref: "ClusterUserDefinedNetwork " + cu.Name, name: cu.Name, kind: "ClusterUserDefinedNetwork", spec: cu.Spec.Network}
}

// of returns the primary networks of ns, except the one of the given kind
// and name (the object under review).
func (p *primaries) of(ctx context.Context, ns *corev1.Namespace, skipKind, skipName string) ([]primaryNetwork, error) {
	skip := func(n primaryNetwork) bool { return n.kind == skipKind && n.name == skipName }
	var out []primaryNetwork
	if !p.r.indexed {
		for _, n := range p.udns[ns.Name] {
			if !skip(n) {
				out = append(out, n)
			}
		}
		set := labels.Set(ns.Labels)
		for _, c := range p.cudns {
			if !skip(c.net) && c.selector.Matches(set) {
				out = append(out, c.net)
			}
		}
		return out, nil
	}
	var udns udnv1.UserDefinedNetworkList
	if err := p.r.List(ctx, &udns, client.InNamespace(ns.Name), client.MatchingFields{IndexPrimary: "true"}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing UserDefinedNetworks: %w", err)
	}
	for i := range udns.Items { // IndexPrimary holds live Primary UDNs only
		if n := udnPrimary(&udns.Items[i]); !skip(n) {
			out = append(out, n)
		}
	}
	cudns, err := p.cudnsOf.Selecting(ctx, ns)
	if err != nil {
		return nil, fmt.Errorf("listing ClusterUserDefinedNetworks: %w", err)
	}
	for _, cu := range cudns {
		if n := cudnPrimary(cu.ClusterUserDefinedNetwork); !skip(n) {
			out = append(out, n)
		}
	}
	return out, nil
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
	nets, err := p.of(ctx, &ns, "", "")
	if err != nil || len(nets) == 0 {
		return nil, "", err
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

// CachedPrimaryNetworkOf is the spec of CachedPrimaryNetwork.
func CachedPrimaryNetworkOf(ctx context.Context, c, live client.Reader, namespace string) (*udnv1.NetworkSpec, error) {
	spec, _, err := CachedPrimaryNetwork(ctx, c, live, namespace)
	return spec, err
}

// CachedPrimaryNetwork is primaryNetworkOf on the indexed cache c; a
// namespace the cache does not hold yet is read from live (when set).
func CachedPrimaryNetwork(ctx context.Context, c, live client.Reader, namespace string) (*udnv1.NetworkSpec, string, error) {
	spec, ref, err := primaryNetworkOf(ctx, reader{Reader: c, indexed: true}, namespace)
	if apierrors.IsNotFound(err) && live != nil {
		spec, ref, err = primaryNetworkOf(ctx, reader{Reader: live}, namespace)
	}
	return spec, ref, err
}
