package idalloc

import (
	"fmt"
	"net/netip"
	"testing"
)

// BenchmarkHostSubnets5000Nodes allocates a host subnet for each of 5000
// nodes across ten cluster subnets (512 /25s each, so nine fill up); its
// baseline allocates the same 5000 from one cluster subnet big enough for
// all, so the ratio is the cost of spreading over several subnets.
func BenchmarkHostSubnets5000Nodes(b *testing.B) {
	const nodes = 5000
	var ten []ClusterSubnet
	for i := range 10 {
		ten = append(ten, ClusterSubnet{CIDR: netip.MustParsePrefix(fmt.Sprintf("10.%d.0.0/16", i)), HostBits: 25})
	}
	one := []ClusterSubnet{{CIDR: netip.MustParsePrefix("10.0.0.0/8"), HostBits: 25}}
	for _, bc := range []struct {
		name    string
		subnets []ClusterSubnet
	}{{"10-cluster-subnets", ten}, {"baseline-1-cluster-subnet", one}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				a, err := NewHostSubnetAllocator(bc.subnets)
				if err != nil {
					b.Fatal(err)
				}
				for i := range nodes {
					if _, err := a.Allocate(fmt.Sprint("node-", i)); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
