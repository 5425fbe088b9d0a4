package netids

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

func allocateNodes(b *testing.B, subnets []ClusterSubnet, nodes int) {
	a, err := NewHostSubnetAllocator(subnets)
	if err != nil {
		b.Fatal(err)
	}
	for i := range nodes {
		if _, err := a.Allocate(fmt.Sprint("node-", i)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHostSubnets5000NodesAcross10Subnets allocates a host subnet for
// 5000 nodes across ten cluster subnets (512 /25s each, so nine fill up);
// the baseline, measured in the same iterations, allocates the same 5000
// from one cluster subnet big enough for all.
func BenchmarkHostSubnets5000NodesAcross10Subnets(b *testing.B) {
	const nodes = 5000
	var ten []ClusterSubnet
	for i := range 10 {
		ten = append(ten, ClusterSubnet{CIDR: netip.MustParsePrefix(fmt.Sprintf("10.%d.0.0/16", i)), HostBits: 25})
	}
	one := []ClusterSubnet{{CIDR: netip.MustParsePrefix("10.0.0.0/8"), HostBits: 25}}
	var baseline time.Duration
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		start := time.Now()
		allocateNodes(b, one, nodes)
		baseline += time.Since(start)
		b.StartTimer()
		allocateNodes(b, ten, nodes)
	}
	base := float64(baseline.Nanoseconds()) / float64(b.N)
	b.ReportMetric(base, "baseline-ns/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/base, "x-baseline")
}
