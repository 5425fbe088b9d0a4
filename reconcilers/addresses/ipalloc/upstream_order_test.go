package ipalloc

import (
	"net/netip"
	"slices"
	"testing"
)

// Upstream's cluster manager reserves nothing on a Primary Layer2 network
// beyond the network (and IPv4 broadcast) address, the gateway and the
// management port (newIPAllocatorForNetwork and infrastructureExcludeCIDRs
// in pkg/clustermanager/network_cluster_controller.go), so its first pod
// gets .3, as here. Its allocator is round-robin (newIPAMAllocator in
// pkg/allocator/ip/subnet/allocator.go builds a NewRoundRobinAllocationMap,
// pkg/allocator/bitmap/bitmap.go): an address released is not handed out
// again before the rest of the range. In the live comparison its pods got .5
// and .4 because its first write of web-node-a's pod-networks lost a race
// with ovnkube-controller's default-network write (a resourceVersion-guarded
// JSON patch, pkg/kube/kube.go), so it released .3 (pkg/allocator/pod/
// pod_annotation.go) and allocated again after web-node-b. This replays that
// sequence on the same network: the same addresses and MACs.
func TestUpstreamLiveSequenceAfterAReleasedFirstAllocation(t *testing.T) {
	p := mustNew(t, Config{Subnets: pfx("10.100.0.0/16", "2001:db8:100::/60")})
	first, err := p.Allocate("tenant-blue/web-node-a", Request{})
	if err != nil {
		t.Fatal(err)
	}
	if want := pfx("10.100.0.3/16", "2001:db8:100::3/60"); !slices.Equal(first.IPs, want) {
		t.Fatalf("first pod got %v, want %v: nothing but the gateway and management port is reserved", first.IPs, want)
	}
	if !p.Release("tenant-blue/web-node-a") {
		t.Fatal("the first allocation was not held")
	}
	for _, step := range []struct{ owner, v4, v6, mac string }{
		{"tenant-blue/web-node-b", "10.100.0.4/16", "2001:db8:100::4/60", "0a:58:0a:64:00:04"},
		{"tenant-blue/web-node-a", "10.100.0.5/16", "2001:db8:100::5/60", "0a:58:0a:64:00:05"},
	} {
		a, err := p.Allocate(step.owner, Request{})
		if err != nil {
			t.Fatalf("%s: %v", step.owner, err)
		}
		if want := pfx(step.v4, step.v6); !slices.Equal(a.IPs, want) || a.MAC.String() != step.mac {
			t.Errorf("%s got %v %s, want %v %s as upstream's round-robin allocator gave", step.owner, a.IPs, a.MAC, want, step.mac)
		}
	}
	// The released .3 is free again: a request for it is granted.
	if got := p.OwnerOfIP(netip.MustParseAddr("10.100.0.3")); got != "" {
		t.Errorf("10.100.0.3 held by %q after its release", got)
	}
	if _, err := p.Allocate("asks-for-3", Request{IPs: []string{"10.100.0.3", "2001:db8:100::3"}}); err != nil {
		t.Errorf("a request for the released 10.100.0.3: %v", err)
	}
}
