package ovnk

import (
	"net/netip"
	"slices"
	"testing"
)

func TestJoinSubnetsFor(t *testing.T) {
	c := DefaultClusterConfig()
	p := netip.MustParsePrefix
	for _, tc := range []struct {
		explicit, want []netip.Prefix
	}{
		{nil, []netip.Prefix{DefaultUDNJoinSubnetV4, DefaultUDNJoinSubnetV6}},
		{[]netip.Prefix{p("100.66.0.0/16")}, []netip.Prefix{p("100.66.0.0/16"), DefaultUDNJoinSubnetV6}},
		{[]netip.Prefix{p("fd00::/64"), p("100.66.0.0/16")}, []netip.Prefix{p("fd00::/64"), p("100.66.0.0/16")}},
	} {
		if got := c.JoinSubnetsFor(tc.explicit); !slices.Equal(got, tc.want) {
			t.Errorf("JoinSubnetsFor(%v) = %v, want %v", tc.explicit, got, tc.want)
		}
	}
}

func TestSubnetJoinOverlap(t *testing.T) {
	p := netip.MustParsePrefix
	join := []netip.Prefix{DefaultUDNJoinSubnetV4, DefaultUDNJoinSubnetV6}
	err := SubnetJoinOverlap([]netip.Prefix{p("10.0.0.0/24"), p("100.65.0.0/24")}, join)
	const want = `pod or join subnet overlaps with already configured internal subnets: user defined join subnet "100.65.0.0/16" overlaps user defined subnet "100.65.0.0/24"`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
	if err := SubnetJoinOverlap([]netip.Prefix{p("100.66.0.0/24"), p("fd00::/64")}, join); err != nil {
		t.Errorf("disjoint subnets: %v", err)
	}
}
