package ipalloc

import (
	"fmt"
	"math/rand/v2"
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

// benchOwners are n owners named as the reconciler names pods, made before
// the clock starts.
func benchOwners(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("pod/tenant-%d/web-%d", i%50, i)
	}
	return out
}

var gatewaysSink []netip.Addr

// allocatePod is the pool's part of giving a pod its addresses, as
// reconcilers/addresses does it: the owner is not known yet, its dynamic
// allocation, the gateways for its annotation.
func allocatePod(p *Pool, owner string) error {
	if _, held := p.Lookup(owner); held {
		return fmt.Errorf("%s already holds addresses", owner)
	}
	if _, err := p.Allocate(owner, Request{}); err != nil {
		return err
	}
	gatewaysSink = p.Gateways()
	return nil
}

// dynamicCapacity is how many dynamic allocations cfg's pool takes.
func dynamicCapacity(b *testing.B, cfg Config) int {
	p, _ := New(cfg)
	n := 0
	for ; ; n++ {
		if _, err := p.Allocate(fmt.Sprint(n), Request{}); err != nil {
			if ReasonOf(err) != ReasonSubnetExhausted {
				b.Fatal(err)
			}
			return n
		}
	}
}

func reportRate(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "addrs/s")
}

// BenchmarkDynamicAllocation: one pod's dynamic allocation per op in the /16
// with 25 reserved ranges, filled from empty to full and then replaced by a
// new pool off the clock. The baseline is the naive scan; compare ns/op of
// the two sub-benchmarks. high-fill: the same allocation while the pool is
// 99% to 100% full (pods leaving at random make the holes, off the clock),
// against its baseline of a pool 0% to 1% full.
func BenchmarkDynamicAllocation(b *testing.B) {
	cfg := benchNetwork()
	capacity := dynamicCapacity(b, cfg)
	b.Run("udnkit", func(b *testing.B) {
		owners := benchOwners(capacity)
		p, _ := New(cfg)
		i := 0
		for b.Loop() {
			if i == len(owners) {
				b.StopTimer()
				p, _ = New(cfg)
				i = 0
				b.StartTimer()
			}
			if err := allocatePod(p, owners[i]); err != nil {
				b.Fatal(err)
			}
			i++
		}
		reportRate(b)
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
		reportRate(b)
	})
	b.Run("high-fill", func(b *testing.B) {
		batch := capacity / 100
		b.Run("udnkit-99pct-full", func(b *testing.B) { benchChurn(b, cfg, capacity, capacity-batch, batch) })
		b.Run("baseline-empty-subnet", func(b *testing.B) { benchChurn(b, cfg, capacity, 0, batch) })
	})
}

// benchChurn holds level owners, then allocates batch pods on the clock and
// releases batch held owners chosen at random off it, again and again.
func benchChurn(b *testing.B, cfg Config, capacity, level, batch int) {
	p, _ := New(cfg)
	owners := benchOwners(capacity)
	held, pending := owners[:level:level], owners[level:level+batch]
	for _, o := range held {
		if err := allocatePod(p, o); err != nil {
			b.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(15, 99))
	for b.Loop() {
		if len(pending) == 0 {
			b.StopTimer()
			for range batch {
				i := rng.IntN(len(held))
				p.Release(held[i])
				pending = append(pending, held[i])
				held[i] = held[len(held)-1]
				held = held[:len(held)-1]
			}
			b.StartTimer()
		}
		o := pending[len(pending)-1]
		pending = pending[:len(pending)-1]
		if err := allocatePod(p, o); err != nil {
			b.Fatal(err)
		}
		held = append(held, o)
	}
	reportRate(b)
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
