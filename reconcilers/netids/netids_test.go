package netids

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
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
	if err != nil || k != 16711680+7 {
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
	a := NewIDAllocator("network ID", 1, MaxNetworkID)
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
