package ipalloc

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// TestFullPoolGivesBackItsLastHoles: in a full /16 (64 chunks), single
// released addresses at chunk edges come back in walk order, each the only
// free address of its chunk, then the pool is exhausted again.
func TestFullPoolGivesBackItsLastHoles(t *testing.T) {
	p := mustNew(t, Config{Subnets: pfx("10.30.0.0/16")})
	got := drain(t, p)
	if len(got) != 65536-4 {
		t.Fatalf("a /16 gives 65532 dynamic addresses, got %d", len(got))
	}
	holes := []string{"10.30.3.255", "10.30.4.0", "10.30.19.136", "10.30.255.254"}
	for _, h := range holes {
		owner := p.OwnerOfIP(netip.MustParseAddr(h))
		if owner == "" || !p.Release(owner) {
			t.Fatalf("%s should be held after draining, owner %q", h, owner)
		}
	}
	var again []string
	for i := range holes {
		a, err := p.Allocate(fmt.Sprintf("again-%d", i), Request{})
		if err != nil {
			t.Fatalf("hole %d: %v", i, err)
		}
		again = append(again, a.IPs[0].Addr().String())
	}
	if !slices.Equal(again, holes) {
		t.Fatalf("the holes came back as %v, want %v", again, holes)
	}
	if _, err := p.Allocate("one-too-many", Request{}); ReasonOf(err) != ReasonSubnetExhausted {
		t.Fatalf("a full pool must refuse with SubnetExhausted, got %v", err)
	}
}

// TestMemoryFollowsUse: a few pods keep a few bytes of holder ids, a chunk
// left empty is dropped, and an IPv6 /64 holds chunks only where addresses
// are held.
func TestMemoryFollowsUse(t *testing.T) {
	p := mustNew(t, Config{Subnets: pfx("10.31.0.0/16", "fd00:31::/64")})
	for i := 0; i < 5; i++ {
		if _, err := p.Allocate(fmt.Sprint(i), Request{}); err != nil {
			t.Fatal(err)
		}
	}
	v4, v6 := p.subnets[0], p.subnets[1]
	if c := v4.held.dense[0]; c == nil || c.held != 7 || len(c.ids) > 16 {
		t.Fatalf("5 pods and the 2 infrastructure addresses: want one chunk holding 7 in at most 16 ids, got %+v", c)
	}
	if v6.held.sparse == nil || len(v6.held.sparse) != 1 {
		t.Fatalf("a /64 indexes its chunks sparsely, one in use: %d", len(v6.held.sparse))
	}
	// Requests spread over the /64: one chunk each; past the walked 2^62
	// addresses, the side map.
	far := []string{"fd00:31::1:0:0:5", "fd00:31::2:0:0:0", "fd00:31::3fff:ffff:ffff:fffe", "fd00:31::c000:0:0:1"}
	for i, a := range far {
		if _, err := p.Allocate("far"+fmt.Sprint(i), Request{IPs: []string{fmt.Sprintf("10.31.200.%d", i+1), a}}); err != nil {
			t.Fatalf("request %s: %v", a, err)
		}
		if o := p.OwnerOfIP(netip.MustParseAddr(a)); o != "far"+fmt.Sprint(i) {
			t.Fatalf("%s is held by %q", a, o)
		}
	}
	if len(v6.held.sparse) != 4 || len(v6.beyond) != 1 {
		t.Fatalf("want 4 chunks and 1 address past the walked range, got %d and %d", len(v6.held.sparse), len(v6.beyond))
	}
	if _, err := p.Allocate("dup", Request{IPs: []string{"10.31.201.1", far[3]}}); ReasonOf(err) != ReasonIPAddressConflict {
		t.Fatalf("an address past the walked range is still conflict-checked: %v", err)
	}
	for i := range far {
		p.Release("far" + fmt.Sprint(i))
	}
	for i := 0; i < 5; i++ {
		p.Release(fmt.Sprint(i))
	}
	if len(v6.held.sparse) != 1 || len(v6.beyond) != 0 || v4.held.dense[0] == nil || v4.held.dense[0].held != 2 {
		t.Fatalf("after release only the infrastructure chunks stay: %d sparse chunks, %d beyond, %+v", len(v6.held.sparse), len(v6.beyond), v4.held.dense[0])
	}
	if p.OwnerOfIP(netip.MustParseAddr(far[3])) != "" {
		t.Fatalf("a released address past the walked range is free again")
	}
	// A dropped chunk comes back when its addresses are held again, also
	// right after it was dropped.
	for i, a := range []string{far[1], far[1], far[0], far[1]} {
		if o := p.OwnerOfIP(netip.MustParseAddr(a)); o != "" {
			t.Fatalf("released %s is still held by %q", a, o)
		}
		owner := fmt.Sprint("again-", i)
		if _, err := p.Allocate(owner, Request{IPs: []string{fmt.Sprint("10.31.202.", i+1), a}}); err != nil {
			t.Fatalf("request %s again: %v", a, err)
		}
		if p.OwnerOfIP(p.Gateways()[1]) != InfrastructureOwner || p.OwnerOfIP(netip.MustParseAddr(a)) != owner || len(v6.held.sparse) != 2 {
			t.Fatalf("%s is held by %q, want %s, in one of 2 chunks (%d)", a, p.OwnerOfIP(netip.MustParseAddr(a)), owner, len(v6.held.sparse))
		}
		p.Release(owner)
	}
	if len(v6.held.sparse) != 1 {
		t.Fatalf("after release only the infrastructure chunk stays: %d", len(v6.held.sparse))
	}
}

// TestDerivedMACConflictsWithoutTheMACMap: a MAC derived from its holder's
// IPv4 address is found through that address, whoever asks for it and
// however it was recorded (allocated, requested, restored); a MAC that ends
// with another address than its holder's is found in the map.
func TestDerivedMACConflictsWithoutTheMACMap(t *testing.T) {
	p := mustNew(t, Config{Subnets: pfx("10.32.0.0/24")})
	dyn, err := p.Allocate("dynamic", Request{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Restore("restored", Allocation{IPs: pfx("10.32.0.30/24"), MAC: mustMAC(t, "0a:58:0a:20:00:1e")}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Allocate("requested", Request{IPs: []string{"10.32.0.40"}, MAC: "0a:58:0a:20:00:28"}); err != nil {
		t.Fatal(err)
	}
	// .50's MAC names .60, which stays free: dynamic allocation must skip .60.
	if _, err := p.Allocate("crossed", Request{IPs: []string{"10.32.0.50"}, MAC: "0a:58:0a:20:00:3c"}); err != nil {
		t.Fatal(err)
	}
	for mac, owner := range map[string]string{
		dyn.MAC.String():    "dynamic",
		"0a:58:0a:20:00:1e": "restored",
		"0a:58:0a:20:00:28": "requested",
		"0a:58:0a:20:00:3c": "crossed",
		"0a:58:0a:20:00:02": InfrastructureOwner,
	} {
		if o := p.OwnerOfMAC(mustMAC(t, mac)); o != owner {
			t.Errorf("OwnerOfMAC(%s) = %q, want %q", mac, o, owner)
		}
		_, err := p.Allocate("intruder", Request{IPs: []string{"10.32.0.99"}, MAC: mac})
		if ReasonOf(err) != ReasonMACAddressConflict || !contains(err, "in use by "+owner) {
			t.Errorf("requesting %s: %v, want a MAC conflict with %s", mac, err, owner)
		}
		if err := p.Restore("intruder", Allocation{IPs: pfx("10.32.0.99/24"), MAC: mustMAC(t, mac)}); ReasonOf(err) != ReasonMACAddressConflict {
			t.Errorf("restoring %s: %v, want a MAC conflict", mac, err)
		}
	}
	// Nothing refused was kept.
	if p.OwnerOfIP(netip.MustParseAddr("10.32.0.99")) != "" || p.Len() != 4 {
		t.Fatalf("refusals changed the pool: %d owners", p.Len())
	}
	for i := 0; i < 60; i++ {
		a, err := p.Allocate(fmt.Sprint("fill", i), Request{})
		if err != nil {
			t.Fatal(err)
		}
		if a.IPs[0].Addr().String() == "10.32.0.60" {
			t.Fatalf("10.32.0.60 was handed out though its derived MAC is held by crossed")
		}
	}
	// Released MACs are free again, by the address and by the map.
	p.Release("restored")
	p.Release("crossed")
	for _, mac := range []string{"0a:58:0a:20:00:1e", "0a:58:0a:20:00:3c"} {
		if o := p.OwnerOfMAC(mustMAC(t, mac)); o != "" {
			t.Errorf("%s is still held by %q after release", mac, o)
		}
	}
}

func mustMAC(t *testing.T, s string) net.HardwareAddr {
	t.Helper()
	hw, err := net.ParseMAC(s)
	if err != nil {
		t.Fatal(err)
	}
	return hw
}

func contains(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }

// TestOwnersSurviveHashCollisions: with every owner name hashing alike, the
// pool still tells owners apart: lookups, idempotent allocation, release,
// reuse and counts behave as with distinct hashes.
func TestOwnersSurviveHashCollisions(t *testing.T) {
	cfg := Config{Subnets: pfx("10.33.0.0/24", "fd00:33::/64")}
	plain, colliding := mustNew(t, cfg), mustNew(t, cfg)
	colliding.owners.hash = func(string) uint32 { return 42 }
	for _, p := range []*Pool{plain, colliding} {
		for i := 0; i < 6; i++ {
			if _, err := p.Allocate(fmt.Sprint("pod-", i), Request{}); err != nil {
				t.Fatal(err)
			}
		}
		// The first owner sits in the hash map, the others beside it.
		for _, o := range []string{"pod-0", "pod-3"} {
			if !p.Release(o) || p.Release(o) {
				t.Fatalf("Release(%s) must succeed once", o)
			}
		}
		if _, err := p.Allocate("pod-6", Request{}); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Allocate("pod-0", Request{IPs: []string{"10.33.0.200", "fd00:33::200"}}); err != nil {
			t.Fatal(err)
		}
	}
	if plain.Len() != 6 || colliding.Len() != 6 {
		t.Fatalf("Len: %d and %d, want 6", plain.Len(), colliding.Len())
	}
	for i := 0; i <= 7; i++ {
		o := fmt.Sprint("pod-", i)
		want, wantOK := plain.Lookup(o)
		got, ok := colliding.Lookup(o)
		if ok != wantOK || !equal(got, want) {
			t.Fatalf("Lookup(%s) = %v %v with colliding hashes, %v %v without", o, got, ok, want, wantOK)
		}
		if !ok {
			continue
		}
		if again, err := colliding.Allocate(o, Request{}); err != nil || !equal(again, got) {
			t.Fatalf("Allocate(%s) again gave %v %v, want its allocation %v", o, again, err, got)
		}
		for _, ip := range got.IPs {
			if colliding.OwnerOfIP(ip.Addr()) != o {
				t.Fatalf("%v is held by %q, want %s", ip, colliding.OwnerOfIP(ip.Addr()), o)
			}
		}
	}
}
