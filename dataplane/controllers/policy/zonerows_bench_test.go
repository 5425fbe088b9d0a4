package policy

import (
	"context"
	"fmt"
	"testing"

	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/policy"
	"github.com/udnkit/udnkit/ovnk"
)

// BenchmarkZoneRowsPerNetworkReconcile is one network's reconcile of the
// zone's rows (applyZoneRows, OVN's Apply left out) with nodes unchanged
// since the last one, in a zone of that many nodes with ten isolation
// members each: "fingerprinted" as the reconciler runs, "rebuilt" with the
// fingerprints forgotten before each reconcile (every piece built, as
// when each network's reconcile built them). It reports the pieces built
// per reconcile.
func BenchmarkZoneRowsPerNetworkReconcile(b *testing.B) {
	for _, nodes := range []int{100, 200} {
		for _, mode := range []string{"fingerprinted", "rebuilt"} {
			b.Run(fmt.Sprintf("nodes=%d/%s", nodes, mode), func(b *testing.B) {
				w := newZoneWorld(b)
				w.r.zone.apply = func(context.Context, *rows.Desired) error { return nil }
				w.nodes, w.members = nil, nil
				port := 8080
				for i := range nodes {
					w.nodes = append(w.nodes, nodeWith(fmt.Sprintf("node-%d", i), map[string]string{
						ovnk.AnnotationNodeSubnets: fmt.Sprintf(`{"default":["10.244.%d.0/24","fd00:10:244:%x::/64"]}`, i, i),
						ovnk.AnnotationHostCIDRs:   fmt.Sprintf(`["192.0.%d.%d/16","2001:db8::%x/64"]`, i/250, i%250+1, i+1)}))
					for j := range 10 {
						w.members = append(w.members, policy.IsolationMember{Port: fmt.Sprintf("ns%d_pod%d", i, j), Pod: fmt.Sprintf("ns%d/pod%d", i, j),
							OpenPorts: []ovnk.OpenPort{{Protocol: "tcp", Port: &port}}})
					}
				}
				w.reconcile(b)
				built := w.r.zone.builds.Load()
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if mode == "rebuilt" {
						w.r.zone.last = map[string]uint64{}
					}
					if err := w.r.applyZoneRows(context.Background(), w.nodes); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(w.r.zone.builds.Load()-built)/float64(b.N), "builds/op")
			})
		}
	}
}
