package idalloc

import (
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/udnkit/udnkit/ovnk"
)

func TestIDAllocator(t *testing.T) {
	a := NewIDAllocator("node ID", 2, 6)
	if err := a.Reserve("n-a", 4); err != nil {
		t.Fatal(err)
	}
	if err := a.Reserve("n-b", 4); err == nil || !strings.Contains(err.Error(), "already held by n-a") {
		t.Fatalf("double reserve: %v", err)
	}
	if err := a.Reserve("n-b", 7); err == nil || !strings.Contains(err.Error(), "outside [2, 6]") {
		t.Fatalf("out of range: %v", err)
	}
	var got []int
	for _, o := range []string{"x", "y", "z", "w"} {
		id, err := a.Allocate(o)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, id)
	}
	if fmt.Sprint(got) != "[2 3 5 6]" {
		t.Fatalf("allocated %v, want [2 3 5 6] (4 is reserved)", got)
	}
	if _, err := a.Allocate("v"); !errors.Is(err, ErrExhausted) {
		t.Fatalf("want ErrExhausted, got %v", err)
	}
	a.Release("someone-else", 3)
	if o, _ := a.Owner(3); o != "y" {
		t.Fatalf("release by a non-owner freed 3")
	}
	a.ReleaseOwner("y")
	if id, err := a.Allocate("v"); err != nil || id != 3 {
		t.Fatalf("after release got %d, %v; want 3", id, err)
	}
}

func TestIDAllocatorConcurrent(t *testing.T) {
	a := NewIDAllocator("network ID", 1, 4095)
	var wg sync.WaitGroup
	ids := make([]int, 200)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := a.Allocate(fmt.Sprint("net-", i))
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		}()
	}
	wg.Wait()
	seen := map[int]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("id %d handed out twice", id)
		}
		seen[id] = true
	}
}

func TestHostSubnetAllocator(t *testing.T) {
	a, err := NewHostSubnetAllocator([]ClusterSubnet{
		{CIDR: netip.MustParsePrefix("10.0.0.0/23"), HostBits: 24},
		{CIDR: netip.MustParsePrefix("fd00::/63"), HostBits: 64},
	})
	if err != nil {
		t.Fatal(err)
	}
	// A restart reserves what node-a's annotation records first.
	if err := a.Reserve("node-a", netip.MustParsePrefix("10.0.1.0/24")); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"10.0.1.0/24", "10.0.2.0/24", "10.0.0.0/25", "10.0.0.128/24"} {
		if err := a.Reserve("node-z", netip.MustParsePrefix(bad)); err == nil {
			t.Errorf("Reserve(%s) accepted", bad)
		}
	}
	got, err := a.Allocate("node-a")
	if err != nil || fmt.Sprint(got) != "[10.0.1.0/24 fd00::/64]" {
		t.Fatalf("node-a: %v, %v", got, err)
	}
	got, err = a.Allocate("node-b")
	if err != nil || fmt.Sprint(got) != "[10.0.0.0/24 fd00:0:0:1::/64]" {
		t.Fatalf("node-b: %v, %v", got, err)
	}
	if _, err := a.Allocate("node-c"); !errors.Is(err, ErrExhausted) || !strings.Contains(err.Error(), "every IPv4 host subnet of 10.0.0.0/23 (hostSubnet 24) is in use") {
		t.Fatalf("node-c: want exhaustion naming the subnet, got %v", err)
	}
	if len(a.Owned("node-c")) != 0 {
		t.Fatalf("failed allocation leaked %v", a.Owned("node-c"))
	}
	// Appending keeps every assignment and extends the pool.
	if err := a.SetClusterSubnets([]ClusterSubnet{
		{CIDR: netip.MustParsePrefix("10.0.0.0/23"), HostBits: 24},
		{CIDR: netip.MustParsePrefix("fd00::/63"), HostBits: 64},
		{CIDR: netip.MustParsePrefix("10.1.0.0/24"), HostBits: 25},
		{CIDR: netip.MustParsePrefix("fd01::/64"), HostBits: 65},
	}); err != nil {
		t.Fatal(err)
	}
	got, err = a.Allocate("node-c")
	if err != nil || fmt.Sprint(got) != "[10.1.0.0/25 fd01::/65]" {
		t.Fatalf("node-c after append: %v, %v", got, err)
	}
	if fmt.Sprint(a.Owned("node-a")) != "[10.0.1.0/24 fd00::/64]" {
		t.Fatalf("node-a reassigned: %v", a.Owned("node-a"))
	}
	if err := a.SetClusterSubnets([]ClusterSubnet{{CIDR: netip.MustParsePrefix("10.0.0.0/23"), HostBits: 24}}); err == nil {
		t.Fatal("removing subnets accepted")
	}
	a.Release("node-b")
	got, err = a.Allocate("node-d")
	if err != nil || fmt.Sprint(got) != "[10.0.0.0/24 fd00:0:0:1::/64]" {
		t.Fatalf("node-d after release: %v, %v", got, err)
	}
}

// TestHostSubnetArithmetic holds the allocator's integer arithmetic to
// math/big's (ovnk.AddOffset) for host subnets on both sides of the 64-bit
// boundary, and index to be prefix's inverse.
func TestHostSubnetArithmetic(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		cidr     string
		hostBits int
	}{
		{"10.0.0.0/8", 24}, {"10.128.0.0/14", 23}, {"0.0.0.0/0", 32}, {"192.168.4.0/22", 30},
		{"fd00::/48", 64}, {"fd00::/60", 64}, {"fd00:1:2::/56", 65}, {"fd00::/32", 120},
		{"2001:db8::/64", 128}, {"::/0", 64}, {"fd00::/8", 72},
	} {
		a, err := NewHostSubnetAllocator([]ClusterSubnet{{CIDR: netip.MustParsePrefix(c.cidr), HostBits: c.hostBits}})
		if err != nil {
			t.Fatal(err)
		}
		s := a.subnets[0]
		for _, idx := range []uint64{0, 1, s.count - 1, rng.Uint64N(s.count), rng.Uint64N(s.count)} {
			got := s.prefix(idx)
			bits := s.CIDR.Addr().BitLen()
			off := new(big.Int).Lsh(new(big.Int).SetUint64(idx), uint(bits-c.hostBits))
			want := netip.PrefixFrom(ovnk.AddOffset(s.CIDR.Addr(), off), c.hostBits)
			if got != want {
				t.Errorf("%s /%d: host subnet %d is %v, want %v", c.cidr, c.hostBits, idx, got, want)
			}
			if back, ok := s.index(got); !ok || back != idx {
				t.Errorf("%s /%d: index(%v) = %d, %v; want %d", c.cidr, c.hostBits, got, back, ok, idx)
			}
		}
		// Not host subnets of it: another length, unmasked, outside.
		bad := []netip.Prefix{netip.PrefixFrom(s.CIDR.Addr(), c.hostBits-1)}
		if c.hostBits < s.CIDR.Addr().BitLen() {
			bad = append(bad, netip.PrefixFrom(s.prefix(1).Addr().Next(), c.hostBits))
		}
		if s.CIDR.Bits() > 0 {
			last := s.prefix(s.count - 1)
			outside := last.Addr()
			for range 1 << min(s.CIDR.Addr().BitLen()-c.hostBits, 20) {
				outside = outside.Next()
			}
			if !s.CIDR.Contains(outside) && outside.IsValid() {
				bad = append(bad, netip.PrefixFrom(outside, c.hostBits).Masked())
			}
		}
		for _, p := range bad {
			if _, ok := s.index(p); ok {
				t.Errorf("%s /%d: index(%v) accepted", c.cidr, c.hostBits, p)
			}
		}
	}
}

// TestHostSubnetOwnersAreNamed: errors and holdings name owners as given.
func TestHostSubnetOwnersAreNamed(t *testing.T) {
	a, err := NewHostSubnetAllocator([]ClusterSubnet{{CIDR: netip.MustParsePrefix("10.9.0.0/16"), HostBits: 24}})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Reserve("worker-1", netip.MustParsePrefix("10.9.3.0/24")); err != nil {
		t.Fatal(err)
	}
	if err := a.Reserve("worker-2", netip.MustParsePrefix("10.9.3.0/24")); err == nil || err.Error() != "host subnet 10.9.3.0/24 is already held by worker-1" {
		t.Fatalf("want the holder named, got %v", err)
	}
	if err := a.Reserve("worker-1", netip.MustParsePrefix("10.9.4.0/24")); err == nil || !strings.Contains(err.Error(), "worker-1 already holds host subnet 10.9.3.0/24") {
		t.Fatalf("want the family clash named, got %v", err)
	}
	if got := fmt.Sprint(a.Holdings()); got != "map[worker-1:[10.9.3.0/24]]" {
		t.Fatalf("holdings %s", got)
	}
	if a.Owned("nobody") != nil || a.Complete("nobody", nil) {
		t.Fatal("an unknown owner holds something")
	}
	a.Release("nobody")
	a.Release("worker-1")
	if got, err := a.Allocate("worker-2"); err != nil || fmt.Sprint(got) != "[10.9.0.0/24]" {
		t.Fatalf("after release: %v, %v", got, err)
	}
}

// TestIDAllocatorUnallocate: an allocation taken back (nobody saw it) is
// handed out again next, while a released id in use waits its round.
func TestIDAllocatorUnallocate(t *testing.T) {
	a := NewIDAllocator("network ID", 1, 4)
	x, _ := a.Allocate("x")
	y, _ := a.Allocate("y")
	a.Unallocate("x", y) // not x's: nothing happens
	if o, _ := a.Owner(y); o != "y" {
		t.Fatalf("unallocate by a non-owner freed %d", y)
	}
	a.Unallocate("y", y)
	if id, _ := a.Allocate("z"); id != y {
		t.Fatalf("after taking back %d the next allocation got %d", y, id)
	}
	a.Unallocate("x", x) // not the last one handed out: the round robin goes on
	if id, _ := a.Allocate("w"); id != 3 {
		t.Fatalf("after taking back an older id the next allocation got %d, want 3", id)
	}
	// The last id of the range, taken back, comes next again (the cursor wrapped).
	if id, _ := a.Allocate("v"); id != 4 {
		t.Fatalf("got %d, want 4", id)
	}
	a.Unallocate("v", 4)
	if id, _ := a.Allocate("u"); id != 4 {
		t.Fatalf("after taking back 4 (the range's last) got %d", id)
	}
}
