package dataplane

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/udnkit/udnkit/dataplane/topology"
)

// The address-set form gives every packet the pair form's verdict, as OVN
// itself decides it: both forms are programmed on two routers with the same
// port and a foreign priority-101 drop, ovn-northd compiles them, and
// ovn-trace follows packets between sampled subnet pairs (allowed by 102, so
// routed) and packets with a source or destination outside the subnets (not
// matched by 102, so dropped by 101) through each router.
func TestLayer3AddressSetVerdictMatchesPairsUnderOVNTrace(t *testing.T) {
	e := newEnv(t)
	e.startNorthd()
	subnets := append(manySubnets(40), pfx("fd00:1::/64"), pfx("fd00:2::/64"), pfx("fd00:3::/64"))
	routers := map[topology.Layer3PolicyForm]string{}
	for _, form := range []topology.Layer3PolicyForm{topology.PolicyFormPairs, topology.PolicyFormAddressSet} {
		network := "trace_" + strings.ReplaceAll(string(form), "-", "")
		d, err := topology.Layer3SubnetPoliciesForm(network, subnets, form)
		if err != nil {
			t.Fatal(err)
		}
		e.apply(d)
		r := d.Routers[0].Row.Name
		routers[form] = r
		// One port covering every subnet, so routing finds a route and the
		// policy stage decides; lower-priority traffic is dropped.
		e.nbctl("lrp-add", r, r+"-port", "00:00:00:00:01:01", "10.0.0.1/8", "fd00::1/16")
		e.nbctl("lr-policy-add", r, "101", "ip4 || ip6", "drop")
	}
	e.nbctl("--wait=sb", "sync")

	type packet struct {
		src, dst string
		allowed  bool
	}
	var packets []packet
	host := func(p netip.Prefix, i int) string {
		a := p.Addr()
		for range i {
			a = a.Next()
		}
		return a.String()
	}
	v4 := subnets[:40]
	for i := 0; i < len(v4); i += 7 {
		for j := 0; j < len(v4); j += 9 {
			packets = append(packets, packet{host(v4[i], 5), host(v4[j], 6), true})
		}
	}
	packets = append(packets,
		packet{host(v4[3], 5), host(v4[3], 9), true},     // within one subnet
		packet{"fd00:1::5", "fd00:3::6", true},           // IPv6 pair
		packet{"fd00:2::5", "fd00:2::6", true},           // IPv6 within one subnet
		packet{"10.1.200.5", host(v4[0], 5), false},      // source outside the subnets
		packet{host(v4[0], 5), "10.1.200.5", false},      // destination outside
		packet{"10.99.0.5", "10.98.0.6", false},          // neither
		packet{"fd00:1::5", "fd00:9::6", false},          // IPv6 destination outside
		packet{host(v4[39], 5), host(v4[39], 255), true}, // the last subnet's broadcast
	)
	verdict := func(router string, p packet) (bool, string) {
		t.Helper()
		f := "ip4"
		if strings.Contains(p.src, ":") {
			f = "ip6"
		}
		flow := fmt.Sprintf(`inport == %q && eth.src == 00:00:00:00:02:02 && eth.dst == 00:00:00:00:01:01 && %s.src == %s && %s.dst == %s && ip.ttl == 64`,
			router+"-port", f, p.src, f, p.dst)
		out := run(t, "ovn-trace", "--db="+e.db.SB.Address(), "--summary", router, flow)
		return strings.Contains(out, "output;") && !strings.Contains(out, "drop;"), out
	}
	for _, p := range packets {
		pairs, pout := verdict(routers[topology.PolicyFormPairs], p)
		sets, sout := verdict(routers[topology.PolicyFormAddressSet], p)
		if pairs != p.allowed {
			t.Errorf("pair form: %s -> %s allowed = %v, want %v\n%s", p.src, p.dst, pairs, p.allowed, pout)
		}
		if sets != pairs {
			t.Errorf("address-set form: %s -> %s allowed = %v, pair form %v\n%s", p.src, p.dst, sets, pairs, sout)
		}
	}
	t.Logf("%d packets traced through both forms", len(packets))
}
