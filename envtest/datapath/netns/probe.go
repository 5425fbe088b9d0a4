package netns

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Probe sends ICMP echo requests to one address at a fixed interval and
// records when each is answered, for traffic that must keep flowing while
// something changes (a live migration, an upgrade).
type Probe struct {
	sock     *icmp
	dst      netip.Addr
	id       uint16
	interval time.Duration
	stop     chan struct{}
	done     sync.WaitGroup

	mu      sync.Mutex
	sent    map[uint16]time.Time // sequence number -> departure
	replies map[uint16]time.Time // sequence number -> arrival
	err     error
}

// ProbeResult is what a Probe saw.
type ProbeResult struct {
	// Sent and Answered count the echo requests and their distinct replies.
	Sent, Answered int
	// LongestGap is the longest time between two consecutive replies (from
	// the first reply to the last), and GapStart when it began.
	LongestGap time.Duration
	GapStart   time.Time
	// LongestOutage is the longest time every request sent was lost: from
	// sending the first of consecutive unanswered requests to sending the
	// next answered one (or to an interval after the last request). Unlike LongestGap it does
	// not grow when the prober itself stalls (nothing sent, nothing lost)
	// or its replies come late.
	LongestOutage time.Duration
	// SlowestReply is the longest round trip of an answered request.
	SlowestReply time.Duration
	// Interval is the time between two requests.
	Interval time.Duration
}

// Lost is the number of requests never answered.
func (r ProbeResult) Lost() int { return r.Sent - r.Answered }

func (r ProbeResult) String() string {
	return fmt.Sprintf("%d echo requests every %s: %d answered, %d lost, longest gap between replies %d ms, longest outage %d ms, slowest reply %d ms",
		r.Sent, r.Interval, r.Answered, r.Lost(), r.LongestGap.Milliseconds(), r.LongestOutage.Milliseconds(), r.SlowestReply.Milliseconds())
}

// StartProbe starts sending echo requests from the endpoint to dst, one
// every interval, until Stop.
func (e *Endpoint) StartProbe(dst netip.Addr, interval time.Duration) (*Probe, error) {
	p := &Probe{dst: dst, interval: interval, id: uint16(rand.UintN(1 << 16)), stop: make(chan struct{}),
		sent: map[uint16]time.Time{}, replies: map[uint16]time.Time{}}
	// The socket belongs to the namespace it is opened in; any thread may
	// use it afterwards.
	if err := Enter(e.Netns, func() (err error) {
		p.sock, err = listenICMP(dst.Is6())
		return err
	}); err != nil {
		return nil, err
	}
	p.done.Add(2)
	go p.send()
	go p.receive()
	return p, nil
}

func (p *Probe) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = err
	}
}

func (p *Probe) send() {
	defer p.done.Done()
	tick := time.NewTicker(p.interval)
	defer tick.Stop()
	for seq := 0; ; seq++ {
		msg := make([]byte, 8+32)
		msg[0] = p.sock.request
		binary.BigEndian.PutUint16(msg[4:], p.id)
		binary.BigEndian.PutUint16(msg[6:], uint16(seq))
		if p.dst.Is4() {
			binary.BigEndian.PutUint16(msg[2:], checksum(msg))
		}
		if _, err := p.sock.conn.WriteTo(msg, &net.IPAddr{IP: p.dst.AsSlice()}); err != nil {
			p.fail(err)
			return
		}
		p.mu.Lock()
		p.sent[uint16(seq)] = time.Now()
		p.mu.Unlock()
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
	}
}

func (p *Probe) receive() {
	defer p.done.Done()
	for {
		select {
		case <-p.stop:
			return
		default:
		}
		typ, id, seq, from, ok, err := p.sock.next(time.Now().Add(50 * time.Millisecond))
		if err != nil {
			p.fail(err)
			return
		}
		if ok && typ == p.sock.reply && id == p.id && from == p.dst {
			now := time.Now()
			p.mu.Lock()
			if _, dup := p.replies[seq]; !dup {
				p.replies[seq] = now
			}
			p.mu.Unlock()
		}
	}
}

// Stop stops sending, waits grace for the last replies and reports.
func (p *Probe) Stop(grace time.Duration) (ProbeResult, error) {
	time.Sleep(grace)
	close(p.stop)
	p.done.Wait()
	_ = p.sock.conn.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	r := ProbeResult{Sent: len(p.sent), Answered: len(p.replies), Interval: p.interval}
	var at []time.Time
	for seq, t := range p.replies {
		at = append(at, t)
		r.SlowestReply = max(r.SlowestReply, t.Sub(p.sent[seq]))
	}
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(at); i++ {
		if gap := at[i].Sub(at[i-1]); gap > r.LongestGap {
			r.LongestGap, r.GapStart = gap, at[i-1]
		}
	}
	r.LongestOutage = p.longestOutage()
	return r, p.err
}

// longestOutage is ProbeResult.LongestOutage; p.mu held.
func (p *Probe) longestOutage() time.Duration {
	var longest time.Duration
	var lostSince time.Time // when the current run of lost requests began
	for seq := range len(p.sent) {
		sent := p.sent[uint16(seq)]
		if _, answered := p.replies[uint16(seq)]; !answered {
			if lostSince.IsZero() {
				lostSince = sent
			}
			continue
		}
		if !lostSince.IsZero() {
			longest = max(longest, sent.Sub(lostSince))
			lostSince = time.Time{}
		}
	}
	if !lostSince.IsZero() && len(p.sent) > 0 {
		longest = max(longest, p.sent[uint16(len(p.sent)-1)].Add(p.interval).Sub(lostSince))
	}
	return longest
}

// Stream is one TCP connection from an endpoint to an echo server
// (ServeTCP) that exchanges a numbered line at a fixed interval, so a
// break of the connection (a reset, a timeout) shows.
type Stream struct {
	conn     net.Conn
	interval time.Duration
	stop     chan struct{}
	done     chan StreamResult
}

// StreamResult is what a Stream saw.
type StreamResult struct {
	// Exchanges counts the lines echoed back.
	Exchanges int
	// LongestStall is the longest time between two echoed lines.
	LongestStall time.Duration
	// Local is the connection's local address (one connection throughout).
	Local string
	// Err is why the connection broke (nil: it did not).
	Err error
}

// OpenStream connects from the endpoint to dst:port and starts exchanging
// a line every interval until Stop. A line not echoed within 30 s breaks
// the stream.
func (e *Endpoint) OpenStream(dst netip.Addr, port int, interval time.Duration) (*Stream, error) {
	s := &Stream{interval: interval, stop: make(chan struct{}), done: make(chan StreamResult, 1)}
	if err := Enter(e.Netns, func() (err error) {
		s.conn, err = net.DialTimeout("tcp", netip.AddrPortFrom(dst, uint16(port)).String(), 10*time.Second)
		return err
	}); err != nil {
		return nil, fmt.Errorf("%s: TCP to %s port %d: %w", e.Label, dst, port, err)
	}
	go s.run()
	return s, nil
}

func (s *Stream) run() {
	r := StreamResult{Local: s.conn.LocalAddr().String()}
	in := bufio.NewReader(s.conn)
	last := time.Now()
	for n := 0; ; n++ {
		line := "line " + strconv.Itoa(n) + "\n"
		_ = s.conn.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := s.conn.Write([]byte(line)); err != nil {
			r.Err = err
			break
		}
		got, err := in.ReadString('\n')
		if err != nil || got != line {
			r.Err = fmt.Errorf("line %d echoed as %q: %v", n, got, err)
			break
		}
		r.Exchanges++
		r.LongestStall = max(r.LongestStall, time.Since(last))
		last = time.Now()
		select {
		case <-s.stop:
			s.done <- r
			return
		case <-time.After(s.interval):
		}
	}
	<-s.stop
	s.done <- r
}

// Stop ends the exchanges, closes the connection and reports.
func (s *Stream) Stop() StreamResult {
	close(s.stop)
	r := <-s.done
	_ = s.conn.Close()
	return r
}
