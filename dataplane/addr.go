package dataplane

import (
	"fmt"
	"github.com/udnkit/udnkit/reconcilers/netids"
	"math/big"
	"net"
	"net/netip"
)

// Default transit subnets of OVN-Kubernetes (OKEP-5094 "Address config").
var (
	DefaultTransitSubnetV4 = netip.MustParsePrefix("100.88.0.0/16")
	DefaultTransitSubnetV6 = netip.MustParsePrefix("fd97::/64")
)

// AddrAt returns the address at offset n inside prefix (0 is the network address).
func AddrAt(prefix netip.Prefix, n uint64) (netip.Addr, error) {
	prefix = prefix.Masked()
	base := new(big.Int).SetBytes(prefix.Addr().AsSlice())
	size := new(big.Int).Lsh(big.NewInt(1), uint(prefix.Addr().BitLen()-prefix.Bits()))
	off := new(big.Int).SetUint64(n)
	if off.Cmp(size) >= 0 {
		return netip.Addr{}, fmt.Errorf("offset %d is outside %s (%s addresses)", n, prefix, size)
	}
	sum := new(big.Int).Add(base, off).FillBytes(make([]byte, prefix.Addr().BitLen()/8))
	a, _ := netip.AddrFromSlice(sum)
	return a, nil
}

// lastAddr returns the highest address of prefix.
func lastAddr(prefix netip.Prefix) netip.Addr {
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

// TransitPeerSubnet derives a node's transit peer subnet from its node ID, as
// OKEP-5094 chooses ("offset := 2 * nodeID"): a /31 for IPv4 and a /127 for IPv6
// at offset 2·nodeID inside the network's transit subnet.
func TransitPeerSubnet(transit netip.Prefix, nodeID int) (netip.Prefix, error) {
	// One derivation for the reconcilers and the dataplane (issue 4).
	tr, _, err := netids.TransitPeerSubnets(transit, nodeID)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("transit peer subnet of node ID %d: %w", nodeID, err)
	}
	return tr.Masked(), nil
}

// TransitPeerIPs splits a transit peer subnet into the transit router's side
// (the even, first address) and the gateway router's side (the odd one), both
// with the subnet's prefix length, as the trtor-/rtotr- ports carry them.
func TransitPeerIPs(peer netip.Prefix) (transitRouter, gatewayRouter netip.Prefix) {
	peer = peer.Masked()
	return netip.PrefixFrom(peer.Addr(), peer.Bits()), netip.PrefixFrom(peer.Addr().Next(), peer.Bits())
}

// MACFromIP derives OVN-Kubernetes' MAC for an address: 0a:58 followed by the
// address's last four bytes (203.203.0.1 -> 0a:58:cb:cb:00:01).
func MACFromIP(ip netip.Addr) net.HardwareAddr {
	b := ip.AsSlice()
	return net.HardwareAddr{0x0a, 0x58, b[len(b)-4], b[len(b)-3], b[len(b)-2], b[len(b)-1]}
}

// LinkLocalFromMAC derives the IPv6 link-local address (modified EUI-64, RFC 4291)
// a router port with this MAC advertises (0a:58:cb:cb:00:01 -> fe80::858:cbff:fecb:1).
func LinkLocalFromMAC(mac net.HardwareAddr) netip.Addr {
	var b [16]byte
	b[0], b[1] = 0xfe, 0x80
	b[8], b[9], b[10] = mac[0]^0x02, mac[1], mac[2]
	b[11], b[12] = 0xff, 0xfe
	b[13], b[14], b[15] = mac[3], mac[4], mac[5]
	return netip.AddrFrom16(b)
}

// familyOf picks the prefix of one family from a list (false when absent).
func familyOf(prefixes []netip.Prefix, v6 bool) (netip.Prefix, bool) {
	for _, p := range prefixes {
		if p.Addr().Is6() == v6 {
			return p, true
		}
	}
	return netip.Prefix{}, false
}

func ipFamily(a netip.Addr) string {
	if a.Is4() {
		return "ip4"
	}
	return "ip6"
}
