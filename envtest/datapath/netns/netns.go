// Package netns runs programs and opens sockets in network namespaces for
// the real-datapath cluster: daemons started there (dying with the test),
// ip(8), and an Endpoint's traffic (ICMP echo, probes, TCP echo and
// streams).
package netns

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Enter runs fn on an OS thread that has entered network namespace name:
// sockets fn opens live in that namespace. The thread is never returned to
// the Go scheduler (the goroutine exits locked), so no other goroutine runs
// in the namespace.
func Enter(name string, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open(filepath.Join("/run/netns", name))
		if err != nil {
			done <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("enter network namespace %s: %w", name, err)
			return
		}
		done <- fn()
	}()
	return <-done
}

// icmp is the raw ICMP socket of one IP family and its echo types.
type icmp struct {
	conn           net.PacketConn
	request, reply byte
	buf            []byte
}

// listenICMP opens a raw ICMP socket of the family of v6 in the calling
// thread's network namespace.
func listenICMP(v6 bool) (*icmp, error) {
	network, laddr, i := "ip4:icmp", "0.0.0.0", &icmp{request: 8, reply: 0, buf: make([]byte, 1500)}
	if v6 {
		network, laddr, i.request, i.reply = "ip6:ipv6-icmp", "::", 128, 129
	}
	var err error
	i.conn, err = net.ListenPacket(network, laddr)
	return i, err
}

// next reads the next ICMP message (type, identifier, sequence number and
// source) until deadline; ok is false when none came.
func (i *icmp) next(deadline time.Time) (typ byte, id, seq uint16, from netip.Addr, ok bool, err error) {
	_ = i.conn.SetReadDeadline(deadline)
	for {
		n, src, err := i.conn.ReadFrom(i.buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return 0, 0, 0, netip.Addr{}, false, nil
		}
		if err != nil {
			return 0, 0, 0, netip.Addr{}, false, err
		}
		if n < 8 {
			continue
		}
		from, _ = netip.AddrFromSlice(src.(*net.IPAddr).IP)
		return i.buf[0], binary.BigEndian.Uint16(i.buf[4:]), binary.BigEndian.Uint16(i.buf[6:]), from.Unmap(), true, nil
	}
}

// echo sends ICMP echo requests to dst from namespace netns, one every
// interval, until one is answered (when untilReply) or count requests went
// out, and returns how many were sent and answered.
func echo(netns string, dst netip.Addr, count int, interval time.Duration, untilReply bool) (sent, answered int, err error) {
	err = Enter(netns, func() error {
		sock, err := listenICMP(dst.Is6())
		if err != nil {
			return err
		}
		defer sock.conn.Close()
		id := uint16(rand.UintN(1 << 16))
		for seq := range count {
			msg := make([]byte, 8+32)
			msg[0] = sock.request
			binary.BigEndian.PutUint16(msg[4:], id)
			binary.BigEndian.PutUint16(msg[6:], uint16(seq))
			if dst.Is4() {
				// The kernel computes ICMPv6 checksums; ICMPv4's is ours.
				binary.BigEndian.PutUint16(msg[2:], checksum(msg))
			}
			if _, err := sock.conn.WriteTo(msg, &net.IPAddr{IP: dst.AsSlice()}); err != nil {
				return err
			}
			sent++
			deadline := time.Now().Add(interval)
			for {
				typ, gotID, gotSeq, from, ok, err := sock.next(deadline)
				if err != nil {
					return err
				}
				if !ok {
					break
				}
				if typ == sock.reply && from == dst && gotID == id && gotSeq == uint16(seq) {
					answered++
					if untilReply {
						return nil
					}
					time.Sleep(time.Until(deadline))
					break
				}
			}
		}
		return nil
	})
	return sent, answered, err
}

// echoRequestsSeen counts the ICMP echo requests from src that reach
// namespace netns while during runs (and 300 ms after).
func echoRequestsSeen(netns string, src netip.Addr, during func() error) (int, error) {
	ready, stop := make(chan error, 1), make(chan struct{})
	result := make(chan int, 1)
	go func() {
		seen := 0
		err := Enter(netns, func() error {
			sock, err := listenICMP(src.Is6())
			if err != nil {
				return err
			}
			defer sock.conn.Close()
			ready <- nil
			for {
				select {
				case <-stop:
					return nil
				default:
				}
				typ, _, _, from, ok, err := sock.next(time.Now().Add(50 * time.Millisecond))
				if err != nil {
					return err
				}
				if ok && typ == sock.request && from == src {
					seen++
				}
			}
		})
		if err != nil {
			ready <- err
		}
		result <- seen
	}()
	if err := <-ready; err != nil {
		return 0, err
	}
	err := during()
	// A request still on its way (a loaded machine delays the datapath)
	// is counted too.
	time.Sleep(300 * time.Millisecond)
	close(stop)
	return <-result, err
}

// checksum is the Internet checksum (RFC 1071).
func checksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// ServeTCP listens on TCP port in the endpoint's namespace (every address)
// and echoes back what each connection sends, closing a connection idle
// for 10 s; stop closes the listener.
func (e *Endpoint) ServeTCP(port int) (stop func(), err error) {
	var l net.Listener
	if err := Enter(e.Netns, func() (err error) {
		l, err = net.Listen("tcp", net.JoinHostPort("::", strconv.Itoa(port)))
		return err
	}); err != nil {
		return nil, err
	}
	go serveEach(l, func(c net.Conn) {
		buf := make([]byte, 4096)
		for {
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			n, err := c.Read(buf)
			if n > 0 {
				if _, werr := c.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	})
	return func() { _ = l.Close() }, nil
}

// serveEach accepts connections on l until it closes, each handled by
// serve in its own goroutine and closed afterwards.
func serveEach(l net.Listener, serve func(net.Conn)) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			serve(c)
		}()
	}
}

// TCPEcho connects from the endpoint to dst:port, sends a line and waits
// for it to come back, within timeout.
func (e *Endpoint) TCPEcho(dst netip.Addr, port int, timeout time.Duration) error {
	return Enter(e.Netns, func() error {
		c, err := net.DialTimeout("tcp", netip.AddrPortFrom(dst, uint16(port)).String(), timeout)
		if err != nil {
			return fmt.Errorf("%s: TCP to %s port %d: %w", e.Label, dst, port, err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(timeout))
		msg := "udnkit " + e.Label + "\n"
		if _, err := io.WriteString(c, msg); err != nil {
			return fmt.Errorf("%s: TCP to %s port %d: %w", e.Label, dst, port, err)
		}
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(c, got); err != nil || string(got) != msg {
			return fmt.Errorf("%s: TCP to %s port %d: echoed %q, %v", e.Label, dst, port, got, err)
		}
		return nil
	})
}

// TxChecksumOff turns off transmit checksum offload on iface in namespace
// netns (ethtool -K iface tx off). A veth hands checksum-offloaded TCP and
// UDP to its peer with the checksum unfinished; ovs-vswitchd reads such a
// frame from its AF_PACKET socket as is, and once a router has NATed it
// the receiver drops it for its bad checksum.
func TxChecksumOff(netns, iface string) error {
	const ethtoolSTxCsum = 0x17 // ETHTOOL_STXCSUM
	return Enter(netns, func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		value := struct{ cmd, data uint32 }{cmd: ethtoolSTxCsum}
		var ifr struct {
			name [unix.IFNAMSIZ]byte
			data unsafe.Pointer
			_    [16]byte
		}
		copy(ifr.name[:], iface)
		ifr.data = unsafe.Pointer(&value)
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); errno != 0 {
			return fmt.Errorf("turn off tx checksum offload on %s in %s: %w", iface, netns, errno)
		}
		return nil
	})
}

// ServeName answers on TCP and UDP port in the endpoint's namespace (every
// address) with the endpoint's Label and a newline: each TCP connection
// gets it after its first line and is closed, each UDP datagram gets it
// back in one datagram. A client behind a load balancer learns which
// backend it reached (AskName). stop closes both sockets.
func (e *Endpoint) ServeName(port int) (stop func(), err error) {
	answer := []byte(e.Label + "\n")
	return e.serveAnswer(port, func(netip.Addr) []byte { return answer })
}

// ServePeer answers as ServeName does, with the source address each
// connection or datagram arrived from instead of the label: a client
// learns the address a load balancer or a NAT made it (AskName).
func (e *Endpoint) ServePeer(port int) (stop func(), err error) {
	return e.serveAnswer(port, func(from netip.Addr) []byte { return []byte(from.String() + "\n") })
}

// serveAnswer answers on TCP and UDP port in the endpoint's namespace
// (every address) with answer of the peer's address (IPv4 unmapped).
func (e *Endpoint) serveAnswer(port int, answer func(from netip.Addr) []byte) (stop func(), err error) {
	var l net.Listener
	var pc net.PacketConn
	addr := net.JoinHostPort("::", strconv.Itoa(port))
	if err := Enter(e.Netns, func() (err error) {
		if l, err = net.Listen("tcp", addr); err != nil {
			return err
		}
		if pc, err = net.ListenPacket("udp", addr); err != nil {
			_ = l.Close()
		}
		return err
	}); err != nil {
		return nil, err
	}
	peer := func(a net.Addr) netip.Addr {
		ap, _ := netip.ParseAddrPort(a.String())
		return ap.Addr().Unmap()
	}
	go serveEach(l, func(c net.Conn) {
		// The question first: closing with it unread would reset the
		// connection before the client reads the answer.
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := bufio.NewReader(c).ReadString('\n'); err == nil {
			_, _ = c.Write(answer(peer(c.RemoteAddr())))
		}
	})
	go func() {
		buf := make([]byte, 1500)
		for {
			_, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo(answer(peer(from)), from)
		}
	}()
	return func() { _ = l.Close(); _ = pc.Close() }, nil
}

// AskName connects from the endpoint to dst:port over network ("tcp" or
// "udp", a new connection or socket each time), sends a line and returns
// the line that comes back without its newline (from ServeName: the label
// of the endpoint that answered), within timeout.
func (e *Endpoint) AskName(network string, dst netip.Addr, port int, timeout time.Duration) (string, error) {
	var answer string
	err := Enter(e.Netns, func() error {
		c, err := net.DialTimeout(network, netip.AddrPortFrom(dst, uint16(port)).String(), timeout)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(timeout))
		if _, err := io.WriteString(c, "who\n"); err != nil {
			return err
		}
		buf := make([]byte, 1500)
		n, err := c.Read(buf)
		if err != nil {
			return err
		}
		answer = strings.TrimSuffix(string(buf[:n]), "\n")
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("%s: %s to %s port %d: %w", e.Label, network, dst, port, err)
	}
	return answer, nil
}
