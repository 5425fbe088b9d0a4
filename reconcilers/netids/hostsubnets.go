package netids

import (
	"fmt"
	"math/big"
	"net/netip"
	"slices"
	"sync"

	"github.com/udnkit/udnkit/ovnk"
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
	count uint64 // host subnets in the cluster subnet (capped at 2^62)
	used  map[uint64]string
	next  uint64
}

// HostSubnetAllocator gives each node one host subnet per IP family of a
// Layer3 network, trying the cluster subnets in spec order. Appending cluster
// subnets keeps every assignment. It is safe for concurrent use.
type HostSubnetAllocator struct {
	mu      sync.Mutex
	subnets []*clusterSubnetState
	owners  map[string][]netip.Prefix
}

// NewHostSubnetAllocator returns an allocator over the cluster subnets.
func NewHostSubnetAllocator(subnets []ClusterSubnet) (*HostSubnetAllocator, error) {
	a := &HostSubnetAllocator{owners: map[string][]netip.Prefix{}}
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
		shift := s.HostBits - s.CIDR.Bits()
		if shift > 62 {
			shift = 62
		}
		a.subnets = append(a.subnets, &clusterSubnetState{ClusterSubnet: s, count: 1 << shift, used: map[uint64]string{}})
	}
	return nil
}

func (s *clusterSubnetState) prefix(idx uint64) netip.Prefix {
	bits := s.CIDR.Addr().BitLen()
	off := new(big.Int).Lsh(new(big.Int).SetUint64(idx), uint(bits-s.HostBits))
	return netip.PrefixFrom(ovnk.AddOffset(s.CIDR.Addr(), off), s.HostBits)
}

func (s *clusterSubnetState) index(p netip.Prefix) (uint64, bool) {
	if p.Bits() != s.HostBits || !s.CIDR.Contains(p.Addr()) || p.Masked() != p {
		return 0, false
	}
	bits := s.CIDR.Addr().BitLen()
	diff := new(big.Int).Sub(new(big.Int).SetBytes(p.Addr().AsSlice()), new(big.Int).SetBytes(s.CIDR.Addr().AsSlice()))
	idx := diff.Rsh(diff, uint(bits-s.HostBits))
	if !idx.IsUint64() || idx.Uint64() >= s.count {
		return 0, false
	}
	return idx.Uint64(), true
}

// Reserve records that owner holds host subnet p (rebuilding state from
// k8s.ovn.org/node-subnets). It fails when p is not a host subnet of any
// cluster subnet or is held by another owner.
func (a *HostSubnetAllocator) Reserve(owner string, p netip.Prefix) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range a.subnets {
		idx, ok := s.index(p)
		if !ok {
			continue
		}
		if cur, used := s.used[idx]; used {
			if cur == owner {
				return nil
			}
			return fmt.Errorf("host subnet %v is already held by %s", p, cur)
		}
		for _, q := range a.owners[owner] {
			if q.Addr().Is4() == p.Addr().Is4() {
				return fmt.Errorf("%s already holds host subnet %v of the same IP family as %v", owner, q, p)
			}
		}
		s.used[idx] = owner
		a.owners[owner] = append(a.owners[owner], p)
		return nil
	}
	return fmt.Errorf("%v is not a host subnet of any cluster subnet", p)
}

// Allocate returns owner's host subnets, one per IP family of the cluster
// subnets, allocating those it lacks. On error nothing new is kept.
func (a *HostSubnetAllocator) Allocate(owner string) ([]netip.Prefix, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	have := map[bool]bool{}
	for _, p := range a.owners[owner] {
		have[p.Addr().Is4()] = true
	}
	var added []netip.Prefix
	var addedIn []*clusterSubnetState
	var addedIdx []uint64
	for _, is4 := range []bool{true, false} {
		if have[is4] {
			continue
		}
		found, exists := false, false
		for _, s := range a.subnets {
			if s.CIDR.Addr().Is4() != is4 {
				continue
			}
			exists = true
			if idx, ok := s.free(); ok {
				s.used[idx] = owner
				added = append(added, s.prefix(idx))
				addedIn, addedIdx = append(addedIn, s), append(addedIdx, idx)
				found = true
				break
			}
		}
		if exists && !found {
			for i, s := range addedIn {
				delete(s.used, addedIdx[i])
			}
			return nil, fmt.Errorf("every %s host subnet of %s is in use: %w", family(is4), a.describe(is4), ErrExhausted)
		}
	}
	a.owners[owner] = append(a.owners[owner], added...)
	for _, s := range addedIn {
		// advance the cursor past what was just taken
		s.next = (addedIdx[0] + 1) % s.count
		addedIdx = addedIdx[1:]
	}
	return append([]netip.Prefix(nil), a.owners[owner]...), nil
}

func (s *clusterSubnetState) free() (uint64, bool) {
	if uint64(len(s.used)) >= s.count {
		return 0, false
	}
	for i, idx := uint64(0), s.next; i < s.count; i++ {
		if _, used := s.used[idx]; !used {
			return idx, true
		}
		idx++
		if idx == s.count {
			idx = 0
		}
	}
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
	for _, p := range a.owners[owner] {
		for _, s := range a.subnets {
			if idx, ok := s.index(p); ok && s.used[idx] == owner {
				delete(s.used, idx)
			}
		}
	}
	delete(a.owners, owner)
}

// Holdings returns every owner's host subnets.
func (a *HostSubnetAllocator) Holdings() map[string][]netip.Prefix {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string][]netip.Prefix, len(a.owners))
	for o, ps := range a.owners {
		out[o] = append([]netip.Prefix(nil), ps...)
	}
	return out
}

// Owned returns owner's host subnets.
func (a *HostSubnetAllocator) Owned(owner string) []netip.Prefix {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]netip.Prefix(nil), a.owners[owner]...)
}

// Complete reports whether owner holds exactly ps, in that order, and a host
// subnet of every IP family of the cluster subnets: Allocate would return ps
// and change nothing.
func (a *HostSubnetAllocator) Complete(owner string, ps []netip.Prefix) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	held := a.owners[owner]
	if len(held) == 0 || !slices.Equal(held, ps) {
		return false
	}
	for _, s := range a.subnets {
		is4 := s.CIDR.Addr().Is4()
		if !slices.ContainsFunc(held, func(p netip.Prefix) bool { return p.Addr().Is4() == is4 }) {
			return false
		}
	}
	return true
}
