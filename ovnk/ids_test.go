package ovnk

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

func TestTransitPeerSubnets(t *testing.T) {
	for _, tc := range []struct {
		subnet     string
		nodeID     int
		tr, gr     string
		wantErrSub string
	}{
		// OKEP-5094's examples: node1 100.88.0.4/31 (GR .5), node2 .8/.9, node3 .6/.7.
		{subnet: "100.88.0.0/16", nodeID: 2, tr: "100.88.0.4/31", gr: "100.88.0.5/31"},
		{subnet: "100.88.0.0/16", nodeID: 4, tr: "100.88.0.8/31", gr: "100.88.0.9/31"},
		{subnet: "100.88.0.0/16", nodeID: 3, tr: "100.88.0.6/31", gr: "100.88.0.7/31"},
		{subnet: "fd97::/64", nodeID: 4, tr: "fd97::8/127", gr: "fd97::9/127"},
		{subnet: "fd97::/64", nodeID: 2, tr: "fd97::4/127", gr: "fd97::5/127"},
		{subnet: "100.89.0.0/16", nodeID: 300, tr: "100.89.2.88/31", gr: "100.89.2.89/31"},
		{subnet: "100.88.0.0/16", nodeID: MaxNodeID, tr: "100.88.255.254/31", gr: "100.88.255.255/31"},
		{subnet: "100.88.0.0/16", nodeID: MaxNodeID + 1, wantErrSub: "does not fit transit subnet 100.88.0.0/16"},
		{subnet: "100.88.0.0/30", nodeID: 2, wantErrSub: "does not fit"},
		{subnet: "100.88.0.1/32", nodeID: 0, wantErrSub: "no room for a /31"},
		{subnet: "fd97::/64", nodeID: -1, wantErrSub: "negative"},
	} {
		t.Run(fmt.Sprintf("%s-%d", tc.subnet, tc.nodeID), func(t *testing.T) {
			tr, gr, err := TransitPeerSubnets(netip.MustParsePrefix(tc.subnet), tc.nodeID)
			if tc.wantErrSub != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrSub) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErrSub)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tr.String() != tc.tr || gr.String() != tc.gr {
				t.Fatalf("got %v, %v; want %s, %s", tr, gr, tc.tr, tc.gr)
			}
			if !tr.Masked().Contains(gr.Addr()) || tr.Addr().As16()[15]%2 != 0 {
				t.Fatalf("%v and %v are not the even and odd address of one subnet", tr, gr)
			}
		})
	}
}

func prefixes(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

func TestTransitSubnets(t *testing.T) {
	for _, tc := range []struct {
		name            string
		defaults        []netip.Prefix
		subnets, avoid  []netip.Prefix
		want            []string
		wantErrContains string
	}{
		{name: "IPv4 default", subnets: prefixes("10.0.0.0/16"), want: []string{"100.88.0.0/16"}},
		{name: "IPv6 default", subnets: prefixes("fd00::/64"), want: []string{"fd97::/64"}},
		{name: "dual-stack default", subnets: prefixes("10.0.0.0/16", "fd00::/64"), want: []string{"100.88.0.0/16", "fd97::/64"}},
		{name: "IPv4 overlap steps once", subnets: prefixes("100.88.5.0/24"), want: []string{"100.89.0.0/16"}},
		{name: "IPv4 wide overlap steps past it", subnets: prefixes("100.88.0.0/15"), want: []string{"100.90.0.0/16"}},
		{name: "IPv6 overlap", subnets: prefixes("fd97::/48"), want: []string{"fd97:0:1::/64"}},
		{name: "join subnet avoided too", subnets: prefixes("10.0.0.0/16"), avoid: prefixes("100.88.0.0/16", "100.89.0.0/16"), want: []string{"100.90.0.0/16"}},
		{name: "configured default", defaults: prefixes("100.70.0.0/16"), subnets: prefixes("100.70.0.0/24", "fd00::/64"), want: []string{"100.71.0.0/16", "fd97::/64"}},
		{name: "no room", subnets: prefixes("96.0.0.0/3"), avoid: prefixes("96.0.0.0/3", "128.0.0.0/1"), wantErrContains: "no /16 transit subnet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := TransitSubnets(tc.defaults, tc.subnets, append(tc.avoid, tc.subnets...))
			if tc.wantErrContains != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrContains) {
					t.Fatalf("error = %v, want %q", err, tc.wantErrContains)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(prefixes(tc.want...)) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLegacyTransitSwitchKey(t *testing.T) {
	k, err := LegacyTransitSwitchKey(7)
	if err != nil || k != 16711683+7 {
		t.Fatalf("got %d, %v", k, err)
	}
	last, _ := LegacyTransitSwitchKey(MaxNetworkID)
	if last >= FirstAllocatedTunnelKey {
		t.Fatalf("legacy key %d collides with allocated range starting at %d", last, FirstAllocatedTunnelKey)
	}
	if _, err := LegacyTransitSwitchKey(MaxNetworkID + 1); err == nil {
		t.Fatal("network ID 4096 accepted")
	}
}
