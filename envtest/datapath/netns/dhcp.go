package netns

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// DHCP (RFC 2131) message types and option codes the probe uses.
const (
	dhcpRequest, dhcpAck, dhcpNak = 3, 5, 6

	DHCPOptRouter, DHCPOptDNS, DHCPOptHostname, DHCPOptMTU = 3, 6, 12, 26
	DHCPOptLeaseTime, DHCPOptMessageType, DHCPOptServerID  = 51, 53, 54
)

// dhcpMagic is the options' magic cookie.
var dhcpMagic = []byte{99, 130, 83, 99}

// DHCPLease is what a DHCPACK gave a client.
type DHCPLease struct {
	// Addr is the address the server assigned (yiaddr).
	Addr netip.Addr
	// Options are the ACK's options by code (DHCPOpt*).
	Options map[byte][]byte
}

// Addr4 is option code's value as one IPv4 address (invalid if it is not one).
func (l DHCPLease) Addr4(code byte) netip.Addr {
	a, _ := netip.AddrFromSlice(l.Options[code])
	if !a.Is4() {
		return netip.Addr{}
	}
	return a
}

// Uint is option code's value as a big-endian number (0 if absent).
func (l DHCPLease) Uint(code byte) uint32 {
	var v uint32
	for _, b := range l.Options[code] {
		v = v<<8 | uint32(b)
	}
	return v
}

// DHCPRenew asks the DHCP server for the endpoint's lease as a renewing
// client does (RFC 2131 4.3.2): a DHCPREQUEST from addr (ciaddr addr,
// chaddr mac) to server, and to the broadcast address, on UDP 67, resent
// every half second until a DHCPACK comes back within timeout. A DHCPNAK
// or no answer is an error.
func (e *Endpoint) DHCPRenew(addr netip.Addr, mac net.HardwareAddr, server netip.Addr, timeout time.Duration) (DHCPLease, error) {
	var lease DHCPLease
	err := Enter(e.Netns, func() error {
		c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 68)))
		if err != nil {
			return err
		}
		defer c.Close()
		if err := setBroadcast(c); err != nil {
			return err
		}
		xid := rand.Uint32()
		req := dhcpRequestMsg(xid, addr, mac)
		dsts := []netip.Addr{server, netip.AddrFrom4([4]byte{255, 255, 255, 255})}
		deadline := time.Now().Add(timeout)
		buf := make([]byte, 1500)
		for i := 0; time.Now().Before(deadline); i++ {
			if _, err := c.WriteToUDPAddrPort(req, netip.AddrPortFrom(dsts[i%2], 67)); err != nil {
				return err
			}
			_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
			for {
				n, _, err := c.ReadFromUDPAddrPort(buf)
				if err != nil {
					break // resend
				}
				l, typ, ok := parseDHCPReply(buf[:n], xid)
				switch {
				case !ok:
					continue
				case typ == dhcpNak:
					return fmt.Errorf("the DHCP server refused the lease of %s (DHCPNAK)", addr)
				case typ == dhcpAck:
					lease = l
					return nil
				}
			}
		}
		return errors.New("no DHCPACK")
	})
	if err != nil {
		return DHCPLease{}, fmt.Errorf("%s: DHCP renewal of %s: %w", e.Label, addr, err)
	}
	return lease, nil
}

// setBroadcast lets the socket send to the broadcast address.
func setBroadcast(c *net.UDPConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_BROADCAST, 1)
	}); err != nil {
		return err
	}
	return serr
}

// dhcpRequestMsg is a renewing client's DHCPREQUEST.
func dhcpRequestMsg(xid uint32, ciaddr netip.Addr, mac net.HardwareAddr) []byte {
	m := make([]byte, 240)
	m[0], m[1], m[2] = 1, 1, 6 // BOOTREQUEST, Ethernet, MAC length
	binary.BigEndian.PutUint32(m[4:8], xid)
	ip := ciaddr.As4()
	copy(m[12:16], ip[:])
	copy(m[28:34], mac)
	copy(m[236:240], dhcpMagic)
	m = append(m, DHCPOptMessageType, 1, dhcpRequest,
		55, 6, DHCPOptRouter, DHCPOptDNS, DHCPOptHostname, DHCPOptMTU, DHCPOptLeaseTime, DHCPOptServerID)
	return append(m, 255)
}

// parseDHCPReply reads a BOOTREPLY of transaction xid: its lease and
// message type (ok false: not one).
func parseDHCPReply(m []byte, xid uint32) (DHCPLease, byte, bool) {
	if len(m) < 240 || m[0] != 2 || binary.BigEndian.Uint32(m[4:8]) != xid || !bytes.Equal(m[236:240], dhcpMagic) {
		return DHCPLease{}, 0, false
	}
	l := DHCPLease{Addr: netip.AddrFrom4([4]byte(m[16:20])), Options: map[byte][]byte{}}
	for o := m[240:]; len(o) > 0 && o[0] != 255; {
		if o[0] == 0 {
			o = o[1:]
			continue
		}
		if len(o) < 2 || len(o) < 2+int(o[1]) {
			return DHCPLease{}, 0, false
		}
		l.Options[o[0]] = o[2 : 2+int(o[1])]
		o = o[2+int(o[1]):]
	}
	typ := l.Options[DHCPOptMessageType]
	if len(typ) != 1 {
		return DHCPLease{}, 0, false
	}
	return l, typ[0], true
}
