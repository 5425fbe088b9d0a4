package ipalloc

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/udnkit/udnkit/ovnk"
)

// walker is the reference for the order of dynamic allocation: every
// address of a single subnet in a list, a plain set of what is held, and a
// cursor that moves one address at a time and wraps once.
type walker struct {
	addrs    []netip.Addr
	derived  []string // the derived MAC of each of addrs
	excluded map[netip.Addr]bool
	held     map[netip.Addr]bool
	macs     map[string]bool
	cursor   int
	free     int // addresses neither excluded nor held
}

func (w *walker) hold(a netip.Addr, mac string) {
	if !w.excluded[a] {
		w.free--
	}
	w.held[a], w.macs[mac] = true, true
}

func (w *walker) release(a netip.Addr, mac string) {
	if !w.excluded[a] {
		w.free++
	}
	delete(w.held, a)
	delete(w.macs, mac)
}

func newWalker(t *testing.T, p *Pool, cfg Config) *walker {
	t.Helper()
	s := cfg.Subnets[0]
	w := &walker{excluded: map[netip.Addr]bool{}, held: map[netip.Addr]bool{}, macs: map[string]bool{}}
	for a := s.Addr(); s.Contains(a); a = a.Next() {
		w.addrs = append(w.addrs, a)
		w.derived = append(w.derived, ovnk.MACFromIP(a).String())
		for _, r := range append(append([]netip.Prefix{}, cfg.ReservedSubnets...), cfg.InfrastructureSubnets...) {
			w.excluded[a] = w.excluded[a] || r.Contains(a)
		}
	}
	w.excluded[s.Addr()] = true
	if s.Addr().Is4() {
		w.excluded[w.addrs[len(w.addrs)-1]] = true
	}
	for _, a := range append(p.Gateways(), p.ManagementIPs()...) {
		w.excluded[a], w.held[a] = true, true
		w.macs[ovnk.MACFromIP(a).String()] = true
	}
	for _, a := range w.addrs {
		if !w.excluded[a] {
			w.free++
		}
	}
	return w
}

func (w *walker) next() (netip.Addr, bool) {
	if w.free == 0 {
		return netip.Addr{}, false
	}
	for k := range w.addrs {
		i := (w.cursor + k) % len(w.addrs)
		a := w.addrs[i]
		if w.held[a] || w.excluded[a] || w.macs[w.derived[i]] {
			continue
		}
		w.cursor = i + 1
		return a, true
	}
	return netip.Addr{}, false
}

// TestDynamicOrderMatchesReferenceWalk: over subnets of several chunks, with
// excluded ranges across chunk boundaries, random allocations, releases and
// explicit requests (some inside reserved ranges, some taking the derived
// MAC of a free address) give exactly the addresses, refusals and owners of
// the one-address-at-a-time reference walk.
func TestDynamicOrderMatchesReferenceWalk(t *testing.T) {
	for _, cfg := range []Config{
		// 4 chunks; the two reserved /28s make one range across offset 1024.
		{Subnets: pfx("10.8.0.0/20"), ReservedSubnets: pfx("10.8.3.240/28", "10.8.4.0/28", "10.8.8.0/22")},
		{Subnets: pfx("10.8.0.0/21"), InfrastructureSubnets: pfx("10.8.7.248/29"), DefaultGatewayIPs: addrs("10.8.7.249"), ReservedSubnets: pfx("10.8.0.0/26")},
		{Subnets: pfx("fd00:8::/116"), ReservedSubnets: pfx("fd00:8::3c0/122", "fd00:8::400/124")},
	} {
		t.Run(cfg.Subnets[0].String(), func(t *testing.T) {
			p := mustNew(t, cfg)
			w := newWalker(t, p, cfg)
			rng := rand.New(rand.NewPCG(5, uint64(len(w.addrs))))
			held := map[string]Allocation{}
			var names []string
			exhausted := 0
			for step := 0; step < 4*len(w.addrs); step++ {
				owner := fmt.Sprintf("o%d", step)
				switch r := rng.IntN(100); {
				case r < 65: // dynamic; the pool fills, then runs nearly full
					want, ok := w.next()
					a, err := p.Allocate(owner, Request{})
					if !ok {
						if ReasonOf(err) != ReasonSubnetExhausted {
							t.Fatalf("step %d: reference is exhausted, pool gave %v %v", step, a.IPs, err)
						}
						exhausted++
						continue
					}
					if err != nil || a.IPs[0].Addr() != want {
						t.Fatalf("step %d: pool gave %v %v, reference walk %v", step, a.IPs, err, want)
					}
					w.hold(want, a.MAC.String())
					held[owner], names = a, append(names, owner)
				case r < 85 && len(names) > 0: // release a random holder
					i := rng.IntN(len(names))
					o := names[i]
					names[i], names = names[len(names)-1], names[:len(names)-1]
					if !p.Release(o) {
						t.Fatalf("step %d: %s held addresses but Release said no", step, o)
					}
					w.release(held[o].IPs[0].Addr(), held[o].MAC.String())
					delete(held, o)
				default: // explicit request, with the derived MAC of another address half the time
					i := rng.IntN(len(w.addrs))
					a, mac := w.addrs[i], w.derived[i]
					req := Request{IPs: []string{a.String()}}
					if r%2 == 0 {
						mac = w.derived[rng.IntN(len(w.addrs))]
						req.MAC = mac
					}
					wantOK := !w.held[a] && !w.macs[mac] && a != w.addrs[0] && (a.Is6() || a != w.addrs[len(w.addrs)-1])
					for _, in := range cfg.InfrastructureSubnets {
						wantOK = wantOK && !in.Contains(a)
					}
					got, err := p.Allocate(owner, req)
					if (err == nil) != wantOK {
						t.Fatalf("step %d: request %v: pool says %v, reference ok=%v", step, req, err, wantOK)
					}
					if err == nil {
						w.hold(a, mac)
						held[owner], names = got, append(names, owner)
					}
				}
			}
			if exhausted == 0 {
				t.Fatal("the sequence never filled the pool")
			}
			for o, a := range held {
				if p.OwnerOfIP(a.IPs[0].Addr()) != o || p.OwnerOfMAC(a.MAC) != o {
					t.Fatalf("%s holds %v %s; pool says %q and %q", o, a.IPs, a.MAC, p.OwnerOfIP(a.IPs[0].Addr()), p.OwnerOfMAC(a.MAC))
				}
			}
			if p.Len() != len(held) {
				t.Fatalf("pool has %d owners, reference %d", p.Len(), len(held))
			}
		})
	}
}
