// Package ipalloc is the address allocator of one Primary Layer2 network
// (OKEP-5233): one pool over the network's subnets that never hands out the
// network and broadcast addresses, the infrastructureSubnets (or, when they
// are omitted, the gateway and management port addresses), the
// defaultGatewayIPs, and that gives addresses in reservedSubnets only to
// explicit requests. Each subnet keeps its held addresses in a chunked
// bitmap with the holder per address (held.go): dynamic allocation scans it
// a word at a time from a next-free cursor, and an IP conflict is one array
// read; a MAC conflict is one map lookup. MACs are derived from the first IP
// as OVN-Kubernetes does.
//
// A Pool is not safe for concurrent use; callers hold their own lock.
package ipalloc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
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
	// NoGateway: the network has no gateway nor management port (a
	// Secondary Layer2 or Localnet network: upstream's cluster manager
	// reserves them only for Primary Layer2 networks).
	NoGateway bool
	// ExcludeSubnets are never given out, not even on request (a Localnet
	// network's excludeSubnets).
	ExcludeSubnets []netip.Prefix
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
	// excludes are the ExcludeSubnets inside this subnet.
	excludes []netip.Prefix
	gateway  netip.Addr
	mgmt     netip.Addr
	// dynamicFree counts addresses dynamic allocation may still use.
	dynamicFree uint64
	cursor      uint64
	// held are the holders of the walked range; beyond those of requested
	// addresses past it (IPv6 subnets wider than /66).
	held   holders
	beyond map[netip.Addr]uint32
}

// Pool allocates the addresses of one network. Holders are numbered: ids
// index recs, 0 is no one and infrastructureID the network infrastructure.
type Pool struct {
	subnets []*subnetPool
	owners  owners
	recs    records
	freeIDs []uint32
	macs    map[mac]uint32
}

// records is a growable array of records in pages that double in size, so
// that growing never copies (nor write-barriers) the records already there.
// Page 0 holds ids 0..15, page k>0 ids 16<<(k-1) .. (16<<k)-1.
type records struct {
	pages [][]record
	n     uint32
}

func recordPage(id uint32) (page int, index uint32) {
	if page = bits.Len32(id >> 4); page > 0 {
		index = id - 16<<(page-1)
	} else {
		index = id
	}
	return page, index
}

func (rs *records) at(id uint32) *record {
	page, i := recordPage(id)
	return &rs.pages[page][i]
}

// add appends r and returns its id.
func (rs *records) add(r record) uint32 {
	id := rs.n
	if page, _ := recordPage(id); page == len(rs.pages) {
		size := 16
		if page > 0 {
			size <<= page - 1
		}
		rs.pages = append(rs.pages, make([]record, size))
	}
	rs.n++
	*rs.at(id) = r
	return id
}

// record is a holder and its allocation's storage (nil for the
// infrastructure).
type record struct {
	owner string
	st    *storage
}

const infrastructureID = 1

// storage backs an allocation's slices with one heap object; it is never
// written after commit.
type storage struct {
	ips [2]netip.Prefix
	mac mac
}

// New builds a pool; it fails when the configuration is inconsistent.
func New(cfg Config) (*Pool, error) {
	if len(cfg.Subnets) == 0 || len(cfg.Subnets) > 2 {
		return nil, fmt.Errorf("subnets: need one or two subnets, got %d", len(cfg.Subnets))
	}
	p := &Pool{owners: newOwners(), macs: map[mac]uint32{}}
	p.recs.add(record{})
	p.recs.add(record{owner: InfrastructureOwner})
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
	for _, r := range slices.Concat(cfg.InfrastructureSubnets, cfg.ReservedSubnets, cfg.ExcludeSubnets) {
		if p.subnetOf(r.Addr()) == nil {
			return nil, fmt.Errorf("%s is not inside any of the subnets", r)
		}
	}
	for _, sp := range p.subnets {
		if cfg.NoGateway {
			continue
		}
		for _, a := range []netip.Addr{sp.gateway, sp.mgmt} {
			sp.hold(a, infrastructureID)
			p.macs[toMAC(ovnk.MACFromIP(a))] = infrastructureID
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
	sp.held = newHolders(sp.size)
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
	for _, r := range cfg.ExcludeSubnets {
		if iv, ok := sp.rangeOf(r); ok {
			sp.excluded = append(sp.excluded, iv)
			sp.excludes = append(sp.excludes, r.Masked())
		}
	}
	if cfg.NoGateway {
		return sp.finish(), nil
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
	return sp.finish(), nil
}

// finish merges the excluded ranges and counts what dynamic allocation may use.
func (sp *subnetPool) finish() *subnetPool {
	sp.excluded = merge(sp.excluded)
	sp.dynamicFree = sp.size
	for _, iv := range sp.excluded {
		sp.dynamicFree -= iv.hi - iv.lo + 1
	}
	return sp
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
	be := binary.BigEndian
	lo := be.Uint64(x[8:]) ^ be.Uint64(b[8:])
	if be.Uint64(x[:8]) != be.Uint64(b[:8]) || lo >= sp.size {
		return 0, false
	}
	return lo, true
}

func (sp *subnetPool) addr(off uint64) netip.Addr {
	if sp.prefix.Addr().Is4() {
		b := sp.prefix.Addr().As4()
		binary.BigEndian.PutUint32(b[:], binary.BigEndian.Uint32(b[:])|uint32(off))
		return netip.AddrFrom4(b)
	}
	b := sp.prefix.Addr().As16()
	binary.BigEndian.PutUint64(b[8:], binary.BigEndian.Uint64(b[8:])|off)
	return netip.AddrFrom16(b)
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

// excludedFrom is the index of the first excluded range that ends at or
// after off (len(sp.excluded) when none does).
func (sp *subnetPool) excludedFrom(off uint64) int {
	lo, hi := 0, len(sp.excluded)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if sp.excluded[m].hi < off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// excludedAt returns the excluded range holding off, if any.
func (sp *subnetPool) excludedAt(off uint64) (interval, bool) {
	if i := sp.excludedFrom(off); i < len(sp.excluded) && sp.excluded[i].lo <= off {
		return sp.excluded[i], true
	}
	return interval{}, false
}

// hold records id as the holder of a, an address of the subnet.
func (sp *subnetPool) hold(a netip.Addr, id uint32) {
	off, ok := sp.offset(a)
	switch {
	case !ok:
		if sp.beyond == nil {
			sp.beyond = map[netip.Addr]uint32{}
		}
		sp.beyond[a] = id
	case sp.held.get(off) == 0:
		sp.held.set(off, id)
		if _, ex := sp.excludedAt(off); !ex {
			sp.dynamicFree--
		}
	}
}

// unhold frees a, an address of the subnet.
func (sp *subnetPool) unhold(a netip.Addr) {
	off, ok := sp.offset(a)
	switch {
	case !ok:
		delete(sp.beyond, a)
	case sp.held.get(off) != 0:
		sp.held.clear(off)
		if _, ex := sp.excludedAt(off); !ex {
			sp.dynamicFree++
		}
	}
}

// holder is the id holding a, an address of the subnet (0: free).
func (sp *subnetPool) holder(a netip.Addr) uint32 {
	if off, ok := sp.offset(a); ok {
		return sp.held.get(off)
	}
	return sp.beyond[a]
}

// ownerID is the id holding a (0: free or outside the subnets).
func (p *Pool) ownerID(a netip.Addr) uint32 {
	if sp := p.subnetOf(a); sp != nil {
		return sp.holder(a)
	}
	return 0
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
	id, ok, _ := p.owners.find(owner, &p.recs)
	return p.allocation(id), ok
}

// OwnerOfIP returns who holds the address ("" when free).
func (p *Pool) OwnerOfIP(a netip.Addr) string { return p.recs.at(p.ownerID(a)).owner }

// OwnerOfMAC returns who holds the MAC ("" when free).
func (p *Pool) OwnerOfMAC(hw net.HardwareAddr) string {
	if len(hw) != 6 {
		return ""
	}
	return p.recs.at(p.macHolder(toMAC(hw))).owner
}

// Len is the number of owners holding an allocation.
func (p *Pool) Len() int { return p.owners.len() }

// Allocate gives owner its addresses: the requested ones after the conflict
// checks, otherwise the next free dynamic ones. An owner that already holds
// an allocation gets it back unchanged. On error nothing changes.
func (p *Pool) Allocate(owner string, req Request) (Allocation, error) {
	id, ok, key := p.owners.find(owner, &p.recs)
	if ok {
		return p.allocation(id), nil
	}
	if owner == "" || owner == InfrastructureOwner {
		return Allocation{}, &Error{Reason: ReasonInternalError, Message: fmt.Sprintf("invalid owner %q", owner)}
	}
	// Built on the stack; only a committed allocation goes to the heap.
	var st storage
	if req.MAC != "" {
		hw, err := parseMAC(req.MAC)
		if err != nil {
			return Allocation{}, err
		}
		st.mac = toMAC(hw)
		if id := p.macHolder(st.mac); id != 0 {
			return Allocation{}, macConflict(hw, p.recs.at(id).owner)
		}
	}
	ips := st.ips[:len(p.subnets)]
	var offs []uint64
	if len(req.IPs) > 0 {
		if err := p.requested(req.IPs, ips); err != nil {
			return Allocation{}, err
		}
		if req.MAC == "" {
			st.mac = toMAC(ovnk.MACFromIP(ips[0].Addr()))
			if id := p.macHolder(st.mac); id != 0 {
				m := st.mac
				return Allocation{}, macConflict(m[:], p.recs.at(id).owner)
			}
		}
	} else {
		var picked [2]uint64
		offs = picked[:len(p.subnets)]
		if err := p.nextFree(req.MAC == "", ips, offs, &st.mac); err != nil {
			return Allocation{}, err
		}
	}
	heap := new(storage)
	*heap = st
	return p.allocation(p.commit(key, heap, req.MAC == "", offs)), nil
}

// Restore records an allocation read back from the cluster (a pod
// annotation, an IPAMClaim status), reserved addresses included. It refuses
// addresses another owner holds and forbidden ones; on error nothing changes.
func (p *Pool) Restore(owner string, a Allocation) error {
	id, ok, key := p.owners.find(owner, &p.recs)
	if ok {
		old := p.allocation(id)
		if equal(old, a) {
			return nil
		}
		return &Error{Reason: ReasonInternalError, Owner: owner, Message: fmt.Sprintf("%s already holds %s", owner, describe(old))}
	}
	if len(a.IPs) != len(p.subnets) {
		return &Error{Reason: ReasonInvalidRequest, Message: fmt.Sprintf("%s: need one address per subnet (%d), got %d", owner, len(p.subnets), len(a.IPs))}
	}
	st := new(storage)
	ips := st.ips[:len(p.subnets)]
	for _, ip := range a.IPs {
		if err := p.place("", ip.Addr().Unmap(), -1, ips); err != nil {
			return err
		}
	}
	if len(a.MAC) != 6 {
		return &Error{Reason: ReasonInvalidRequest, Message: fmt.Sprintf("%s: MAC %q is not 6 bytes", owner, a.MAC)}
	}
	// Nothing udnkit writes is multicast or all-zero: such a MAC was not
	// allocated here and is never restored.
	if a.MAC[0]&1 != 0 {
		_, err := parseMAC(a.MAC.String())
		return err
	}
	if st.mac = toMAC(a.MAC); st.mac == (mac{}) {
		return &Error{Reason: ReasonInvalidRequest, Address: a.MAC.String(), Message: fmt.Sprintf("mac: %s is all zeros; a pod needs a unicast MAC", a.MAC)}
	}
	if id := p.macHolder(st.mac); id != 0 {
		return macConflict(a.MAC, p.recs.at(id).owner)
	}
	p.commit(key, st, false, nil)
	return nil
}

// Release frees the owner's addresses; it reports whether it held any.
func (p *Pool) Release(owner string) bool {
	id, ok, _ := p.owners.find(owner, &p.recs)
	if !ok {
		return false
	}
	st := p.recs.at(id).st
	p.owners.remove(owner, id)
	for i, sp := range p.subnets {
		sp.unhold(st.ips[i].Addr())
	}
	if p.macs[st.mac] == id {
		delete(p.macs, st.mac)
	}
	*p.recs.at(id) = record{}
	p.freeIDs = append(p.freeIDs, id)
	return true
}

// commit records st, whose IPs are free and in subnet order, and its MAC
// (derived: by ovnk.MACFromIP from the first IP) for the owner that find
// gave key for, and returns the owner's id. offs, when set, are the IPs'
// offsets as dynamic allocation picked them (so neither excluded nor beyond
// the walked range).
func (p *Pool) commit(key ownerKey, st *storage, derived bool, offs []uint64) uint32 {
	var id uint32
	if n := len(p.freeIDs); n > 0 {
		id = p.freeIDs[n-1]
		p.freeIDs = p.freeIDs[:n-1]
		*p.recs.at(id) = record{owner: key.name, st: st}
	} else {
		id = p.recs.add(record{owner: key.name, st: st})
	}
	p.owners.add(key, id)
	for i, sp := range p.subnets {
		if offs != nil {
			sp.held.set(offs[i], id)
			sp.dynamicFree--
		} else {
			sp.hold(st.ips[i].Addr(), id)
		}
	}
	if !p.derivedV4(st, derived) {
		p.macs[st.mac] = id
	}
	return id
}

// derivedV4 reports whether st's MAC is derived from its first address, an
// IPv4 one, and ends with that address: macHolder finds such a MAC through
// the address, so p.macs need not hold it. Dynamic allocation in an IPv4
// network thus costs no MAC map entry, only the lookup for requested MACs.
func (p *Pool) derivedV4(st *storage, derived bool) bool {
	a := st.ips[0].Addr()
	return a.Is4() && [4]byte(st.mac[2:]) == a.As4() && (derived || st.mac == toMAC(ovnk.MACFromIP(a)))
}

// macHolder is the id holding MAC m (0: none): in p.macs, or the holder of
// the IPv4 address m ends with, when that address is its first and m its
// derived MAC (derivedV4).
func (p *Pool) macHolder(m mac) uint32 {
	if id := p.macs[m]; id != 0 {
		return id
	}
	sp := p.subnets[0]
	a := netip.AddrFrom4([4]byte(m[2:]))
	if !sp.prefix.Contains(a) {
		return 0
	}
	if id := sp.holder(a); id > infrastructureID && p.recs.at(id).st.ips[0].Addr() == a && p.recs.at(id).st.mac == m {
		return id
	}
	return 0
}

// allocation is the allocation of id, over its storage.
func (p *Pool) allocation(id uint32) Allocation {
	st := p.recs.at(id).st
	if st == nil {
		return Allocation{}
	}
	n := len(p.subnets)
	return Allocation{IPs: st.ips[:n:n], MAC: st.mac[:]}
}

// requested validates explicit IPs: one per subnet, inside it, not
// forbidden, not infrastructure, not held. It fills out, one per subnet, in
// subnet order.
func (p *Pool) requested(reqs []string, out []netip.Prefix) error {
	if len(reqs) != len(p.subnets) {
		return &Error{Reason: ReasonInvalidRequest, Message: fmt.Sprintf(
			"ips: must hold exactly one address for each of the network's subnets %v, got %d", p.Subnets(), len(reqs))}
	}
	for _, r := range reqs {
		a, bits, err := parseIP(r)
		if err != nil {
			return err
		}
		if err := p.place(r, a, bits, out); err != nil {
			return err
		}
	}
	return nil
}

// place validates a, requested as r (a's text when empty) with prefix length
// bits (-1: none), and puts it in out at its subnet's index.
func (p *Pool) place(r string, a netip.Addr, bits int, out []netip.Prefix) error {
	idx := slices.IndexFunc(p.subnets, func(sp *subnetPool) bool { return sp.prefix.Contains(a) })
	if idx < 0 || out[idx].IsValid() || bits >= 0 && bits != p.subnets[idx].prefix.Bits() {
		if r == "" {
			r = a.String()
		}
	}
	if idx < 0 {
		return &Error{Reason: ReasonInvalidRequest, Address: r, Message: fmt.Sprintf("ips: %s is not inside any of the network's subnets %v", r, p.Subnets())}
	}
	sp := p.subnets[idx]
	switch {
	case bits >= 0 && bits != sp.prefix.Bits():
		return &Error{Reason: ReasonInvalidRequest, Address: r, Message: fmt.Sprintf("ips: %s must have the prefix length of its subnet %s", r, sp.prefix)}
	case out[idx].IsValid():
		return &Error{Reason: ReasonInvalidRequest, Address: r, Message: fmt.Sprintf("ips: %s is the second address for subnet %s", r, sp.prefix)}
	case slices.Contains(sp.forbidden, a):
		return &Error{Reason: ReasonInvalidRequest, Address: a.String(), Message: fmt.Sprintf("ips: %s is the network or broadcast address of %s", a, sp.prefix)}
	}
	if id := sp.holder(a); id != 0 {
		return ipConflict(a, p.recs.at(id).owner)
	}
	for _, in := range sp.infra {
		if in.Contains(a) {
			return ipConflict(a, InfrastructureOwner+" (infrastructureSubnets "+in.String()+")")
		}
	}
	for _, ex := range sp.excludes {
		if ex.Contains(a) {
			return &Error{Reason: ReasonInvalidRequest, Address: a.String(), Message: fmt.Sprintf("ips: %s is inside excludeSubnets %s", a, ex)}
		}
	}
	out[idx] = netip.PrefixFrom(a, sp.prefix.Bits())
	return nil
}

// nextFree fills out with the next free dynamic address of each subnet, and
// offs with their offsets. When the MAC will be derived (into hw), a
// first-subnet address whose derived MAC is taken is skipped. Cursors move
// only when the picks are committed by the caller, but moving them early is
// harmless: they only say where the next search starts.
func (p *Pool) nextFree(deriveMAC bool, out []netip.Prefix, offs []uint64, hw *mac) error {
	for i, sp := range p.subnets {
		var a netip.Addr
		var ok bool
		if deriveMAC && i == 0 {
			// Only p.macs can hold a's derived MAC: the one address
			// macHolder would also look at is a itself, which is free.
			a, offs[i], ok = sp.next(func(a netip.Addr) bool {
				*hw = toMAC(ovnk.MACFromIP(a))
				return p.macs[*hw] == 0
			})
		} else {
			a, offs[i], ok = sp.next(nil)
		}
		if !ok {
			return &Error{Reason: ReasonSubnetExhausted, Address: sp.prefix.String(),
				Message: fmt.Sprintf("subnet %s has no free address left for automatic allocation", sp.prefix)}
		}
		out[i] = netip.PrefixFrom(a, sp.prefix.Bits())
	}
	return nil
}

// next walks from the cursor, wrapping once, to the first address that is
// neither excluded nor held and that accept (when set) takes; it returns
// the address and its offset. Excluded ranges are skipped by their
// intervals, held addresses by the bitmap.
func (sp *subnetPool) next(accept func(netip.Addr) bool) (netip.Addr, uint64, bool) {
	if sp.dynamicFree == 0 {
		return netip.Addr{}, 0, false
	}
	off := sp.cursor
	for walked := uint64(0); walked < sp.size; {
		// The run of non-excluded offsets from off: up to the next excluded
		// range, or the end of the walked range.
		end := sp.size
		if i := sp.excludedFrom(off); i < len(sp.excluded) {
			iv := sp.excluded[i]
			if iv.lo <= off {
				walked += iv.hi - off + 1
				off = (iv.hi + 1) % sp.size
				continue
			}
			end = iv.lo
		}
		free, ok := sp.held.firstFree(off, end)
		if !ok {
			walked += end - off
			off = end % sp.size
			continue
		}
		walked += free - off + 1
		off = (free + 1) % sp.size
		a := sp.addr(free)
		if accept == nil || accept(a) {
			sp.cursor = off
			return a, free, true
		}
	}
	return netip.Addr{}, 0, false
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
