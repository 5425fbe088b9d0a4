package ovnk

import (
	"crypto/sha256"
	"net"
	"net/netip"
)

// MACFromIP derives the MAC OVN-Kubernetes gives an address (its
// util.IPAddrToHWAddr): 0a:58 followed by the four bytes of an IPv4 address
// (203.203.0.1 -> 0a:58:cb:cb:00:01), or by the first four bytes of the
// SHA-256 of an IPv6 address's canonical text form. Router ports, management
// ports and dynamically addressed pods all get their MAC this way.
func MACFromIP(ip netip.Addr) net.HardwareAddr {
	ip = ip.Unmap()
	if ip.Is4() {
		b := ip.As4()
		return net.HardwareAddr{0x0a, 0x58, b[0], b[1], b[2], b[3]}
	}
	h := sha256.Sum256([]byte(ip.String()))
	return net.HardwareAddr{0x0a, 0x58, h[0], h[1], h[2], h[3]}
}

// LinkLocalFromMAC derives the IPv6 link-local address (modified EUI-64, RFC 4291)
// a router port with this MAC advertises (0a:58:cb:cb:00:01 -> fe80::858:cbff:fecb:1),
// as OVN-Kubernetes' util.HWAddrToIPv6LLA does.
func LinkLocalFromMAC(mac net.HardwareAddr) netip.Addr {
	var b [16]byte
	b[0], b[1] = 0xfe, 0x80
	b[8], b[9], b[10] = mac[0]^0x02, mac[1], mac[2]
	b[11], b[12] = 0xff, 0xfe
	b[13], b[14], b[15] = mac[3], mac[4], mac[5]
	return netip.AddrFrom16(b)
}
