package idalloc

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"net/netip"
	"slices"
	"sync"
)

// ClusterSubnet is one cluster subnet of a Layer3 network, split into host
// subnets of prefix length HostBits.
type ClusterSubnet struct {
	CIDR     netip.Prefix
	HostBits int
}

// DefaultHostBits is the host subnet length OVN-Kubernetes uses when a Layer3
// subnet omits hostSubnet: 24 for IPv4 and 64 for IPv6.
func DefaultHostBits(cidr netip.Prefix) int {
	if cidr.Addr().Is4() {
		return 24
	}
	return 64
}

type clusterSubnetState struct {
	ClusterSubnet
	is4   bool
	count uint64 // host subnets in the cluster subnet (capped at 2^62)
	used  map[uint64]ownerID
	base  uint128 // the cluster subnet's first address
	shift uint    // address bits - HostBits: a host subnet is 2^shift addresses
	order
}

// order is the order upstream's subnet allocator
// (pkg/clustermanager/node/subnet_allocator.go: subnetAllocatorRange's
// foreach and generateSubnet) hands a cluster subnet's host subnets out in:
// the sequence numbers 0..seq-1 from a cursor, each naming one host subnet.
type order struct {
	seq  uint64 // sequence numbers: 2^(HostBits - cluster prefix length), at most 2^24
	next uint64 // the sequence number the next search starts at
	// skipLow16: an IPv6 cluster subnet of at least 2^16 host subnets skips
	// every sequence number whose low 16 bits are 0 (the all-zero subnet
	// first), whose zero word would compress out of the address. IPv4 skips
	// none.
	skipLow16 bool
	// rot, on IPv4 when the host subnet's boundary is not on an octet and
	// its index spills into the next octet, rotates the index left by rot
	// bits within its width: the host subnets with zeros in the shared
	// octet come first (10.1.0.0/16 by /26: 10.1.0.0, 10.1.1.0, …,
	// 10.1.255.0, then 10.1.0.64, …).
	rot, width uint
}

// newOrder is upstream's order for host subnets of 2^hostBits addresses in
// a cluster subnet split into 2^width of them.
func newOrder(is4 bool, width, hostBits uint) order {
	o := order{seq: 1 << min(width, 24), width: width}
	switch {
	case is4 && hostBits%8 != 0 && (hostBits-1)/8 != (hostBits+width-1)/8:
		o.rot = 8 - hostBits%8
	case !is4 && width >= 16:
		o.skipLow16 = true
	}
	return o
}

// at is the index of the host subnet sequence number n names; false when
// upstream skips n.
func (o order) at(n uint64) (uint64, bool) {
	if o.skipLow16 && n&0xFFFF == 0 {
		return 0, false
	}
	if o.rot != 0 {
		n = (n<<o.rot)&(1<<o.width-1) | n>>(o.width-o.rot)
	}
	return n, true
}

// hold is one host subnet an owner holds: the index of its cluster subnet
// in HostSubnetAllocator.subnets plus one (0: none) and its index there.
type hold struct {
	idx uint64
	sub uint32
}

// holds is what one owner holds: at most one host subnet per IP family, in
// the order they were taken.
type holds [2]hold

// HostSubnetAllocator gives each node one host subnet per IP family of a
// Layer3 network, trying the cluster subnets in spec order and each in
// upstream's order (see order). Appending cluster subnets keeps every
// assignment. It is safe for concurrent use.
//
// One allocator per Layer3 network holds a host subnet per node: at 2,000
// networks and 500 nodes that is a million entries, so an entry is a few
// integers (owners are interned, see ownerID), not strings and slices.
type HostSubnetAllocator struct {
	mu      sync.Mutex
	subnets []*clusterSubnetState
	owners  map[ownerID]holds
}

// NewHostSubnetAllocator returns an allocator over the cluster subnets.
func NewHostSubnetAllocator(subnets []ClusterSubnet) (*HostSubnetAllocator, error) {
	a := &HostSubnetAllocator{owners: map[ownerID]holds{}}
	return a, a.SetClusterSubnets(subnets)
}

// SetClusterSubnets updates the cluster subnets. The known ones must come
// first, unchanged (Layer3 subnets are append-only); new ones are appended.
func (a *HostSubnetAllocator) SetClusterSubnets(subnets []ClusterSubnet) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(subnets) < len(a.subnets) {
		return fmt.Errorf("cluster subnets cannot be removed (had %d, got %d)", len(a.subnets), len(subnets))
	}
	for i, s := range a.subnets {
		if s.ClusterSubnet != subnets[i] {
			return fmt.Errorf("cluster subnet %d changed from %v/%d to %v/%d; subnets may only be appended", i, s.CIDR, s.HostBits, subnets[i].CIDR, subnets[i].HostBits)
		}
	}
	for _, s := range subnets[len(a.subnets):] {
		s.CIDR = s.CIDR.Masked()
		bits := s.CIDR.Addr().BitLen()
		if s.HostBits <= s.CIDR.Bits() || s.HostBits > bits {
			return fmt.Errorf("hostSubnet /%d must be longer than cluster subnet %v and at most /%d", s.HostBits, s.CIDR, bits)
		}
		n := s.HostBits - s.CIDR.Bits()
		if n > 62 {
			n = 62
		}
		is4, shift := s.CIDR.Addr().Is4(), uint(bits-s.HostBits)
		a.subnets = append(a.subnets, &clusterSubnetState{ClusterSubnet: s, is4: is4, count: 1 << n,
			used: map[uint64]ownerID{}, base: u128(s.CIDR.Addr()), shift: shift,
			order: newOrder(is4, uint(s.HostBits-s.CIDR.Bits()), shift)})
	}
	return nil
}

func (s *clusterSubnetState) prefix(idx uint64) netip.Prefix {
	return netip.PrefixFrom(s.base.add(uint128{lo: idx}.shl(s.shift)).addr(s.is4), s.HostBits)
}

func (s *clusterSubnetState) index(p netip.Prefix) (uint64, bool) {
	if p.Bits() != s.HostBits || !s.CIDR.Contains(p.Addr()) || p.Masked() != p {
		return 0, false
	}
	idx := u128(p.Addr()).sub(s.base).shr(s.shift)
	if idx.hi != 0 || idx.lo >= s.count {
		return 0, false
	}
	return idx.lo, true
}

// prefixOf is the host subnet h names.
func (a *HostSubnetAllocator) prefixOf(h hold) netip.Prefix {
	return a.subnets[h.sub-1].prefix(h.idx)
}

// list is what hs holds, in the order taken.
func (a *HostSubnetAllocator) list(hs holds) []netip.Prefix {
	var out []netip.Prefix
	for _, h := range hs {
		if h.sub != 0 {
			out = append(out, a.prefixOf(h))
		}
	}
	return out
}

// Reserve records that owner holds host subnet p (rebuilding state from
// k8s.ovn.org/node-subnets). It fails when p is not a host subnet of any
// cluster subnet or is held by another owner.
func (a *HostSubnetAllocator) Reserve(owner string, p netip.Prefix) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, s := range a.subnets {
		idx, ok := s.index(p)
		if !ok {
			continue
		}
		id := internOwner(owner)
		if cur, used := s.used[idx]; used {
			if cur == id {
				return nil
			}
			return fmt.Errorf("host subnet %v is already held by %s", p, ownerName(cur))
		}
		hs := a.owners[id]
		for _, h := range hs {
			if h.sub != 0 && a.subnets[h.sub-1].is4 == s.is4 {
				return fmt.Errorf("%s already holds host subnet %v of the same IP family as %v", owner, a.prefixOf(h), p)
			}
		}
		s.used[idx] = id
		hs.add(hold{idx: idx, sub: uint32(i + 1)})
		a.owners[id] = hs
		return nil
	}
	return fmt.Errorf("%v is not a host subnet of any cluster subnet", p)
}

// add puts h in the first free slot (an owner holds at most one host subnet
// per IP family).
func (hs *holds) add(h hold) {
	if hs[0].sub == 0 {
		hs[0] = h
	} else {
		hs[1] = h
	}
}

// Allocate returns owner's host subnets, one per IP family of the cluster
// subnets, allocating those it lacks. On error nothing new is kept.
func (a *HostSubnetAllocator) Allocate(owner string) ([]netip.Prefix, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	id := internOwner(owner)
	hs := a.owners[id]
	have := func(is4 bool) bool {
		return slices.ContainsFunc(hs[:], func(h hold) bool { return h.sub != 0 && a.subnets[h.sub-1].is4 == is4 })
	}
	var took []hold
	for _, is4 := range []bool{true, false} {
		if have(is4) {
			continue
		}
		found, exists := false, false
		for i, s := range a.subnets {
			if s.is4 != is4 {
				continue
			}
			exists = true
			if idx, ok := s.take(id); ok {
				took = append(took, hold{idx: idx, sub: uint32(i + 1)})
				found = true
				break
			}
		}
		if exists && !found {
			for _, h := range took {
				delete(a.subnets[h.sub-1].used, h.idx)
			}
			return nil, fmt.Errorf("every %s host subnet of %s is in use: %w", family(is4), a.describe(is4), ErrExhausted)
		}
	}
	for _, h := range took {
		hs.add(h)
	}
	if hs[0].sub != 0 {
		a.owners[id] = hs
	}
	return a.list(hs), nil
}

// take gives id the first free host subnet in upstream's order from the
// cursor and moves the cursor past it, as upstream's allocateNetwork does
// (also when Allocate then gives it back because another family is
// exhausted); a full cluster subnet sends the cursor back to the start.
func (s *clusterSubnetState) take(id ownerID) (uint64, bool) {
	if uint64(len(s.used)) < s.count {
		for i, n := uint64(0), s.next; i < s.seq; i++ {
			if idx, ok := s.at(n); ok {
				if _, used := s.used[idx]; !used {
					s.used[idx] = id
					s.next = (n + 1) % s.seq
					return idx, true
				}
			}
			if n++; n == s.seq {
				n = 0
			}
		}
	}
	s.next = 0
	return 0, false
}

func (a *HostSubnetAllocator) describe(is4 bool) string {
	out := ""
	for _, s := range a.subnets {
		if s.CIDR.Addr().Is4() == is4 {
			if out != "" {
				out += ", "
			}
			out += fmt.Sprintf("%v (hostSubnet %d)", s.CIDR, s.HostBits)
		}
	}
	return out
}

func family(is4 bool) string {
	if is4 {
		return "IPv4"
	}
	return "IPv6"
}

// Release frees every host subnet owner holds.
func (a *HostSubnetAllocator) Release(owner string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	id, ok := lookupOwner(owner)
	if !ok {
		return
	}
	for _, h := range a.owners[id] {
		if h.sub != 0 {
			if s := a.subnets[h.sub-1]; s.used[h.idx] == id {
				delete(s.used, h.idx)
			}
		}
	}
	delete(a.owners, id)
}

// Holdings returns every owner's host subnets.
func (a *HostSubnetAllocator) Holdings() map[string][]netip.Prefix {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string][]netip.Prefix, len(a.owners))
	for id, hs := range a.owners {
		out[ownerName(id)] = a.list(hs)
	}
	return out
}

// Owned returns owner's host subnets.
func (a *HostSubnetAllocator) Owned(owner string) []netip.Prefix {
	a.mu.Lock()
	defer a.mu.Unlock()
	id, ok := lookupOwner(owner)
	if !ok {
		return nil
	}
	return a.list(a.owners[id])
}

// Complete reports whether owner holds exactly ps, in that order, and a host
// subnet of every IP family of the cluster subnets: Allocate would return ps
// and change nothing.
func (a *HostSubnetAllocator) Complete(owner string, ps []netip.Prefix) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	id, ok := lookupOwner(owner)
	if !ok {
		return false
	}
	held := a.list(a.owners[id])
	if len(held) == 0 || !slices.Equal(held, ps) {
		return false
	}
	for _, s := range a.subnets {
		if !slices.ContainsFunc(held, func(p netip.Prefix) bool { return p.Addr().Is4() == s.is4 }) {
			return false
		}
	}
	return true
}

// ownerID is an interned owner (node) name. Every Layer3 network's
// allocator names the same few hundred nodes, each up to a million times in
// all: an ID is 4 bytes where a string is a 16-byte header. Names are never
// forgotten: they are the node names this process has seen.
type ownerID uint32

var owners struct {
	mu    sync.RWMutex
	ids   map[string]ownerID
	names []string
}

func internOwner(name string) ownerID {
	if id, ok := lookupOwner(name); ok {
		return id
	}
	owners.mu.Lock()
	defer owners.mu.Unlock()
	if id, ok := owners.ids[name]; ok {
		return id
	}
	if owners.ids == nil {
		owners.ids = map[string]ownerID{}
	}
	id := ownerID(len(owners.names))
	owners.names = append(owners.names, name)
	owners.ids[name] = id
	return id
}

func lookupOwner(name string) (ownerID, bool) {
	owners.mu.RLock()
	defer owners.mu.RUnlock()
	id, ok := owners.ids[name]
	return id, ok
}

func ownerName(id ownerID) string {
	owners.mu.RLock()
	defer owners.mu.RUnlock()
	return owners.names[id]
}

// uint128 is an IP address as an integer (IPv4 in the low 32 bits), for
// host subnet arithmetic without allocating.
type uint128 struct{ hi, lo uint64 }

func u128(a netip.Addr) uint128 {
	if a.Is4() {
		b := a.As4()
		return uint128{lo: uint64(binary.BigEndian.Uint32(b[:]))}
	}
	b := a.As16()
	return uint128{hi: binary.BigEndian.Uint64(b[:8]), lo: binary.BigEndian.Uint64(b[8:])}
}

func (u uint128) addr(is4 bool) netip.Addr {
	if is4 {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], uint32(u.lo))
		return netip.AddrFrom4(b)
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], u.hi)
	binary.BigEndian.PutUint64(b[8:], u.lo)
	return netip.AddrFrom16(b)
}

func (u uint128) add(v uint128) uint128 {
	lo, carry := bits.Add64(u.lo, v.lo, 0)
	hi, _ := bits.Add64(u.hi, v.hi, carry)
	return uint128{hi, lo}
}

func (u uint128) sub(v uint128) uint128 {
	lo, borrow := bits.Sub64(u.lo, v.lo, 0)
	hi, _ := bits.Sub64(u.hi, v.hi, borrow)
	return uint128{hi, lo}
}

// shl shifts left by n < 128.
func (u uint128) shl(n uint) uint128 {
	switch {
	case n == 0:
		return u
	case n >= 64:
		return uint128{hi: u.lo << (n - 64)}
	}
	return uint128{hi: u.hi<<n | u.lo>>(64-n), lo: u.lo << n}
}

// shr shifts right by n < 128.
func (u uint128) shr(n uint) uint128 {
	switch {
	case n == 0:
		return u
	case n >= 64:
		return uint128{lo: u.hi >> (n - 64)}
	}
	return uint128{hi: u.hi >> n, lo: u.lo>>n | u.hi<<(64-n)}
}
