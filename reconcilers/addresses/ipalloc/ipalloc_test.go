package ipalloc

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/udnkit/udnkit/ovnk"
)

func pfx(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

func mustNew(t testing.TB, cfg Config) *Pool {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	return p
}

// okepExample is the network of OKEP-5233's usage example.
func okepExample() Config {
	return Config{
		Subnets:               pfx("192.168.100.0/24"),
		InfrastructureSubnets: pfx("192.168.100.0/30"),
		ReservedSubnets:       pfx("192.168.100.200/29"),
		DefaultGatewayIPs:     addrs("192.168.100.2"),
	}
}

// drain allocates dynamically until the pool is exhausted and returns the
// addresses in allocation order.
func drain(t *testing.T, p *Pool) []netip.Addr {
	t.Helper()
	var got []netip.Addr
	for i := 0; ; i++ {
		a, err := p.Allocate(fmt.Sprintf("pod-%d", i), Request{})
		if err != nil {
			if ReasonOf(err) != ReasonSubnetExhausted {
				t.Fatalf("allocation %d: want SubnetExhausted, got %v", i, err)
			}
			return got
		}
		got = append(got, a.IPs[0].Addr())
	}
}

func rangeOf(from, to string) []netip.Addr {
	var out []netip.Addr
	for a := netip.MustParseAddr(from); a.Compare(netip.MustParseAddr(to)) <= 0; a = a.Next() {
		out = append(out, a)
	}
	return out
}

func TestOKEPExampleAutomaticAllocation(t *testing.T) {
	p := mustNew(t, okepExample())
	want := append(rangeOf("192.168.100.4", "192.168.100.199"), rangeOf("192.168.100.208", "192.168.100.254")...)
	if got := drain(t, p); !slices.Equal(got, want) {
		t.Fatalf("automatic allocation gave %d addresses %v..., want .4-.199 and .208-.254 (%d)", len(got), got[:min(3, len(got))], len(want))
	}
	// The reserved range is still there for explicit requests.
	a, err := p.Allocate("migrated-app", Request{IPs: []string{"192.168.100.205"}, MAC: "00:1A:2B:3C:4D:5E"})
	if err != nil {
		t.Fatalf("request for .205: %v", err)
	}
	if a.IPs[0] != netip.MustParsePrefix("192.168.100.205/24") || a.MAC.String() != "00:1a:2b:3c:4d:5e" {
		t.Fatalf("got %v %s", a.IPs, a.MAC)
	}
	if g := p.Gateways(); g[0] != netip.MustParseAddr("192.168.100.2") {
		t.Fatalf("gateway %v", g)
	}
	if m := p.ManagementIPs(); m[0] != netip.MustParseAddr("192.168.100.1") {
		t.Fatalf("management IP %v, want the first usable infrastructure address .1", m)
	}
}

func TestDefaultInfrastructureTakesFirstUsableAddresses(t *testing.T) {
	for _, tc := range []struct {
		subnet, gw, mgmt, first string
	}{
		{"10.0.0.0/29", "10.0.0.1", "10.0.0.2", "10.0.0.3"},
		{"fd00:10::/125", "fd00:10::1", "fd00:10::2", "fd00:10::3"},
	} {
		p := mustNew(t, Config{Subnets: pfx(tc.subnet)})
		if p.Gateways()[0].String() != tc.gw || p.ManagementIPs()[0].String() != tc.mgmt {
			t.Fatalf("%s: gateway %v management %v", tc.subnet, p.Gateways(), p.ManagementIPs())
		}
		got := drain(t, p)
		if got[0].String() != tc.first {
			t.Fatalf("%s: first dynamic address %v, want %s", tc.subnet, got[0], tc.first)
		}
		for _, a := range got {
			if a == p.Gateways()[0] || a == p.ManagementIPs()[0] || a == netip.MustParsePrefix(tc.subnet).Addr() {
				t.Fatalf("%s: handed out excluded %v", tc.subnet, a)
			}
		}
		// IPv4 loses the broadcast address too; IPv6 only the subnet-router anycast.
		wantN := 8 - 3
		if netip.MustParsePrefix(tc.subnet).Addr().Is4() {
			wantN--
		}
		if len(got) != wantN {
			t.Fatalf("%s: %d dynamic addresses %v, want %d", tc.subnet, len(got), got, wantN)
		}
	}
}

// With a custom gateway and infrastructure range, .1 and .2 become workload addresses.
func TestCustomInfrastructureFreesDefaultAddresses(t *testing.T) {
	p := mustNew(t, Config{Subnets: pfx("10.0.0.0/16"), InfrastructureSubnets: pfx("10.0.255.0/30"), DefaultGatewayIPs: addrs("10.0.255.1")})
	for _, ip := range []string{"10.0.0.1", "10.0.0.2"} {
		if _, err := p.Allocate(ip, Request{IPs: []string{ip}}); err != nil {
			t.Fatalf("request %s: %v", ip, err)
		}
	}
}

func TestDualStackAndMACDerivation(t *testing.T) {
	p := mustNew(t, Config{Subnets: pfx("10.1.0.0/24", "fd00:1::/64")})
	a, err := p.Allocate("a", Request{})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.IPs) != 2 || a.IPs[0].String() != "10.1.0.3/24" || a.IPs[1].String() != "fd00:1::3/64" {
		t.Fatalf("dual-stack allocation %v", a.IPs)
	}
	if a.MAC.String() != "0a:58:0a:01:00:03" {
		t.Fatalf("derived MAC %s, want 0a:58 and the IPv4 octets", a.MAC)
	}
	v6 := ovnk.MACFromIP(netip.MustParseAddr("fd00:1::3"))
	// sha256("fd00:1::3") starts with these four bytes.
	if v6.String()[:6] != "0a:58:" || len(v6) != 6 {
		t.Fatalf("IPv6 derived MAC %s", v6)
	}
	// IP-only request in dual stack needs both families.
	if _, err := p.Allocate("b", Request{IPs: []string{"10.1.0.50"}}); ReasonOf(err) != ReasonInvalidRequest || !strings.Contains(err.Error(), "exactly one address for each") {
		t.Fatalf("single-family request on dual stack: %v", err)
	}
	b, err := p.Allocate("b", Request{IPs: []string{"fd00:1::50/64", "10.1.0.50/24"}})
	if err != nil {
		t.Fatal(err)
	}
	if b.IPs[0].String() != "10.1.0.50/24" || b.IPs[1].String() != "fd00:1::50/64" || b.MAC.String() != "0a:58:0a:01:00:32" {
		t.Fatalf("requested dual-stack allocation %v %s", b.IPs, b.MAC)
	}
}

func TestIPv6MACDerivationIsSHA256OfString(t *testing.T) {
	// `echo -n fd00::5 | sha256sum` starts with 67cc136b.
	if got := ovnk.MACFromIP(netip.MustParseAddr("fd00::5")).String(); got != "0a:58:67:cc:13:6b" {
		t.Fatalf("ovnk.MACFromIP(fd00::5) = %s", got)
	}
}

func TestConflicts(t *testing.T) {
	p := mustNew(t, okepExample())
	if _, err := p.Allocate("first", Request{IPs: []string{"192.168.100.205"}, MAC: "00:1a:2b:3c:4d:5e"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		req    Request
		reason string
		msg    string
	}{
		{"same IP", Request{IPs: []string{"192.168.100.205"}}, ReasonIPAddressConflict, "IP address 192.168.100.205 is already in use by first"},
		{"same MAC", Request{MAC: "00:1A:2B:3C:4D:5E"}, ReasonMACAddressConflict, "MAC address 00:1a:2b:3c:4d:5e is already in use by first"},
		{"gateway IP", Request{IPs: []string{"192.168.100.2"}}, ReasonIPAddressConflict, "192.168.100.2 is already in use by network infrastructure"},
		{"management IP", Request{IPs: []string{"192.168.100.1"}}, ReasonIPAddressConflict, "192.168.100.1 is already in use by network infrastructure"},
		{"infrastructure range", Request{IPs: []string{"192.168.100.3"}}, ReasonIPAddressConflict, "infrastructureSubnets 192.168.100.0/30"},
		{"gateway's derived MAC", Request{MAC: "0a:58:c0:a8:64:02"}, ReasonMACAddressConflict, "in use by network infrastructure"},
		{"derived MAC of requested IP", Request{IPs: []string{"192.168.100.206"}, MAC: ""}, "", ""},
		{"MAC of .206 requested again", Request{MAC: "0a:58:c0:a8:64:ce"}, ReasonMACAddressConflict, "in use by derived MAC of requested IP"},
		{"network address", Request{IPs: []string{"192.168.100.0"}}, ReasonInvalidRequest, "network or broadcast"},
		{"broadcast address", Request{IPs: []string{"192.168.100.255"}}, ReasonInvalidRequest, "network or broadcast"},
		{"outside subnets", Request{IPs: []string{"10.0.0.5"}}, ReasonInvalidRequest, "not inside any of the network's subnets"},
		{"wrong prefix length", Request{IPs: []string{"192.168.100.50/16"}}, ReasonInvalidRequest, "prefix length"},
		{"malformed IP", Request{IPs: []string{"192.168.100"}}, ReasonInvalidRequest, "not an IP address"},
		{"malformed MAC", Request{MAC: "00:1a:2b"}, ReasonInvalidRequest, "48-bit"},
		{"multicast MAC", Request{MAC: "01:00:5e:00:00:01"}, ReasonInvalidRequest, "multicast"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := p.Len()
			_, err := p.Allocate(tc.name, tc.req)
			if tc.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Reason != tc.reason || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want %s containing %q", err, tc.reason, tc.msg)
			}
			if p.Len() != before {
				t.Fatalf("a refused request changed the pool")
			}
		})
	}
}

// A dynamic allocation never derives a MAC someone requested: it skips that IP.
func TestDynamicAllocationSkipsIPWhoseDerivedMACIsTaken(t *testing.T) {
	p := mustNew(t, Config{Subnets: pfx("10.0.0.0/24")})
	if _, err := p.Allocate("squatter", Request{IPs: []string{"10.0.0.200"}, MAC: "0a:58:0a:00:00:03"}); err != nil {
		t.Fatal(err)
	}
	a, err := p.Allocate("next", Request{})
	if err != nil {
		t.Fatal(err)
	}
	if a.IPs[0].Addr().String() != "10.0.0.4" {
		t.Fatalf("got %v, want .3 skipped because its derived MAC is taken", a.IPs)
	}
}

func TestReleaseAndReuseAndIdempotence(t *testing.T) {
	p := mustNew(t, Config{Subnets: pfx("10.0.0.0/29")})
	got := drain(t, p)
	if len(got) != 4 {
		t.Fatalf("a /29 gives 4 dynamic addresses (8 minus network, broadcast, gateway, management), got %v", got)
	}
	again, _ := p.Allocate("pod-0", Request{})
	if again.IPs[0].Addr() != got[0] {
		t.Fatalf("allocating for an owner twice must return its allocation")
	}
	if !p.Release("pod-2") || p.Release("pod-2") {
		t.Fatal("Release reports whether the owner held addresses")
	}
	a, err := p.Allocate("new", Request{})
	if err != nil || a.IPs[0].Addr() != got[2] {
		t.Fatalf("after release the freed address comes back: %v %v", a.IPs, err)
	}
}

func TestRestore(t *testing.T) {
	p := mustNew(t, okepExample())
	alloc := Allocation{IPs: pfx("192.168.100.4/24"), MAC: ovnk.MACFromIP(netip.MustParseAddr("192.168.100.4"))}
	if err := p.Restore("old", alloc); err != nil {
		t.Fatal(err)
	}
	if err := p.Restore("old", alloc); err != nil {
		t.Fatalf("restoring the same allocation twice is harmless: %v", err)
	}
	if err := p.Restore("dup", alloc); ReasonOf(err) != ReasonIPAddressConflict {
		t.Fatalf("a duplicate in the annotations must be refused: %v", err)
	}
	a, err := p.Allocate("new", Request{})
	if err != nil || a.IPs[0].Addr().String() != "192.168.100.5" {
		t.Fatalf("allocation after restore: %v %v", a.IPs, err)
	}
	if err := p.Restore("reserved", Allocation{IPs: pfx("192.168.100.201/24"), MAC: ovnk.MACFromIP(netip.MustParseAddr("192.168.100.201"))}); err != nil {
		t.Fatalf("reserved addresses restore: %v", err)
	}
}

// TestRestoreRefusesWhatWasNeverAllocated: the rebuild trusts nothing it
// could not have written; each refusal says why.
func TestRestoreRefusesWhatWasNeverAllocated(t *testing.T) {
	p := mustNew(t, okepExample())
	mac := func(s string) net.HardwareAddr { hw, _ := net.ParseMAC(s); return hw }
	for _, tc := range []struct {
		name string
		a    Allocation
		msg  string
	}{
		{"outside the pool", Allocation{IPs: pfx("10.9.0.4/24"), MAC: mac("0a:58:0a:09:00:04")}, "is not inside any of the network's subnets"},
		{"broadcast", Allocation{IPs: pfx("192.168.100.255/24"), MAC: mac("0a:58:c0:a8:64:ff")}, "network or broadcast address"},
		{"multicast MAC", Allocation{IPs: pfx("192.168.100.9/24"), MAC: mac("01:00:5e:00:00:09")}, "is a multicast address"},
		{"all-zero MAC", Allocation{IPs: pfx("192.168.100.9/24"), MAC: mac("00:00:00:00:00:00")}, "is all zeros"},
	} {
		err := p.Restore("x", tc.a)
		if ReasonOf(err) != ReasonInvalidRequest || !strings.Contains(fmt.Sprint(err), tc.msg) {
			t.Errorf("%s: Restore = %v, want InvalidRequest %q", tc.name, err, tc.msg)
		}
	}
	// Nothing was kept: the address is still free for a valid owner.
	if err := p.Restore("x", Allocation{IPs: pfx("192.168.100.9/24"), MAC: mac("0a:58:c0:a8:64:09")}); err != nil {
		t.Fatalf("a refused restore must leave nothing behind: %v", err)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg Config
		msg string
	}{
		{Config{}, "need one or two subnets"},
		{Config{Subnets: pfx("10.0.0.0/24", "10.1.0.0/24")}, "second subnet of its IP family"},
		{Config{Subnets: pfx("10.0.0.0/31")}, "too small"},
		{Config{Subnets: pfx("10.0.0.0/24"), ReservedSubnets: pfx("10.1.0.0/28")}, "not inside any of the subnets"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("New(%+v) = %v, want %q", tc.cfg, err, tc.msg)
		}
	}
	// Infrastructure subnets too small for both: as upstream, the management
	// port falls back to the subnet's second address.
	p, err := New(Config{Subnets: pfx("10.0.0.0/24"), InfrastructureSubnets: pfx("10.0.0.0/31")})
	if err != nil {
		t.Fatal(err)
	}
	if gws, mgmts := p.Gateways(), p.ManagementIPs(); gws[0].String() != "10.0.0.1" || mgmts[0].String() != "10.0.0.2" {
		t.Errorf("gateway %v, management %v; want 10.0.0.1 and 10.0.0.2", gws, mgmts)
	}
}

func TestLargeIPv6Subnet(t *testing.T) {
	p := mustNew(t, Config{Subnets: pfx("fd00:abcd::/48"), ReservedSubnets: pfx("fd00:abcd::/120")})
	a, err := p.Allocate("x", Request{})
	if err != nil || a.IPs[0].String() != "fd00:abcd::100/48" {
		t.Fatalf("got %v %v, want the first address after the reserved /120", a.IPs, err)
	}
	if _, err := p.Allocate("y", Request{IPs: []string{"fd00:abcd:0:ffff::1"}}); err != nil {
		t.Fatalf("explicit request beyond the walked range: %v", err)
	}
}
