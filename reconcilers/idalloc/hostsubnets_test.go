package idalloc

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"
)

// hostSubnetStep is one allocation of an orderCase: when setNext, the
// cursor is set to next first (as upstream's tests set
// subnetAllocatorRange.next); want is the host subnet the node gets.
type hostSubnetStep struct {
	setNext bool
	next    uint64
	want    string
}

// TestHostSubnetOrderIsUpstreams hands host subnets out in the order of
// upstream's subnet allocator, with the expectations of its tests
// (pkg/clustermanager/node/subnet_allocator_test.go): IPv6 skips the
// sequence numbers whose low 16 bits are 0 when a cluster subnet holds at
// least 2^16 host subnets, IPv4 never skips but rotates a host subnet index
// that spills into the next octet, and at most 2^24 sequence numbers are
// used.
func TestHostSubnetOrderIsUpstreams(t *testing.T) {
	seq := func(from, to int, f func(int) string) []hostSubnetStep {
		var out []hostSubnetStep
		for n := from; n < to; n++ {
			out = append(out, hostSubnetStep{want: f(n)})
		}
		return out
	}
	at := func(next uint64, want string) hostSubnetStep { return hostSubnetStep{true, next, want} }
	for _, c := range []struct {
		name     string
		cidr     string
		hostBits int
		steps    []hostSubnetStep
	}{
		{"IPv6 /48 by /64 skips the zero subnet", "fd01::/48", 64, append(
			seq(1, 257, func(n int) string { return fmt.Sprintf("fd01:0:0:%x::/64", n) }),
			at(0xFFFF, "fd01:0:0:ffff::/64"), hostSubnetStep{want: "fd01:0:0:101::/64"})},
		{"IPv6 /48 by /60: under 2^16 host subnets, none skipped", "fd01::/48", 60,
			seq(0, 256, func(n int) string { return fmt.Sprintf("fd01:0:0:%x::/60", n<<4) })},
		{"IPv6 /48 by /84: 2^24 sequence numbers", "fd01::/48", 84, append(
			seq(1, 256, func(n int) string { return fmt.Sprintf("fd01:0:0:0:%x:%x::/84", n>>4, (n<<12)&0xFFFF) }),
			hostSubnetStep{want: "fd01:0:0:0:10:0::/84"}, at(0x00FFFFFF, "fd01:0:0:f:ffff:f000::/84"),
			hostSubnetStep{want: "fd01:0:0:0:10:1000::/84"})},
		{"IPv4 /8 by /24: no subnet skipped", "10.0.0.0/8", 24,
			seq(0, 3, func(n int) string { return fmt.Sprintf("10.0.%d.0/24", n) })},
		{"IPv4 /16 by /22: no rotation within an octet", "10.1.0.0/16", 22,
			seq(0, 64, func(n int) string { return fmt.Sprintf("10.1.%d.0/22", n*4) })},
		{"IPv4 /16 by /26: the .0 subnets first", "10.1.0.0/16", 26, append(append(append(
			seq(0, 256, func(n int) string { return fmt.Sprintf("10.1.%d.0/26", n) }),
			seq(0, 256, func(n int) string { return fmt.Sprintf("10.1.%d.64/26", n) })...),
			hostSubnetStep{want: "10.1.0.128/26"}), at(1023, "10.1.255.192/26"), hostSubnetStep{want: "10.1.1.128/26"})},
	} {
		a, err := NewHostSubnetAllocator([]ClusterSubnet{{CIDR: netip.MustParsePrefix(c.cidr), HostBits: c.hostBits}})
		if err != nil {
			t.Fatal(err)
		}
		for i, st := range c.steps {
			if st.setNext {
				a.subnets[0].next = st.next
			}
			got, err := a.Allocate(fmt.Sprintf("order-node-%d", i))
			want := netip.MustParsePrefix(st.want)
			if err != nil || len(got) != 1 || got[0] != want {
				t.Fatalf("%s: allocation %d: got %v, %v; want %v", c.name, i, got, err, want)
			}
		}
	}
}

// TestHostSubnetExhaustionCountsSkipped: an IPv6 cluster subnet whose every
// host subnet but the skipped ones is held is exhausted (the zero subnet is
// never handed out), and the cursor goes back to the start, as upstream's.
// A skipped subnet an annotation already records is still adopted.
func TestHostSubnetExhaustionCountsSkipped(t *testing.T) {
	a, err := NewHostSubnetAllocator([]ClusterSubnet{{CIDR: netip.MustParsePrefix("fd00:9::/104"), HostBits: 120}})
	if err != nil {
		t.Fatal(err)
	}
	s := a.subnets[0]
	if s.seq != 1<<16 || !s.skipLow16 {
		t.Fatalf("sequence %d, skip %v", s.seq, s.skipLow16)
	}
	holder := internOwner("exhaust-holder")
	for idx := uint64(1); idx < s.count; idx++ {
		s.used[idx] = holder
	}
	s.next = 7
	if got, err := a.Allocate("exhaust-late"); !errors.Is(err, ErrExhausted) {
		t.Fatalf("the zero subnet was handed out: %v, %v", got, err)
	}
	if s.next != 0 {
		t.Fatalf("cursor %d after exhaustion, want 0", s.next)
	}
	if err := a.Reserve("exhaust-old", netip.MustParsePrefix("fd00:9::/120")); err != nil {
		t.Fatalf("adopting a recorded zero subnet: %v", err)
	}
	delete(s.used, 0x1234)
	if got, err := a.Allocate("exhaust-late"); err != nil || fmt.Sprint(got) != "[fd00:9::12:3400/120]" {
		t.Fatalf("after a release: %v, %v", got, err)
	}
}

// TestHostSubnetSingleRejected: a host subnet as long as its cluster subnet
// (a /64 cluster subnet with the default /64) is refused, as upstream's
// ParseClusterSubnetEntriesWithDefaults refuses it.
func TestHostSubnetSingleRejected(t *testing.T) {
	p := netip.MustParsePrefix("fd00:64::/64")
	if _, err := NewHostSubnetAllocator([]ClusterSubnet{{CIDR: p, HostBits: DefaultHostBits(p)}}); err == nil {
		t.Fatal("a /64 cluster subnet split into /64 host subnets was accepted")
	}
}
