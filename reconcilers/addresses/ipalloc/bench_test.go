package ipalloc

import (
	"fmt"
	"net/netip"
	"testing"
)

// benchNetwork is a /16 with the maximum 25 reserved ranges spread over it.
func benchNetwork() Config {
	cfg := Config{Subnets: pfx("10.20.0.0/16")}
	for i := 0; i < 25; i++ {
		cfg.ReservedSubnets = append(cfg.ReservedSubnets, netip.MustParsePrefix(fmt.Sprintf("10.20.%d.0/26", i*10)))
	}
	return cfg
}

// naivePool is the baseline: what a first implementation would do, a scan
// from the subnet start that checks each reserved range and a used set.
type naivePool struct {
	cfg  Config
	used map[netip.Addr]bool
}

func (n *naivePool) allocate() (netip.Addr, bool) {
	s := n.cfg.Subnets[0]
next:
	for a := s.Addr().Next().Next().Next(); s.Contains(a); a = a.Next() {
		if n.used[a] {
			continue
		}
		for _, r := range n.cfg.ReservedSubnets {
			if r.Contains(a) {
				continue next
			}
		}
		n.used[a] = true
		return a, true
	}
	return netip.Addr{}, false
}

// BenchmarkDynamicAllocation: one dynamic allocation per op in the /16 with
// 25 reserved ranges; the pool is refilled when full. The baseline is the
// naive scan; compare ns/op of the two sub-benchmarks.
func BenchmarkDynamicAllocation(b *testing.B) {
	cfg := benchNetwork()
	b.Run("udnkit", func(b *testing.B) {
		p, _ := New(cfg)
		for i := 0; b.Loop(); i++ {
			if _, err := p.Allocate(fmt.Sprint(i), Request{}); err != nil {
				b.StopTimer()
				p, _ = New(cfg)
				b.StartTimer()
			}
		}
	})
	b.Run("baseline-naive-scan", func(b *testing.B) {
		n := &naivePool{cfg: cfg, used: map[netip.Addr]bool{}}
		for b.Loop() {
			if _, ok := n.allocate(); !ok {
				b.StopTimer()
				n.used = map[netip.Addr]bool{}
				b.StartTimer()
			}
		}
	})
}

// BenchmarkConflictCheck: a refused request (its IP is held) against a pool
// of 30,000 allocations, versus the baseline of scanning every allocation.
func BenchmarkConflictCheck(b *testing.B) {
	p, _ := New(benchNetwork())
	var all []Allocation
	for i := 0; i < 30000; i++ {
		a, err := p.Allocate(fmt.Sprint(i), Request{})
		if err != nil {
			b.Fatal(err)
		}
		all = append(all, a)
	}
	held := all[len(all)-1].IPs[0].Addr()
	req := Request{IPs: []string{held.String()}, MAC: "02:00:00:00:00:01"}
	b.Run("udnkit", func(b *testing.B) {
		for b.Loop() {
			if _, err := p.Allocate("intruder", req); ReasonOf(err) != ReasonIPAddressConflict {
				b.Fatal(err)
			}
		}
	})
	b.Run("baseline-scan-allocations", func(b *testing.B) {
		for b.Loop() {
			ip, _ := netip.ParseAddr(req.IPs[0])
			found := false
			for _, a := range all {
				if a.IPs[0].Addr() == ip || a.MAC.String() == req.MAC {
					found = true
					break
				}
			}
			if !found {
				b.Fatal("no conflict found")
			}
		}
	})
}
