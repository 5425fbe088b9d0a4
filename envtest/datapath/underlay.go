package datapath

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/udnkit/udnkit/envtest/datapath/netns"
	"net"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"
)

// genevePort is Geneve's UDP port (RFC 8926).
const genevePort = 6081

// TunneledEchoRequests counts, by the tunnel's outer destination IP, the
// Geneve packets the underlay delivers to node that carry an IPv4 ICMP echo
// request to inner while during runs (and 300 ms after). It reads the
// node's port of the underlay bridge with a packet socket, so it sees the
// tunnel endpoint other nodes' datapaths chose, whichever of node's
// addresses that is.
func (c *Cluster) TunneledEchoRequests(node *Node, inner netip.Addr, during func() error) (map[netip.Addr]int, error) {
	peer := ""
	for i, n := range c.Nodes {
		if n == node {
			peer = fmt.Sprintf("n%d", i)
		}
	}
	if peer == "" {
		return nil, fmt.Errorf("node %s is not in the cluster", node.Name)
	}
	ready, stop := make(chan error, 1), make(chan struct{})
	result := make(chan map[netip.Addr]int, 1)
	go func() {
		seen := map[netip.Addr]int{}
		err := netns.Enter(c.Underlay, func() error {
			ifc, err := net.InterfaceByName(peer)
			if err != nil {
				return err
			}
			proto := htons(unix.ETH_P_ALL)
			fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, int(proto))
			if err != nil {
				return fmt.Errorf("packet socket in %s: %w", c.Underlay, err)
			}
			defer unix.Close(fd)
			if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifc.Index}); err != nil {
				return err
			}
			tv := unix.NsecToTimeval((50 * time.Millisecond).Nanoseconds())
			if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
				return err
			}
			ready <- nil
			buf := make([]byte, 9000)
			for {
				select {
				case <-stop:
					return nil
				default:
				}
				n, _, err := unix.Recvfrom(fd, buf, 0)
				if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
					continue
				}
				if err != nil {
					return err
				}
				if outer, ok := genevedEchoRequest(buf[:n], inner); ok {
					seen[outer]++
				}
			}
		})
		if err != nil {
			ready <- err
		}
		result <- seen
	}()
	if err := <-ready; err != nil {
		return nil, err
	}
	err := during()
	time.Sleep(300 * time.Millisecond)
	close(stop)
	return <-result, err
}

// genevedEchoRequest parses an Ethernet frame: IPv4, UDP to the Geneve port,
// Geneve (its options skipped) carrying an Ethernet frame with an IPv4 ICMP
// echo request to inner; it returns the outer destination IP.
func genevedEchoRequest(f []byte, inner netip.Addr) (netip.Addr, bool) {
	ipv4 := func(b []byte) ([]byte, netip.Addr, byte, bool) {
		if len(b) < 14+20 || binary.BigEndian.Uint16(b[12:14]) != unix.ETH_P_IP {
			return nil, netip.Addr{}, 0, false
		}
		ip := b[14:]
		hl := int(ip[0]&0x0f) * 4
		if hl < 20 || len(ip) < hl {
			return nil, netip.Addr{}, 0, false
		}
		return ip[hl:], netip.AddrFrom4([4]byte(ip[16:20])), ip[9], true
	}
	udp, outer, proto, ok := ipv4(f)
	if !ok || proto != unix.IPPROTO_UDP || len(udp) < 8+8 || binary.BigEndian.Uint16(udp[2:4]) != genevePort {
		return netip.Addr{}, false
	}
	gnv := udp[8:]
	hl := 8 + int(gnv[0]&0x3f)*4
	if len(gnv) < hl {
		return netip.Addr{}, false
	}
	payload, dst, proto, ok := ipv4(gnv[hl:])
	if !ok || proto != unix.IPPROTO_ICMP || dst != inner || len(payload) < 1 || payload[0] != 8 {
		return netip.Addr{}, false
	}
	return outer, true
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
