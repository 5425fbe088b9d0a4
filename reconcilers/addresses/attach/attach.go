// Package attach gives pods their k8s.ovn.org/pod-networks entries on every
// network besides Primary Layer2 (which package addresses keeps, with its
// IPAMClaims and VMs), as upstream OVN-Kubernetes does:
//
//   - Layer3, Primary or Secondary: the address comes from the pod's node's
//     host subnet of the network (the node's k8s.ovn.org/node-subnets), one
//     pool per network and node that never hands out the subnet's network
//     address, its first address (the gateway), its second (the management
//     port) nor, for IPv4, its broadcast address (upstream's logical switch
//     manager, pkg/ovn/logical_switch_manager, over pkg/allocator/ip);
//   - Secondary Layer2 and Localnet with subnets: one pool per network over
//     its subnets without gateway nor management port, less its
//     excludeSubnets, and on Layer2 a tunnel_id per pod (upstream's cluster
//     manager, pkg/clustermanager/pod/allocator.go);
//   - Secondary Layer2 and Localnet without subnets: the MAC only.
//
// On a Secondary Layer2 or Localnet network with subnets and persistent IPs
// (its NAD's allowPersistentIPs), a pod whose NetworkSelectionElement names
// an IPAMClaim (ipam-claim-reference) draws its addresses for the claim, not
// for itself: every pod naming the claim (a VM's migration source and
// target) gets the same addresses, which stay held when the pods go and are
// released with the claim (upstream's pkg/allocator/pod/pod_annotation.go
// and pkg/persistentips). On any other network the reference is ignored, as
// upstream ignores it.
//
// The MAC is the pod's request, else derived from the first address
// (util.IPAddrToHWAddr), else random (util.GenerateRandMAC). An entry once
// written is the pod's allocation: it is restored, never rewritten.
//
// An Allocator is not safe for concurrent use: its caller holds a lock
// across the allocation and the write of the pod's annotation. Invariant:
// every hold in pods is held in its pool (owner attachmentOwner, or the
// IPAMClaim it names), and Forget releases exactly the holds it recorded.
package attach

import (
	"crypto/rand"
	"fmt"
	"net"
	"net/netip"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
	"github.com/udnkit/udnkit/reconcilers/addresses/ipalloc"
	"github.com/udnkit/udnkit/reconcilers/idalloc"
)

// Topologies as a NAD's config names them.
var (
	TopologyLayer2 = strings.ToLower(string(udnv1.NetworkTopologyLayer2))
	TopologyLayer3 = strings.ToLower(string(udnv1.NetworkTopologyLayer3))
)

// Network is what an attachment's entry depends on, read from its NAD's
// config.
type Network struct {
	// Name is the OVN network name (the NetConf's name).
	Name string
	// Topology is TopologyLayer2, TopologyLayer3 or ovnk.TopologyLocalnet.
	Topology string
	Primary  bool
	// Subnets are the cluster subnets (Layer3) or the pool's subnets
	// (Layer2, Localnet; none: no IPAM).
	Subnets        []netip.Prefix
	ExcludeSubnets []netip.Prefix
	// JoinSubnets are a Primary network's join subnets.
	JoinSubnets []netip.Prefix
	// PersistentIPs is the NAD's allowPersistentIPs.
	PersistentIPs bool
}

// HonoursClaims says whether an IPAMClaim reference gives addresses on the
// network: a Layer2 or Localnet network with IPAM and persistent IPs
// (upstream's hasPersistentIPs in pkg/allocator/pod/pod_annotation.go, and
// FindIPAMClaim in pkg/persistentips/allocator.go refusing Layer3).
func (n Network) HonoursClaims() bool {
	return n.PersistentIPs && len(n.Subnets) > 0 && n.Topology != TopologyLayer3
}

// Request is what the pod's NetworkSelectionElement asks for.
type Request struct {
	// IPs are static addresses: honoured on networks without IPAM, refused
	// on the others (upstream's validateStaticIPRequest).
	IPs []string
	// MAC replaces the derived one.
	MAC string
	// Gateways are the element's default-route.
	Gateways []netip.Addr
	// Claim is the element's ipam-claim-reference, kept only where the
	// network HonoursClaims.
	Claim string
}

// Attachment is one pod's attachment to a network through one NAD.
type Attachment struct {
	// Key is the NAD key ("namespace/name"), the entry's key.
	Key     string
	Network Network
	// Node runs the pod; HostSubnets are its host subnets of a Layer3
	// network (none yet: the attachment waits).
	Node        string
	HostSubnets []netip.Prefix
	Request     Request
}

// Reasons besides ipalloc's.
const (
	// ReasonHostSubnetMissing: the pod's node has no host subnet of the
	// Layer3 network yet; the pod gets its entry once it has.
	ReasonHostSubnetMissing = "HostSubnetMissing"
)

// pool is one network's (Layer3: one network and node's) addresses.
type pool struct {
	cfg     ipalloc.Config
	ips     *ipalloc.Pool        // nil: no IPAM
	tunnels *idalloc.IDAllocator // Layer2 only
}

// hold is what a pod holds on a pool: its addresses, held by owner (the
// pod, or the IPAMClaim it names), and its tunnel ID, held by the pod.
type hold struct{ pool, owner string }

type podRecord struct {
	uid   types.UID
	holds map[string]hold // by NAD key
}

// Allocator holds every pool and what each pod holds.
type Allocator struct {
	serviceCIDRs []netip.Prefix
	pools        map[string]*pool
	pods         map[types.NamespacedName]*podRecord
}

// New returns an empty Allocator; serviceCIDRs are routed on Primary
// networks.
func New(serviceCIDRs []netip.Prefix) *Allocator {
	return &Allocator{serviceCIDRs: serviceCIDRs, pools: map[string]*pool{}, pods: map[types.NamespacedName]*podRecord{}}
}

// PoolID names the pool an attachment draws from: the network, and on
// Layer3 its node.
func PoolID(att Attachment) string {
	if att.Network.Topology == TopologyLayer3 {
		return att.Network.Name + "@" + att.Node
	}
	return att.Network.Name
}

// poolConfig is the attachment's pool configuration; ok false: no IPAM.
func poolConfig(att Attachment) (ipalloc.Config, bool, error) {
	n := att.Network
	if n.Topology == TopologyLayer3 {
		if len(att.HostSubnets) == 0 {
			return ipalloc.Config{}, false, &ipalloc.Error{Reason: ReasonHostSubnetMissing,
				Message: fmt.Sprintf("node %s has no host subnet of network %s in annotation %s yet", att.Node, n.Name, ovnk.AnnotationNodeSubnets)}
		}
		return ipalloc.Config{Subnets: att.HostSubnets}, true, nil
	}
	if len(n.Subnets) == 0 {
		return ipalloc.Config{}, false, nil
	}
	return ipalloc.Config{Subnets: n.Subnets, ExcludeSubnets: n.ExcludeSubnets, NoGateway: true}, true, nil
}

// Ensure makes the attachment's pool exist with its current configuration
// and says whether it is new (or was replaced): the caller then restores
// every entry already written on the pool's network (Restore) before the
// pool hands out anything. A pool replaced drops its holds.
func (a *Allocator) Ensure(att Attachment) (fresh bool, err error) {
	cfg, ipam, err := poolConfig(att)
	if err != nil {
		return false, err
	}
	id := PoolID(att)
	if p, ok := a.pools[id]; ok && reflect.DeepEqual(p.cfg, cfg) && (p.ips != nil) == ipam {
		return false, nil
	}
	p := &pool{cfg: cfg}
	if ipam {
		if p.ips, err = ipalloc.New(cfg); err != nil {
			return false, &ipalloc.Error{Reason: ipalloc.ReasonInvalidRequest, Message: fmt.Sprintf("network %s: %v", att.Network.Name, err)}
		}
	}
	if att.Network.Topology == TopologyLayer2 {
		p.tunnels = idalloc.NewIDAllocator("pod tunnel ID", podannotation.FirstPodTunnelID, podannotation.MaxPodTunnelID)
	}
	a.dropHolds(id)
	a.pools[id] = p
	return true, nil
}

// dropHolds forgets the holds on a pool being replaced.
func (a *Allocator) dropHolds(id string) {
	for _, rec := range a.pods {
		for key, h := range rec.holds {
			if h.pool == id {
				delete(rec.holds, key)
			}
		}
	}
}

// Held says whether the pod's holds include the attachment's.
func (a *Allocator) Held(nn types.NamespacedName, uid types.UID, att Attachment) bool {
	rec := a.pods[nn]
	if rec == nil || rec.uid != uid {
		return false
	}
	h, ok := rec.holds[att.Key]
	return ok && h.pool == PoolID(att)
}

func podOwner(nn types.NamespacedName) string { return "pod/" + nn.Namespace + "/" + nn.Name }

// attachmentOwner owns what the pod holds through one pod-networks key: the
// pod itself for its first attachment through a NAD, "pod/<ns>/<name>#<n>"
// for the n-th again (podannotation.IndexedNADKey), so that a pod naming a
// NAD twice holds two addresses and two tunnel IDs, as upstream's cluster
// manager allocates per NAD key (podIdAllocationName(nadKey, uid) in
// pkg/clustermanager/pod/allocator.go).
func attachmentOwner(nn types.NamespacedName, key string) string {
	if nad, ok := podannotation.NADOfKey(key); ok && nad != key {
		return podOwner(nn) + "#" + strings.TrimPrefix(key, nad+"/")
	}
	return podOwner(nn)
}

// ClaimOwner is the owner of an IPAMClaim's addresses in a pool.
func ClaimOwner(namespace, name string) string { return claimPrefix + namespace + "/" + name }

const claimPrefix = "claim/"

// ClaimOf is the IPAMClaim an owner names (ok false: not a claim's).
func ClaimOf(owner string) (nn types.NamespacedName, ok bool) {
	rest, ok := strings.CutPrefix(owner, claimPrefix)
	if !ok {
		return nn, false
	}
	nn.Namespace, nn.Name, ok = strings.Cut(rest, "/")
	return nn, ok
}

// ClaimHolders are the pods holding a claim's addresses, but for skip.
func (a *Allocator) ClaimHolders(owner string, skip types.NamespacedName) []types.NamespacedName {
	var out []types.NamespacedName
	for nn, rec := range a.pods {
		if nn == skip {
			continue
		}
		for _, h := range rec.holds {
			if h.owner == owner {
				out = append(out, nn)
				break
			}
		}
	}
	return out
}

// addressOwner owns the pod's addresses on att's network: the IPAMClaim
// it names, else the pod.
func addressOwner(nn types.NamespacedName, att Attachment) string {
	if att.Request.Claim != "" {
		return ClaimOwner(nn.Namespace, att.Request.Claim)
	}
	return attachmentOwner(nn, att.Key)
}

// record remembers a hold, forgetting a previous pod of the same name.
func (a *Allocator) record(nn types.NamespacedName, uid types.UID, key string, h hold) {
	rec := a.pods[nn]
	if rec != nil && rec.uid != uid {
		a.Forget(nn)
		rec = nil
	}
	if rec == nil {
		rec = &podRecord{uid: uid, holds: map[string]hold{}}
		a.pods[nn] = rec
	}
	rec.holds[key] = h
}

// Forget releases everything the pod holds (it is gone or finished) but
// the addresses of the IPAMClaims it named, which it returns: those stay
// held until the claim goes (ReleaseClaim).
func (a *Allocator) Forget(nn types.NamespacedName) (claims []string) {
	rec := a.pods[nn]
	if rec == nil {
		return nil
	}
	delete(a.pods, nn)
	for key, h := range rec.holds {
		owner := attachmentOwner(nn, key)
		if h.owner != owner && !slices.Contains(claims, h.owner) {
			claims = append(claims, h.owner)
		}
		if p := a.pools[h.pool]; p != nil {
			if p.ips != nil && h.owner == owner {
				p.ips.Release(h.owner)
			}
			if p.tunnels != nil {
				p.tunnels.ReleaseOwner(owner)
			}
		}
	}
	return claims
}

// RestoreClaim makes att's pool hold the addresses an IPAMClaim's
// status.ips records (MAC: the one requested, else the one derived from the
// first address), unless the claim holds addresses there already.
func (a *Allocator) RestoreClaim(att Attachment, owner string, ips []string) error {
	p := a.pools[PoolID(att)]
	if p == nil || p.ips == nil || len(ips) == 0 {
		return nil
	}
	if _, ok := p.ips.Lookup(owner); ok {
		return nil
	}
	alloc, err := ClaimAllocation(ips, att.Request.MAC)
	if err != nil {
		return err
	}
	return p.ips.Restore(owner, alloc)
}

// ClaimAllocation is the allocation an IPAMClaim's status.ips (non-empty)
// records: its addresses, and the requested MAC, else the one derived from
// the first address.
func ClaimAllocation(ips []string, requestedMAC string) (ipalloc.Allocation, error) {
	var alloc ipalloc.Allocation
	for _, s := range ips {
		pfx, err := netip.ParsePrefix(s)
		if err != nil {
			return alloc, &ipalloc.Error{Reason: ipalloc.ReasonInternalError, Message: fmt.Sprintf("status.ips: %v", err)}
		}
		alloc.IPs = append(alloc.IPs, pfx)
	}
	alloc.MAC = ovnk.MACFromIP(alloc.IPs[0].Addr())
	if requestedMAC != "" {
		if hw, err := net.ParseMAC(requestedMAC); err == nil {
			alloc.MAC = hw
		}
	}
	return alloc, nil
}

// ReleaseClaim frees an IPAMClaim's addresses (the claim is gone) in every
// pool where no pod holds them still; a pool whose pods still hold them
// keeps them until restart, when nothing restores them.
func (a *Allocator) ReleaseClaim(owner string) {
	held := map[string]bool{}
	for _, rec := range a.pods {
		for _, h := range rec.holds {
			if h.owner == owner {
				held[h.pool] = true
			}
		}
	}
	for id, p := range a.pools {
		if p.ips != nil && !held[id] {
			p.ips.Release(owner)
		}
	}
}

// Restore records an entry already written for the attachment (before a
// restart, or by this allocator): its addresses and tunnel ID are held
// again. It refuses an entry whose addresses or tunnel ID another pod
// holds, or that the pool could never have handed out; on error nothing
// changes.
func (a *Allocator) Restore(nn types.NamespacedName, uid types.UID, att Attachment, pn *podannotation.PodNetwork) error {
	p := a.pools[PoolID(att)]
	if p == nil {
		return fmt.Errorf("network %s: no pool", PoolID(att))
	}
	if a.Held(nn, uid, att) {
		return nil
	}
	parsed, err := pn.Parse()
	if err != nil {
		return &ipalloc.Error{Reason: ipalloc.ReasonInvalidRequest, Message: err.Error()}
	}
	owner, podOwn := addressOwner(nn, att), attachmentOwner(nn, att.Key)
	_, claimHeld := lookup(p, owner)
	if p.ips != nil {
		if err := p.ips.Restore(owner, ipalloc.Allocation{IPs: parsed.IPs, MAC: parsed.MAC}); err != nil {
			return err
		}
	}
	if p.tunnels != nil && parsed.TunnelID != 0 {
		if err := p.tunnels.Reserve(podOwn, parsed.TunnelID); err != nil {
			if p.ips != nil && !claimHeld {
				p.ips.Release(owner)
			}
			holder, _ := p.tunnels.Owner(parsed.TunnelID)
			return &ipalloc.Error{Reason: ipalloc.ReasonInvalidRequest, Owner: holder, Message: err.Error()}
		}
	}
	a.record(nn, uid, att.Key, hold{pool: PoolID(att), owner: owner})
	return nil
}

// Allocate gives the pod its addresses (and tunnel ID) on the attachment's
// network, Ensure'd and restored before, and returns its entry. On error
// nothing is held.
func (a *Allocator) Allocate(nn types.NamespacedName, uid types.UID, att Attachment) (podannotation.PodNetwork, error) {
	p := a.pools[PoolID(att)]
	if p == nil {
		return podannotation.PodNetwork{}, fmt.Errorf("network %s: no pool", PoolID(att))
	}
	owner, podOwn := addressOwner(nn, att), attachmentOwner(nn, att.Key)
	_, claimHeld := lookup(p, owner)
	var alloc ipalloc.Allocation
	var err error
	switch {
	case p.ips != nil && len(att.Request.IPs) > 0:
		return podannotation.PodNetwork{}, &ipalloc.Error{Reason: ipalloc.ReasonInvalidRequest, Message: fmt.Sprintf(
			"ips %v: static addresses are taken on Primary Layer2 networks and on networks without subnets only, and network %s has subnets", att.Request.IPs, att.Network.Name)}
	case p.ips != nil:
		alloc, err = p.ips.Allocate(owner, ipalloc.Request{MAC: att.Request.MAC})
	default:
		alloc, err = staticAllocation(att.Request)
	}
	if err != nil {
		return podannotation.PodNetwork{}, err
	}
	release := func() {
		if p.ips != nil && !claimHeld {
			p.ips.Release(owner)
		}
	}
	tunnelID := 0
	if held := tunnelsHeld(p, podOwn); len(held) > 0 {
		// A write that failed before: the pod keeps what it was given.
		tunnelID = held[0]
	} else if p.tunnels != nil {
		if tunnelID, err = p.tunnels.Allocate(podOwn); err != nil {
			release()
			return podannotation.PodNetwork{}, &ipalloc.Error{Reason: ipalloc.ReasonSubnetExhausted, Message: err.Error()}
		}
	}
	pn, err := a.entry(att, alloc, tunnelID)
	if err != nil {
		release()
		if p.tunnels != nil {
			p.tunnels.ReleaseOwner(podOwn)
		}
		return pn, &ipalloc.Error{Reason: ipalloc.ReasonInvalidRequest, Message: err.Error()}
	}
	a.record(nn, uid, att.Key, hold{pool: PoolID(att), owner: owner})
	return pn, nil
}

// lookup is owner's allocation in p, if p has IPAM and owner holds one.
func lookup(p *pool, owner string) (ipalloc.Allocation, bool) {
	if p.ips == nil {
		return ipalloc.Allocation{}, false
	}
	return p.ips.Lookup(owner)
}

func tunnelsHeld(p *pool, owner string) []int {
	if p.tunnels == nil {
		return nil
	}
	return p.tunnels.Held(owner)
}

// entry writes the attachment's entry for alloc.
func (a *Allocator) entry(att Attachment, alloc ipalloc.Allocation, tunnelID int) (podannotation.PodNetwork, error) {
	n := att.Network
	if n.Topology == TopologyLayer3 {
		return podannotation.Layer3PodNetwork(alloc.IPs, alloc.MAC, n.Subnets, n.Primary, a.serviceCIDRs, n.JoinSubnets, att.Request.Gateways)
	}
	return podannotation.SecondaryPodNetwork(alloc.IPs, alloc.MAC, att.Request.Gateways, tunnelID)
}

// staticAllocation is a network without IPAM's allocation: the requested
// addresses, and the requested MAC, else the one derived from the first
// address, else a random one.
func staticAllocation(req Request) (ipalloc.Allocation, error) {
	var out ipalloc.Allocation
	for i, s := range req.IPs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return out, &ipalloc.Error{Reason: ipalloc.ReasonInvalidRequest, Address: s,
				Message: fmt.Sprintf("ips[%d] %q: a network without subnets takes addresses as CIDRs: %v", i, s, err)}
		}
		out.IPs = append(out.IPs, p)
	}
	switch {
	case req.MAC != "":
		hw, err := net.ParseMAC(req.MAC)
		if err == nil {
			err = podannotation.CheckUnicastMAC(hw)
		}
		if err != nil {
			return out, &ipalloc.Error{Reason: ipalloc.ReasonInvalidRequest, Address: req.MAC, Message: fmt.Sprintf("mac %q: %v", req.MAC, err)}
		}
		out.MAC = hw
	case len(out.IPs) > 0:
		out.MAC = ovnk.MACFromIP(out.IPs[0].Addr())
	default:
		out.MAC = randomMAC()
	}
	return out, nil
}

// randomMAC is upstream's GenerateRandMAC: random, locally administered,
// unicast.
func randomMAC() net.HardwareAddr {
	hw := make(net.HardwareAddr, 6)
	_, _ = rand.Read(hw) // crypto/rand.Read never fails
	hw[0] = (hw[0] | 0x02) &^ 0x01
	return hw
}
