package addresses

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers/addresses/ipalloc"
)

// networkRef names a Primary Layer2 network: a UDN (Namespace set) or a CUDN.
type networkRef struct {
	Namespace string
	Name      string
}

// ID is unique across UDNs and CUDNs.
func (n networkRef) ID() string {
	if n.Namespace != "" {
		return "udn/" + n.Namespace + "/" + n.Name
	}
	return "cudn/" + n.Name
}

// Key is the network's key in a pod's k8s.ovn.org/pod-networks: the name of
// its NAD in the pod's namespace.
func (n networkRef) Key(podNamespace string) string { return podNamespace + "/" + n.Name }

// NetworkName is the network's name in its NAD config, as IPAMClaims' spec.network
// carries it: "<namespace>_<name>" for a UDN, "cluster_udn_<name>" for a CUDN.
func (n networkRef) NetworkName() string {
	if n.Namespace != "" {
		return ovnk.UDNNetworkName(n.Namespace, n.Name)
	}
	return ovnk.CUDNNetworkName(n.Name)
}

// primaryLayer2 is the network a namespace's pods get addresses from.
type primaryLayer2 struct {
	ref      networkRef
	spec     udnv1.NetworkSpec
	selector labels.Selector // CUDN only
}

func eligible(spec udnv1.NetworkSpec) bool {
	return spec.Layer2 != nil && spec.IsPrimary() && len(spec.Layer2.Subnets) > 0 &&
		(spec.Layer2.IPAM == nil || spec.Layer2.IPAM.Mode != udnv1.IPAMDisabled)
}

// findNetwork returns the namespace's Primary Layer2 network, if any: its
// UDN, else the first CUDN (by name) whose namespaceSelector matches.
func findNetwork(ctx context.Context, c client.Reader, cudns *cudnCandidates, namespace string) (*primaryLayer2, error) {
	// Listed without copies (read only): every pod's reconcile looks its
	// network up.
	var udns udnv1.UserDefinedNetworkList
	if err := c.List(ctx, &udns, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	for _, u := range udns.Items {
		if u.DeletionTimestamp == nil && eligible(u.Spec.Network()) {
			return &primaryLayer2{ref: networkRef{Namespace: namespace, Name: u.Name}, spec: u.Spec.Network()}, nil
		}
	}
	var ns corev1.Namespace
	// A pod's namespace exists; not finding it means the cache lags, and the
	// error makes the pod come back.
	if err := c.Get(ctx, client.ObjectKey{Name: namespace}, &ns); err != nil {
		return nil, fmt.Errorf("namespace %s: %w", namespace, err)
	}
	candidates, err := cudns.get(ctx, c)
	if err != nil {
		return nil, err
	}
	for _, cu := range candidates {
		if cu.selector.Matches(labels.Set(ns.Labels)) {
			return &primaryLayer2{ref: cu.ref, spec: cu.spec, selector: cu.selector}, nil
		}
	}
	return nil, nil
}

// cudnCandidates are the Primary Layer2 CUDNs by name with their parsed
// selectors, listed again only after a CUDN event (changed counts them):
// every pod's lookup used to list, copy and sort every CUDN.
type cudnCandidates struct {
	changed atomic.Int64

	mu    sync.Mutex
	built bool
	gen   int64
	list  []primaryLayer2
}

func (cc *cudnCandidates) get(ctx context.Context, c client.Reader) ([]primaryLayer2, error) {
	gen := cc.changed.Load()
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.built && cc.gen == gen {
		return cc.list, nil
	}
	var cudns udnv1.ClusterUserDefinedNetworkList
	if err := c.List(ctx, &cudns, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	var list []primaryLayer2
	for i := range cudns.Items {
		cu := &cudns.Items[i]
		if cu.DeletionTimestamp != nil || !eligible(cu.Spec.Network) {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(&cu.Spec.NamespaceSelector)
		if err != nil {
			continue
		}
		list = append(list, primaryLayer2{ref: networkRef{Name: cu.Name}, spec: *cu.Spec.Network.DeepCopy(), selector: sel})
	}
	slices.SortFunc(list, func(a, b primaryLayer2) int { return compare(a.ref.Name, b.ref.Name) })
	cc.list, cc.gen, cc.built = list, gen, true
	return list, nil
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// namespaces lists the namespaces the network spans.
func (n *primaryLayer2) namespaces(ctx context.Context, c client.Reader) ([]string, error) {
	if n.ref.Namespace != "" {
		return []string{n.ref.Namespace}, nil
	}
	if names, ok := namedNamespaces(n.selector); ok {
		// A selector that names its namespaces (the usual way to select
		// given ones) gets them one by one: a list with a selector tests
		// every namespace, and a CUDN event would cost O(namespaces).
		var out []string
		for _, name := range names {
			var ns corev1.Namespace
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &ns); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return nil, err
			}
			if n.selector.Matches(labels.Set(ns.Labels)) {
				out = append(out, name)
			}
		}
		return out, nil
	}
	var list corev1.NamespaceList
	if err := c.List(ctx, &list, client.MatchingLabelsSelector{Selector: n.selector}); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(list.Items))
	for _, ns := range list.Items {
		out = append(out, ns.Name)
	}
	return out, nil
}

// namedNamespaces returns the names sel requires of kubernetes.io/metadata.name
// (= or in), if it requires any: only those namespaces can match.
func namedNamespaces(sel labels.Selector) ([]string, bool) {
	reqs, selectable := sel.Requirements()
	if !selectable {
		return nil, false
	}
	for _, req := range reqs {
		if req.Key() != corev1.LabelMetadataName {
			continue
		}
		switch req.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			return req.Values().List(), true
		}
	}
	return nil, false
}

// poolConfig turns a Layer2 spec into the allocator's configuration. With
// preconfigured-udn-addresses-enable off OVN-Kubernetes ignores
// reservedSubnets, infrastructureSubnets and defaultGatewayIPs (they are not
// in the NetConf), so the pool does too: the gateway, the management port
// and every pod address then agree with the NAD and OVN.
func poolConfig(spec udnv1.NetworkSpec, predefined bool) (ipalloc.Config, error) {
	l2 := spec.Layer2
	var cfg ipalloc.Config
	parse := func(field string, in []string) ([]netip.Prefix, error) {
		var out []netip.Prefix
		for i, s := range in {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("spec.layer2.%s[%d]: %w", field, i, err)
			}
			out = append(out, p)
		}
		return out, nil
	}
	var err error
	if cfg.Subnets, err = parse("subnets", spec.SubnetCIDRs()); err != nil {
		return cfg, err
	}
	if !predefined {
		return cfg, nil
	}
	if cfg.InfrastructureSubnets, err = parse("infrastructureSubnets", strs(l2.InfrastructureSubnets)); err != nil {
		return cfg, err
	}
	if cfg.ReservedSubnets, err = parse("reservedSubnets", strs(l2.ReservedSubnets)); err != nil {
		return cfg, err
	}
	for i, g := range l2.DefaultGatewayIPs {
		a, err := netip.ParseAddr(string(g))
		if err != nil {
			return cfg, fmt.Errorf("spec.layer2.defaultGatewayIPs[%d]: %w", i, err)
		}
		cfg.DefaultGatewayIPs = append(cfg.DefaultGatewayIPs, a)
	}
	return cfg, nil
}

func strs[S ~string](in []S) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = string(s)
	}
	return out
}
