// Package layer3 lists the Layer3 UserDefinedNetworks and
// ClusterUserDefinedNetworks as the node controller sees them: each one's
// OVN network name, its cluster subnets as its NAD publishes them, and its
// HostSubnetsAllocated condition. The list is kept between node reconciles
// and taken again only when a network or NAD changed.
package layer3

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/nadtrust"
	"github.com/udnkit/udnkit/ovnk/netconf"
	"github.com/udnkit/udnkit/reconcilers/idalloc"
)

// Network is a Layer3 UDN or CUDN as the node controller sees it.
type Network struct {
	Name    string // OVN network name, the key in k8s.ovn.org/node-subnets
	Kind    string
	Obj     types.NamespacedName
	UID     types.UID
	Subnets []idalloc.ClusterSubnet
	// HostSubnets is the network's HostSubnetsAllocated condition as last
	// read (nil when it has none).
	HostSubnets *metav1.Condition
}

// Ref is an object reference the event recorder accepts for the network.
func (n Network) Ref() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(udnv1.GroupVersion.String())
	u.SetKind(n.Kind)
	u.SetName(n.Obj.Name)
	u.SetNamespace(n.Obj.Namespace)
	u.SetUID(n.UID)
	return u
}

// Lister is the Layer3 networks as last listed from the cache.
type Lister struct {
	client client.Reader
	// index is the field index of NADs by their controller's UID.
	index string
	// maxAge is how old the list may be while networks keep changing.
	maxAge func() time.Duration
	nads   nadSubnetCache

	// gen counts network and NAD events (an atomic).
	gen atomic.Int64
	// mu guards nets, netsGen and at; Cached holds it while it lists the
	// networks, so one reconcile lists them while the others wait (and then
	// mostly reuse its list).
	mu      sync.Mutex
	nets    []Network // the list as of network generation netsGen
	netsGen int64
	at      time.Time
}

// NewLister lists from c; index is c's field index of NADs by their
// controller's UID, guard checks the NADs whose subnets are read, and
// maxAge is how old a list may be used during a burst of changes.
func NewLister(c client.Reader, index string, guard *nadtrust.Guard, maxAge func() time.Duration) *Lister {
	return &Lister{client: c, index: index, maxAge: maxAge, nads: nadSubnetCache{guard: guard}}
}

// Changed says that a network or NAD changed.
func (l *Lister) Changed() { l.gen.Add(1) }

// Cached is the Layer3 networks, listed once per change of a
// network or NAD rather than once per node (a change reconciles every node),
// and during a burst of changes at most once per maxAge: a burst would
// otherwise list every network once per node reconcile. stale says that
// networks changed since the list; the caller reconciles again later.
func (l *Lister) Cached(ctx context.Context) (nets []Network, gen int64, stale bool, err error) {
	gen = l.gen.Load()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.nets != nil && (l.netsGen == gen || time.Since(l.at) < l.maxAge()) {
		return l.nets, l.netsGen, l.netsGen != gen, nil
	}
	at := time.Now()
	if nets, err = l.list(ctx); err != nil {
		return nil, 0, false, err
	}
	l.nets, l.netsGen, l.at = nets, gen, at
	return nets, gen, false, nil
}

// list lists the Layer3 networks. Networks being deleted keep
// their host subnets until they are gone: their pods may still run.
func (l *Lister) list(ctx context.Context) ([]Network, error) {
	var out []Network
	var udns udnv1.UserDefinedNetworkList
	if err := l.client.List(ctx, &udns, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	for _, u := range udns.Items {
		n := Network{Name: ovnk.UDNNetworkName(u.Namespace, u.Name), Kind: udnv1.KindUserDefinedNetwork, Obj: client.ObjectKeyFromObject(&u), UID: u.UID}
		if l.fill(ctx, &n, u.Spec.Network(), u.Status.Conditions) {
			out = append(out, n)
		}
	}
	var cudns udnv1.ClusterUserDefinedNetworkList
	if err := l.client.List(ctx, &cudns, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	for _, c := range cudns.Items {
		n := Network{Name: ovnk.CUDNNetworkName(c.Name), Kind: udnv1.KindClusterUserDefinedNetwork, Obj: client.ObjectKeyFromObject(&c), UID: c.UID}
		if l.fill(ctx, &n, c.Spec.Network, c.Status.Conditions) {
			out = append(out, n)
		}
	}
	return out, nil
}

// fill fills n's cluster subnets and condition from a network's spec
// and status; false when the network is not Layer3 or a subnet is
// malformed.
func (l *Lister) fill(ctx context.Context, n *Network, spec udnv1.NetworkSpec, conds []metav1.Condition) bool {
	if spec.Topology != udnv1.NetworkTopologyLayer3 || spec.Layer3 == nil {
		return false
	}
	if c := meta.FindStatusCondition(conds, udnv1.ConditionHostSubnetsAllocated); c != nil {
		cc := *c // conds is the cache's own (listed without a copy)
		n.HostSubnets = &cc
	}
	published, known := l.nadSubnets(ctx, n.UID)
	for _, s := range spec.Layer3.Subnets {
		p, err := netip.ParsePrefix(string(s.CIDR))
		if err != nil {
			return false
		}
		if known && !published[p.Masked()] {
			// Appended but held back (a conflict after admission, or the
			// NAD not yet updated): no host subnets before the NAD has it.
			continue
		}
		bits := int(s.HostSubnet)
		if bits == 0 {
			bits = idalloc.DefaultHostBits(p)
		}
		n.Subnets = append(n.Subnets, idalloc.ClusterSubnet{CIDR: p.Masked(), HostBits: bits})
	}
	return true
}

// maxParsedNADs bounds nadSubnetCache.parsed: four times the network IDs
// there are.
const maxParsedNADs = 4 * ovnk.MaxNetworkID

// nadSubnetCache is each network's NAD subnets, verified and parsed once per
// version of the NAD.
type nadSubnetCache struct {
	// guard checks the NADs whose subnets nadSubnets reads; it locks itself.
	guard *nadtrust.Guard
	// mu guards parsed; nadSubnets holds it while it checks a NAD's owner
	// (the guard may read the apiserver).
	mu     sync.Mutex
	parsed map[types.UID]parsedNAD // by network UID
}

// parsedNAD is one network's NAD subnets, for the NAD's version.
type parsedNAD struct {
	nad     types.UID
	version string
	subnets map[netip.Prefix]bool
	ok      bool
}

// nadSubnets are the subnets a network's NAD publishes (any of its NADs that
// passes the ownership rule, ovnk/nadtrust: they share the config); known is
// false while it has none, and the spec's subnets are used. A NAD that only
// claims the network's UID is reported and never read.
func (l *Lister) nadSubnets(ctx context.Context, uid types.UID) (map[netip.Prefix]bool, bool) {
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := l.client.List(ctx, &nads, client.MatchingFields{l.index: string(uid)}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, false
	}
	// Every node's reconcile asks for every Layer3 network's subnets: verify
	// and parse each network's NAD config once per network (its first
	// trusted NAD's version).
	c := &l.nads
	c.mu.Lock()
	defer c.mu.Unlock()
	var nad *nadv1.NetworkAttachmentDefinition
	for i := range nads.Items {
		n := &nads.Items[i]
		if p, ok := c.parsed[uid]; ok && p.nad == n.UID && p.version == n.ResourceVersion {
			return p.subnets, p.ok
		}
		if _, trusted, err := c.guard.Trusted(ctx, n); err != nil {
			return nil, false
		} else if trusted {
			nad = n
			break
		}
	}
	if nad == nil {
		return nil, false
	}
	out, ok := parseNADSubnets(nad)
	if c.parsed == nil || len(c.parsed) > maxParsedNADs {
		c.parsed = map[types.UID]parsedNAD{} // drop deleted networks' entries now and then
	}
	c.parsed[uid] = parsedNAD{nad: nad.UID, version: nad.ResourceVersion, subnets: out, ok: ok}
	return out, ok
}

func parseNADSubnets(nad *nadv1.NetworkAttachmentDefinition) (map[netip.Prefix]bool, bool) {
	conf, err := netconf.Parse(nad.Spec.Config)
	if err != nil {
		return nil, false
	}
	subnets, err := conf.SubnetPrefixes()
	if err != nil {
		return nil, false
	}
	out := make(map[netip.Prefix]bool, len(subnets))
	for _, p := range subnets {
		out[p.Masked()] = true
	}
	return out, true
}
