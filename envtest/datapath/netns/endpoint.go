package netns

import (
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// Endpoint is a network namespace that sends and observes traffic.
type Endpoint struct {
	// Netns is the network namespace.
	Netns string
	// Label names it in errors.
	Label string
}

// Reach sends echo requests to dst, one every 200 ms, until one is
// answered; the error says how many went unanswered within timeout.
func (e *Endpoint) Reach(dst netip.Addr, timeout time.Duration) error {
	return e.ReachEvery(dst, timeout, 200*time.Millisecond)
}

// ReachEvery sends echo requests to dst, one every interval, until one is
// answered; the error says how many went unanswered within timeout.
func (e *Endpoint) ReachEvery(dst netip.Addr, timeout, interval time.Duration) error {
	sent, answered, err := echo(e.Netns, dst, int(timeout/interval), interval, true)
	if err != nil {
		return err
	}
	if answered == 0 {
		return fmt.Errorf("%s got no echo reply from %s: %d requests in %s", e.Label, dst, sent, timeout)
	}
	return nil
}

// Ping sends count echo requests to dst, one every interval, and returns
// how many were answered.
func (e *Endpoint) Ping(dst netip.Addr, count int, interval time.Duration) (int, error) {
	_, answered, err := echo(e.Netns, dst, count, interval, false)
	return answered, err
}

// EchoRequestsSeen counts the ICMP echo requests from src that reach the
// endpoint while during runs.
func (e *Endpoint) EchoRequestsSeen(src netip.Addr, during func() error) (int, error) {
	return echoRequestsSeen(e.Netns, src, during)
}

// Neighbor is the MAC the neighbour table of iface in namespace netns holds
// for addr ("" for none).
func Neighbor(netns, iface, addr string) (string, error) {
	out, err := Run("", nil, "ip", "-n", netns, "neigh", "show", addr, "dev", iface)
	if err != nil {
		return "", err
	}
	f := strings.Fields(out)
	for i := range f {
		if f[i] == "lladdr" && i+1 < len(f) {
			return f[i+1], nil
		}
	}
	return "", nil
}
