package ovnk

import (
	"net/netip"
	"testing"
)

// Upstream's rule, case by case (OKEP-5233's example first).
func TestLayer2GatewayAndManagement(t *testing.T) {
	p := func(s ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, x := range s {
			out = append(out, netip.MustParsePrefix(x))
		}
		return out
	}
	a := func(s ...string) []netip.Addr {
		var out []netip.Addr
		for _, x := range s {
			out = append(out, netip.MustParseAddr(x))
		}
		return out
	}
	for _, tc := range []struct {
		name         string
		subnets      []netip.Prefix
		infra        []netip.Prefix
		gws          []netip.Addr
		wantGW, want []string
	}{
		{"OKEP-5233: gateway .2 in infrastructure /30: management is the next free infrastructure address",
			p("192.168.100.0/24"), p("192.168.100.0/30"), a("192.168.100.2"), []string{"192.168.100.2"}, []string{"192.168.100.1"}},
		{"feature off (nothing passed): .1 and .2", p("10.100.0.0/16", "fd00:100::/64"), nil, nil,
			[]string{"10.100.0.1", "fd00:100::1"}, []string{"10.100.0.2", "fd00:100::2"}},
		{"custom gateway .5 without infrastructure: management stays .2", p("10.1.0.0/24"), nil, a("10.1.0.5"),
			[]string{"10.1.0.5"}, []string{"10.1.0.2"}},
		{"custom gateway .2 without infrastructure: management takes .1", p("10.1.0.0/24"), nil, a("10.1.0.2"),
			[]string{"10.1.0.2"}, []string{"10.1.0.1"}},
		{"infrastructure without a gateway: the first two free infrastructure addresses", p("10.2.0.0/24"), p("10.2.0.8/29"), nil,
			[]string{"10.2.0.8"}, []string{"10.2.0.9"}},
		{"IPv6: the network address is skipped too", p("fd00:3::/64"), p("fd00:3::/126"), nil,
			[]string{"fd00:3::1"}, []string{"fd00:3::2"}},
		{"infrastructure of the other family only: defaults", p("10.4.0.0/24"), p("fd00:4::/126"), nil,
			[]string{"10.4.0.1"}, []string{"10.4.0.2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gws, mgmts, err := Layer2GatewayAndManagement(tc.subnets, tc.infra, tc.gws)
			if err != nil {
				t.Fatal(err)
			}
			for i := range tc.subnets {
				if gws[i].String() != tc.wantGW[i] || mgmts[i].String() != tc.want[i] {
					t.Errorf("subnet %s: gateway %s management %s, want %s and %s", tc.subnets[i], gws[i], mgmts[i], tc.wantGW[i], tc.want[i])
				}
			}
		})
	}
	if _, _, err := Layer2GatewayAndManagement(p("10.9.0.0/32"), nil, nil); err == nil {
		t.Error("a /32 has no gateway address, and no error was returned")
	}
}
