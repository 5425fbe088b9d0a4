package ovnk

import (
	"fmt"
	"math/big"
	"net/netip"
)

// AddOffset adds a non-negative offset to an address; callers ensure the
// result stays inside the address family.
func AddOffset(a netip.Addr, off *big.Int) netip.Addr {
	b := a.AsSlice()
	n := new(big.Int).SetBytes(b)
	n.Add(n, off)
	out := n.FillBytes(make([]byte, len(b)))
	r, _ := netip.AddrFromSlice(out)
	return r
}

// PrefixSize is the number of addresses in p as a big integer.
func PrefixSize(p netip.Prefix) *big.Int {
	return new(big.Int).Lsh(big.NewInt(1), uint(p.Addr().BitLen()-p.Bits()))
}

// AddrAt returns the address at offset n inside prefix (0 is the network address).
func AddrAt(prefix netip.Prefix, n uint64) (netip.Addr, error) {
	prefix = prefix.Masked()
	off := new(big.Int).SetUint64(n)
	if size := PrefixSize(prefix); off.Cmp(size) >= 0 {
		return netip.Addr{}, fmt.Errorf("offset %d is outside %s (%s addresses)", n, prefix, size)
	}
	return AddOffset(prefix.Addr(), off), nil
}

// LastAddr returns the highest address of prefix (IPv4: its broadcast address).
func LastAddr(prefix netip.Prefix) netip.Addr {
	prefix = prefix.Masked()
	b := prefix.Addr().AsSlice()
	host := prefix.Addr().BitLen() - prefix.Bits()
	for i := len(b) - 1; host > 0; i-- {
		bits := min(host, 8)
		b[i] |= byte(1<<bits - 1)
		host -= bits
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// FamilyOf picks the first prefix of one family from a list (false when absent).
func FamilyOf(prefixes []netip.Prefix, v6 bool) (netip.Prefix, bool) {
	for _, p := range prefixes {
		if p.Addr().Is6() == v6 {
			return p, true
		}
	}
	return netip.Prefix{}, false
}

// TransitPeerIPs splits a transit peer subnet into the transit router's side
// (the even, first address) and the gateway router's side (the odd one), both
// with the subnet's prefix length, as the trtor-/rtotr- ports carry them.
func TransitPeerIPs(peer netip.Prefix) (transitRouter, gatewayRouter netip.Prefix) {
	peer = peer.Masked()
	return netip.PrefixFrom(peer.Addr(), peer.Bits()), netip.PrefixFrom(peer.Addr().Next(), peer.Bits())
}

// TransitPeerSubnet is a node's transit peer subnet (OKEP-5094 "offset :=
// 2 * nodeID"): the /31 (IPv4) or /127 (IPv6) at offset 2·nodeID inside the
// network's transit subnet; TransitPeerIPs splits it into the two ports' sides.
func TransitPeerSubnet(transit netip.Prefix, nodeID int) (netip.Prefix, error) {
	tr, _, err := TransitPeerSubnets(transit, nodeID)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("transit peer subnet of node ID %d: %w", nodeID, err)
	}
	return tr.Masked(), nil
}

// MustAddrAt is AddrAt for offsets known to fit (tests, the gateway's .1).
func MustAddrAt(prefix netip.Prefix, n uint64) netip.Addr {
	a, err := AddrAt(prefix, n)
	if err != nil {
		panic(err)
	}
	return a
}

// AddrOfFamily is the first of addrs in the IPv6 family when v6, else in
// IPv4.
func AddrOfFamily(addrs []netip.Addr, v6 bool) (netip.Addr, bool) {
	for _, a := range addrs {
		if a.Is6() == v6 {
			return a, true
		}
	}
	return netip.Addr{}, false
}
