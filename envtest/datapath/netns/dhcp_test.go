package netns

import (
	"net"
	"net/netip"
	"testing"
)

// A renewing client's DHCPREQUEST carries its address and MAC; the ACK's
// lease and options are read back, and a reply of another transaction or a
// truncated option is not a reply.
func TestDHCPMessages(t *testing.T) {
	addr, mac := netip.MustParseAddr("10.120.0.10"), net.HardwareAddr{0x0a, 0x58, 0x0a, 0x78, 0, 0x0a}
	req := dhcpRequestMsg(7, addr, mac)
	if req[0] != 1 || netip.AddrFrom4([4]byte(req[12:16])) != addr || net.HardwareAddr(req[28:34]).String() != mac.String() {
		t.Fatalf("request %x: want a BOOTREQUEST with ciaddr %s and chaddr %s", req[:34], addr, mac)
	}
	ack := append([]byte(nil), req...)
	ack[0] = 2
	copy(ack[16:20], addr.AsSlice())
	ack = append(ack[:240], DHCPOptMessageType, 1, dhcpAck, DHCPOptRouter, 4, 10, 120, 0, 1, DHCPOptLeaseTime, 4, 0, 0, 0x0d, 0xac, 255)
	l, typ, ok := parseDHCPReply(ack, 7)
	if !ok || typ != dhcpAck || l.Addr != addr || l.Addr4(DHCPOptRouter) != netip.MustParseAddr("10.120.0.1") || l.Uint(DHCPOptLeaseTime) != 3500 {
		t.Errorf("ACK read as %+v type %d ok %v", l, typ, ok)
	}
	if _, _, ok := parseDHCPReply(ack, 8); ok {
		t.Errorf("a reply of another transaction was taken")
	}
	if _, _, ok := parseDHCPReply(append(ack[:240:240], DHCPOptRouter, 4, 10), 7); ok {
		t.Errorf("a truncated option was taken")
	}
}
