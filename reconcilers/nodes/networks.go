package nodes

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
	"github.com/udnkit/udnkit/reconcilers/netids"
)

// layer3Network is a Layer3 UDN or CUDN as the node controller sees it.
type layer3Network struct {
	name    string // OVN network name, the key in k8s.ovn.org/node-subnets
	kind    string
	obj     types.NamespacedName
	uid     types.UID
	subnets []netids.ClusterSubnet
	// hostSubnets is the network's HostSubnetsAllocated condition as last
	// read (nil when it has none).
	hostSubnets *metav1.Condition
}

// ref is an object reference the event recorder accepts for the network.
func (n layer3Network) ref() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(udnv1.GroupVersion.String())
	u.SetKind(n.kind)
	u.SetName(n.obj.Name)
	u.SetNamespace(n.obj.Namespace)
	u.SetUID(n.uid)
	return u
}

// networkList is the Layer3 networks as last listed from the cache.
type networkList struct {
	// gen counts network and NAD events (an atomic).
	gen atomic.Int64
	// mu guards nets, netsGen and at; cachedLayer3Networks holds it while
	// it lists the networks, so one reconcile lists them while the others
	// wait (and then mostly reuse its list).
	mu      sync.Mutex
	nets    []layer3Network // the list as of network generation netsGen
	netsGen int64
	at      time.Time
}

// changed says that a network or NAD changed.
func (l *networkList) changed() { l.gen.Add(1) }

// cachedLayer3Networks is layer3Networks, listed once per change of a
// network or NAD rather than once per node (a change reconciles every node),
// and during a burst of changes at most once per pass delay: a burst would
// otherwise list every network once per node reconcile. stale says that
// networks changed since the list; the caller reconciles again later.
func (r *reconciler) cachedLayer3Networks(ctx context.Context) (nets []layer3Network, gen int64, stale bool, err error) {
	l := &r.list
	gen = l.gen.Load()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.nets != nil && (l.netsGen == gen || time.Since(l.at) < r.pace.listAge()) {
		return l.nets, l.netsGen, l.netsGen != gen, nil
	}
	at := time.Now()
	if nets, err = r.layer3Networks(ctx); err != nil {
		return nil, 0, false, err
	}
	l.nets, l.netsGen, l.at = nets, gen, at
	return nets, gen, false, nil
}

// layer3Networks lists the Layer3 networks. Networks being deleted keep
// their host subnets until they are gone: their pods may still run.
func (r *reconciler) layer3Networks(ctx context.Context) ([]layer3Network, error) {
	var out []layer3Network
	var udns udnv1.UserDefinedNetworkList
	if err := r.client.List(ctx, &udns, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	for _, u := range udns.Items {
		n := layer3Network{name: ovnk.UDNNetworkName(u.Namespace, u.Name), kind: udnv1.KindUserDefinedNetwork, obj: client.ObjectKeyFromObject(&u), uid: u.UID}
		if r.fillLayer3(ctx, &n, u.Spec.Network(), u.Status.Conditions) {
			out = append(out, n)
		}
	}
	var cudns udnv1.ClusterUserDefinedNetworkList
	if err := r.client.List(ctx, &cudns, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	for _, c := range cudns.Items {
		n := layer3Network{name: ovnk.CUDNNetworkName(c.Name), kind: udnv1.KindClusterUserDefinedNetwork, obj: client.ObjectKeyFromObject(&c), uid: c.UID}
		if r.fillLayer3(ctx, &n, c.Spec.Network, c.Status.Conditions) {
			out = append(out, n)
		}
	}
	return out, nil
}

// fillLayer3 fills n's cluster subnets and condition from a network's spec
// and status; false when the network is not Layer3 or a subnet is
// malformed.
func (r *reconciler) fillLayer3(ctx context.Context, n *layer3Network, spec udnv1.NetworkSpec, conds []metav1.Condition) bool {
	if spec.Topology != udnv1.NetworkTopologyLayer3 || spec.Layer3 == nil {
		return false
	}
	if c := meta.FindStatusCondition(conds, udnv1.ConditionHostSubnetsAllocated); c != nil {
		cc := *c // conds is the cache's own (listed without a copy)
		n.hostSubnets = &cc
	}
	published, known := r.nadSubnets(ctx, n.uid)
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
			bits = netids.DefaultHostBits(p)
		}
		n.subnets = append(n.subnets, netids.ClusterSubnet{CIDR: p.Masked(), HostBits: bits})
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
func (r *reconciler) nadSubnets(ctx context.Context, uid types.UID) (map[netip.Prefix]bool, bool) {
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := r.client.List(ctx, &nads, client.MatchingFields{indexNADController: string(uid)}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, false
	}
	// Every node's reconcile asks for every Layer3 network's subnets: verify
	// and parse each network's NAD config once per network (its first
	// trusted NAD's version).
	c := &r.nads
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
	conf, err := ovnk.Parse(nad.Spec.Config)
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
