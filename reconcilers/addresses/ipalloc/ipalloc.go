// Package ipalloc is the address allocator of one Primary Layer2 network
// (OKEP-5233): one pool over the network's subnets that never hands out the
// network and broadcast addresses, the infrastructureSubnets (or, when they
// are omitted, the gateway and management port addresses), the
// defaultGatewayIPs, and that gives addresses in reservedSubnets only to
// explicit requests. IP and MAC conflicts are detected with one map lookup
// each; MACs are derived from the first IP as OVN-Kubernetes does.
//
// A Pool is not safe for concurrent use; callers hold their own lock.
package ipalloc

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/udnkit/udnkit/ovnk"
)

// Reasons an allocation fails. The first four are the IPAMClaim condition
// reasons of OKEP-5233.
const (
	ReasonSubnetExhausted    = "SubnetExhausted"
	ReasonIPAddressConflict  = "IPAddressConflict"
	ReasonMACAddressConflict = "MACAddressConflict"
	ReasonInternalError      = "InternalError"
	// ReasonInvalidRequest is a request that can never succeed: an address
	// outside the subnets, a network or broadcast address, a malformed MAC.
	ReasonInvalidRequest = "InvalidRequest"
)

// InfrastructureOwner owns the gateway and management port addresses and
// their derived MACs.
const InfrastructureOwner = "network infrastructure"

// maxHostBits caps the host part a pool walks: IPv6 subnets wider than /66
// use only their first 2^62 addresses for dynamic allocation.
const maxHostBits = 62

// Error is an allocation failure with the reason, the address concerned and,
// for a conflict, who holds it.
type Error struct {
	Reason  string
	Address string
	Owner   string
	Message string
}

func (e *Error) Error() string { return e.Message }

// ReasonOf returns the Reason of an *Error in err's chain, or InternalError.
func ReasonOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ReasonInternalError
}

// Config describes a network's addressing, as in its Layer2 spec.
type Config struct {
	// Subnets are the network's subnets, at most one per IP family.
	Subnets []netip.Prefix
	// InfrastructureSubnets are never given to workloads. When empty, the
	// gateway and the management port take the first usable addresses.
	InfrastructureSubnets []netip.Prefix
	// ReservedSubnets are given out only on explicit request.
	ReservedSubnets []netip.Prefix
	// DefaultGatewayIPs, when set, are the gateways, one per family.
	DefaultGatewayIPs []netip.Addr
}

// Request is what a pod asks for; the zero Request allocates dynamically.
type Request struct {
	// IPs, when set, hold exactly one address for each subnet, as "IP" or
	// "IP/len" with the subnet's prefix length.
	IPs []string
	// MAC, when set, replaces the MAC derived from the first IP.
	MAC string
}

// Allocation is an owner's addresses: one per subnet, in subnet order, with
// the subnet's prefix length, and the MAC.
type Allocation struct {
	IPs []netip.Prefix
	MAC net.HardwareAddr
}

type mac [6]byte

func toMAC(hw net.HardwareAddr) mac { var m mac; copy(m[:], hw); return m }

// interval is an inclusive range of host offsets.
type interval struct{ lo, hi uint64 }

// subnetPool is one subnet: offsets 0..size-1 from its network address.
type subnetPool struct {
	prefix netip.Prefix
	size   uint64
	// excluded are sorted, merged offset ranges dynamic allocation skips.
	excluded []interval
	// forbidden are never assignable, not even on request (network,
	// broadcast); infra holds the infrastructure ranges.
	forbidden []netip.Addr
	infra     []netip.Prefix
	gateway   netip.Addr
	mgmt      netip.Addr
	// dynamicFree counts addresses dynamic allocation may still use.
	dynamicFree uint64
	cursor      uint64
}

// Pool allocates the addresses of one network.
type Pool struct {
	subnets []*subnetPool
	owners  map[string]Allocation
	ips     map[netip.Addr]string
	macs    map[mac]string
}

// New builds a pool; it fails when the configuration is inconsistent.
func New(cfg Config) (*Pool, error) {
	if len(cfg.Subnets) == 0 || len(cfg.Subnets) > 2 {
		return nil, fmt.Errorf("subnets: need one or two subnets, got %d", len(cfg.Subnets))
	}
	p := &Pool{owners: map[string]Allocation{}, ips: map[netip.Addr]string{}, macs: map[mac]string{}}
	for i, s := range cfg.Subnets {
		s = s.Masked()
		for _, o := range p.subnets {
			if o.prefix.Addr().Is4() == s.Addr().Is4() {
				return nil, fmt.Errorf("subnets[%d]: %s is the second subnet of its IP family", i, s)
			}
		}
		sp, err := newSubnetPool(s, cfg)
		if err != nil {
			return nil, fmt.Errorf("subnets[%d]: %w", i, err)
		}
		p.subnets = append(p.subnets, sp)
	}
	for _, r := range append(slices.Clone(cfg.InfrastructureSubnets), cfg.ReservedSubnets...) {
		if p.subnetOf(r.Addr()) == nil {
			return nil, fmt.Errorf("%s is not inside any of the subnets", r)
		}
	}
	for _, sp := range p.subnets {
		for _, a := range []netip.Addr{sp.gateway, sp.mgmt} {
			p.ips[a] = InfrastructureOwner
			p.macs[toMAC(ovnk.MACFromIP(a))] = InfrastructureOwner
		}
	}
	return p, nil
}

func newSubnetPool(s netip.Prefix, cfg Config) (*subnetPool, error) {
	hostBits := s.Addr().BitLen() - s.Bits()
	if hostBits < 2 {
		return nil, fmt.Errorf("%s is too small for a gateway, a management port and a workload", s)
	}
	sp := &subnetPool{prefix: s, size: 1 << min(hostBits, maxHostBits)}
	// The network address; for IPv4 also the broadcast address.
	sp.forbidden = append(sp.forbidden, s.Addr())
	sp.excluded = append(sp.excluded, interval{0, 0})
	if s.Addr().Is4() {
		sp.forbidden = append(sp.forbidden, sp.addr(sp.size-1))
		sp.excluded = append(sp.excluded, interval{sp.size - 1, sp.size - 1})
	}
	for _, r := range cfg.ReservedSubnets {
		if iv, ok := sp.rangeOf(r); ok {
			sp.excluded = append(sp.excluded, iv)
		}
	}
	for _, r := range cfg.InfrastructureSubnets {
		if iv, ok := sp.rangeOf(r); ok {
			sp.excluded = append(sp.excluded, iv)
			sp.infra = append(sp.infra, r.Masked())
		}
	}
	// The gateway and the management port: upstream's rule, one home (ovnk).
	gws, mgmts, err := ovnk.Layer2GatewayAndManagement([]netip.Prefix{s}, sp.infra, cfg.DefaultGatewayIPs)
	if err != nil {
		return nil, err
	}
	sp.gateway, sp.mgmt = gws[0], mgmts[0]
	for _, a := range []netip.Addr{sp.gateway, sp.mgmt} {
		if off, ok := sp.offset(a); ok {
			sp.excluded = append(sp.excluded, interval{off, off})
		}
	}
	sp.excluded = merge(sp.excluded)
	sp.dynamicFree = sp.size
	for _, iv := range sp.excluded {
		sp.dynamicFree -= iv.hi - iv.lo + 1
	}
	return sp, nil
}

func merge(ivs []interval) []interval {
	slices.SortFunc(ivs, func(a, b interval) int {
		switch {
		case a.lo < b.lo:
			return -1
		case a.lo > b.lo:
			return 1
		}
		return 0
	})
	out := ivs[:0]
	for _, iv := range ivs {
		if n := len(out); n > 0 && iv.lo <= out[n-1].hi+1 {
			out[n-1].hi = max(out[n-1].hi, iv.hi)
			continue
		}
		out = append(out, iv)
	}
	return out
}

// offset is a's distance from the network address, if inside the walked range.
func (sp *subnetPool) offset(a netip.Addr) (uint64, bool) {
	if !sp.prefix.Contains(a) {
		return 0, false
	}
	x, b := a.As16(), sp.prefix.Addr().As16()
	var hi, lo uint64
	for i := 0; i < 8; i++ {
		hi = hi<<8 | uint64(x[i]^b[i])
		lo = lo<<8 | uint64(x[8+i]^b[8+i])
	}
	if hi != 0 || lo >= sp.size {
		return 0, false
	}
	return lo, true
}

func (sp *subnetPool) addr(off uint64) netip.Addr {
	b := sp.prefix.Addr().As16()
	for i := 15; i >= 8; i-- {
		b[i] |= byte(off)
		off >>= 8
	}
	a := netip.AddrFrom16(b)
	if sp.prefix.Addr().Is4() {
		return a.Unmap()
	}
	return a
}

// rangeOf is r's offset range clipped to the walked range.
func (sp *subnetPool) rangeOf(r netip.Prefix) (interval, bool) {
	r = r.Masked()
	lo, ok := sp.offset(r.Addr())
	if !ok || r.Bits() < sp.prefix.Bits() {
		return interval{}, false
	}
	hostBits := r.Addr().BitLen() - r.Bits()
	if hostBits >= maxHostBits {
		return interval{lo, sp.size - 1}, true
	}
	return interval{lo, min(lo+(1<<hostBits)-1, sp.size-1)}, true
}

// excludedAt returns the excluded range holding off, if any.
func (sp *subnetPool) excludedAt(off uint64) (interval, bool) {
	i, _ := slices.BinarySearchFunc(sp.excluded, off, func(iv interval, t uint64) int {
		switch {
		case iv.hi < t:
			return -1
		case iv.lo > t:
			return 1
		}
		return 0
	})
	if i < len(sp.excluded) && sp.excluded[i].lo <= off && off <= sp.excluded[i].hi {
		return sp.excluded[i], true
	}
	return interval{}, false
}

func (sp *subnetPool) dynamic(a netip.Addr) bool {
	off, ok := sp.offset(a)
	if !ok {
		return false
	}
	_, ex := sp.excludedAt(off)
	return !ex
}

func (p *Pool) subnetOf(a netip.Addr) *subnetPool {
	for _, sp := range p.subnets {
		if sp.prefix.Contains(a) {
			return sp
		}
	}
	return nil
}

// Subnets are the pool's subnets in order.
func (p *Pool) Subnets() []netip.Prefix {
	out := make([]netip.Prefix, len(p.subnets))
	for i, sp := range p.subnets {
		out[i] = sp.prefix
	}
	return out
}

// Gateways are the gateway addresses, one per subnet in order.
func (p *Pool) Gateways() []netip.Addr {
	return p.perSubnet(func(sp *subnetPool) netip.Addr { return sp.gateway })
}

// ManagementIPs are the management port addresses, one per subnet in order.
func (p *Pool) ManagementIPs() []netip.Addr {
	return p.perSubnet(func(sp *subnetPool) netip.Addr { return sp.mgmt })
}

func (p *Pool) perSubnet(f func(*subnetPool) netip.Addr) []netip.Addr {
	out := make([]netip.Addr, len(p.subnets))
	for i, sp := range p.subnets {
		out[i] = f(sp)
	}
	return out
}

// Lookup returns the owner's allocation.
func (p *Pool) Lookup(owner string) (Allocation, bool) {
	a, ok := p.owners[owner]
	return a, ok
}

// OwnerOfIP returns who holds the address ("" when free).
func (p *Pool) OwnerOfIP(a netip.Addr) string { return p.ips[a] }

// OwnerOfMAC returns who holds the MAC ("" when free).
func (p *Pool) OwnerOfMAC(hw net.HardwareAddr) string {
	if len(hw) != 6 {
		return ""
	}
	return p.macs[toMAC(hw)]
}

// Len is the number of owners holding an allocation.
func (p *Pool) Len() int { return len(p.owners) }

// Allocate gives owner its addresses: the requested ones after the conflict
// checks, otherwise the next free dynamic ones. An owner that already holds
// an allocation gets it back unchanged. On error nothing changes.
func (p *Pool) Allocate(owner string, req Request) (Allocation, error) {
	if a, ok := p.owners[owner]; ok {
		return a, nil
	}
	if owner == "" || owner == InfrastructureOwner {
		return Allocation{}, &Error{Reason: ReasonInternalError, Message: fmt.Sprintf("invalid owner %q", owner)}
	}
	var hw net.HardwareAddr
	if req.MAC != "" {
		var err error
		if hw, err = parseMAC(req.MAC); err != nil {
			return Allocation{}, err
		}
		if o := p.macs[toMAC(hw)]; o != "" {
			return Allocation{}, macConflict(hw, o)
		}
	}
	var ips []netip.Prefix
	var err error
	if len(req.IPs) > 0 {
		ips, err = p.requested(req.IPs)
	} else {
		ips, err = p.nextFree(hw == nil)
	}
	if err != nil {
		return Allocation{}, err
	}
	if hw == nil {
		hw = ovnk.MACFromIP(ips[0].Addr())
		if o := p.macs[toMAC(hw)]; o != "" {
			return Allocation{}, macConflict(hw, o)
		}
	}
	a := Allocation{IPs: ips, MAC: hw}
	p.commit(owner, a)
	return a, nil
}

// Restore records an allocation read back from the cluster (a pod
// annotation, an IPAMClaim status), reserved addresses included. It refuses
// addresses another owner holds and forbidden ones; on error nothing changes.
func (p *Pool) Restore(owner string, a Allocation) error {
	if old, ok := p.owners[owner]; ok {
		if equal(old, a) {
			return nil
		}
		return &Error{Reason: ReasonInternalError, Owner: owner, Message: fmt.Sprintf("%s already holds %s", owner, describe(old))}
	}
	if len(a.IPs) != len(p.subnets) {
		return &Error{Reason: ReasonInvalidRequest, Message: fmt.Sprintf("%s: need one address per subnet (%d), got %d", owner, len(p.subnets), len(a.IPs))}
	}
	strs := make([]string, len(a.IPs))
	for i, ip := range a.IPs {
		strs[i] = ip.Addr().String()
	}
	ips, err := p.requested(strs)
	if err != nil {
		return err
	}
	if len(a.MAC) != 6 {
		return &Error{Reason: ReasonInvalidRequest, Message: fmt.Sprintf("%s: MAC %q is not 6 bytes", owner, a.MAC)}
	}
	// Nothing udnkit writes is multicast or all-zero: such a MAC was not
	// allocated here and is never restored.
	if _, err := parseMAC(a.MAC.String()); err != nil {
		return err
	}
	if slices.Equal(a.MAC, net.HardwareAddr{0, 0, 0, 0, 0, 0}) {
		return &Error{Reason: ReasonInvalidRequest, Address: a.MAC.String(), Message: fmt.Sprintf("mac: %s is all zeros; a pod needs a unicast MAC", a.MAC)}
	}
	if o := p.macs[toMAC(a.MAC)]; o != "" {
		return macConflict(a.MAC, o)
	}
	p.commit(owner, Allocation{IPs: ips, MAC: slices.Clone(a.MAC)})
	return nil
}

// Release frees the owner's addresses; it reports whether it held any.
func (p *Pool) Release(owner string) bool {
	a, ok := p.owners[owner]
	if !ok {
		return false
	}
	delete(p.owners, owner)
	for _, ip := range a.IPs {
		delete(p.ips, ip.Addr())
		if sp := p.subnetOf(ip.Addr()); sp != nil && sp.dynamic(ip.Addr()) {
			sp.dynamicFree++
		}
	}
	delete(p.macs, toMAC(a.MAC))
	return true
}

func (p *Pool) commit(owner string, a Allocation) {
	p.owners[owner] = a
	for _, ip := range a.IPs {
		p.ips[ip.Addr()] = owner
		if sp := p.subnetOf(ip.Addr()); sp.dynamic(ip.Addr()) {
			sp.dynamicFree--
		}
	}
	p.macs[toMAC(a.MAC)] = owner
}

// requested validates explicit IPs: one per subnet, inside it, not
// forbidden, not infrastructure, not held. The result is in subnet order.
func (p *Pool) requested(reqs []string) ([]netip.Prefix, error) {
	if len(reqs) != len(p.subnets) {
		return nil, &Error{Reason: ReasonInvalidRequest, Message: fmt.Sprintf(
			"ips: must hold exactly one address for each of the network's subnets %v, got %d", p.Subnets(), len(reqs))}
	}
	out := make([]netip.Prefix, len(p.subnets))
	for _, r := range reqs {
		a, bits, err := parseIP(r)
		if err != nil {
			return nil, err
		}
		idx := slices.IndexFunc(p.subnets, func(sp *subnetPool) bool { return sp.prefix.Contains(a) })
		if idx < 0 {
			return nil, &Error{Reason: ReasonInvalidRequest, Address: r, Message: fmt.Sprintf("ips: %s is not inside any of the network's subnets %v", r, p.Subnets())}
		}
		sp := p.subnets[idx]
		switch {
		case bits >= 0 && bits != sp.prefix.Bits():
			return nil, &Error{Reason: ReasonInvalidRequest, Address: r, Message: fmt.Sprintf("ips: %s must have the prefix length of its subnet %s", r, sp.prefix)}
		case out[idx].IsValid():
			return nil, &Error{Reason: ReasonInvalidRequest, Address: r, Message: fmt.Sprintf("ips: %s is the second address for subnet %s", r, sp.prefix)}
		case slices.Contains(sp.forbidden, a):
			return nil, &Error{Reason: ReasonInvalidRequest, Address: a.String(), Message: fmt.Sprintf("ips: %s is the network or broadcast address of %s", a, sp.prefix)}
		}
		if o := p.ips[a]; o != "" {
			return nil, ipConflict(a, o)
		}
		for _, in := range sp.infra {
			if in.Contains(a) {
				return nil, ipConflict(a, InfrastructureOwner+" (infrastructureSubnets "+in.String()+")")
			}
		}
		out[idx] = netip.PrefixFrom(a, sp.prefix.Bits())
	}
	return out, nil
}

// nextFree picks the next free dynamic address of each subnet. When the MAC
// will be derived, a first-subnet address whose derived MAC is taken is
// skipped. Cursors move only when the picks are committed by the caller, but
// moving them early is harmless: they only say where the next search starts.
func (p *Pool) nextFree(deriveMAC bool) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, len(p.subnets))
	for i, sp := range p.subnets {
		skipMAC := deriveMAC && i == 0
		a, ok := sp.next(func(a netip.Addr) bool {
			return p.ips[a] != "" || skipMAC && p.macs[toMAC(ovnk.MACFromIP(a))] != ""
		})
		if !ok {
			return nil, &Error{Reason: ReasonSubnetExhausted, Address: sp.prefix.String(),
				Message: fmt.Sprintf("subnet %s has no free address left for automatic allocation", sp.prefix)}
		}
		out[i] = netip.PrefixFrom(a, sp.prefix.Bits())
	}
	return out, nil
}

// next walks from the cursor to the first non-excluded address taken()
// refuses, wrapping once.
func (sp *subnetPool) next(taken func(netip.Addr) bool) (netip.Addr, bool) {
	if sp.dynamicFree == 0 {
		return netip.Addr{}, false
	}
	off := sp.cursor
	for walked := uint64(0); walked < sp.size; {
		if iv, ex := sp.excludedAt(off); ex {
			walked += iv.hi - off + 1
			off = (iv.hi + 1) % sp.size
			continue
		}
		a := sp.addr(off)
		off = (off + 1) % sp.size
		walked++
		if !taken(a) {
			sp.cursor = off
			return a, true
		}
	}
	return netip.Addr{}, false
}

func parseIP(s string) (netip.Addr, int, error) {
	if strings.Contains(s, "/") {
		pfx, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Addr{}, 0, &Error{Reason: ReasonInvalidRequest, Address: s, Message: fmt.Sprintf("ips: %q is not an IP address or CIDR", s)}
		}
		return pfx.Addr().Unmap(), pfx.Bits(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, 0, &Error{Reason: ReasonInvalidRequest, Address: s, Message: fmt.Sprintf("ips: %q is not an IP address or CIDR", s)}
	}
	return a.Unmap(), -1, nil
}

func parseMAC(s string) (net.HardwareAddr, error) {
	hw, err := net.ParseMAC(s)
	if err != nil || len(hw) != 6 {
		return nil, &Error{Reason: ReasonInvalidRequest, Address: s, Message: fmt.Sprintf("mac: %q is not a 48-bit MAC address", s)}
	}
	if hw[0]&1 != 0 {
		return nil, &Error{Reason: ReasonInvalidRequest, Address: s, Message: fmt.Sprintf("mac: %s is a multicast address; a pod needs a unicast MAC", hw)}
	}
	return hw, nil
}

func ipConflict(a netip.Addr, owner string) error {
	return &Error{Reason: ReasonIPAddressConflict, Address: a.String(), Owner: owner,
		Message: fmt.Sprintf("IP address %s is already in use by %s", a, owner)}
}

func macConflict(hw net.HardwareAddr, owner string) error {
	return &Error{Reason: ReasonMACAddressConflict, Address: hw.String(), Owner: owner,
		Message: fmt.Sprintf("MAC address %s is already in use by %s", hw, owner)}
}

func equal(a, b Allocation) bool {
	return slices.Equal(a.IPs, b.IPs) && slices.Equal(a.MAC, b.MAC)
}

func describe(a Allocation) string {
	return fmt.Sprintf("%v %s", a.IPs, a.MAC)
}
