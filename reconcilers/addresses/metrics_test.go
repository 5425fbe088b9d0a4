package addresses

import (
	"net/netip"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/udnkit/udnkit/reconcilers/addresses/ipalloc"
)

func TestObservePools(t *testing.T) {
	pool, err := ipalloc.New(ipalloc.Config{Subnets: []netip.Prefix{netip.MustParsePrefix("10.9.0.0/24")}})
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{networks: map[string]*netState{"metrics-ns/net": {pool: pool}}}
	for _, owner := range []string{"pod/a", "pod/b"} {
		if _, err := pool.Allocate(owner, ipalloc.Request{}); err != nil {
			t.Fatal(err)
		}
	}
	r.observePools("metrics-ns/net")
	if got := testutil.ToFloat64(poolAllocations.WithLabelValues("metrics-ns/net")); got != 2 {
		t.Errorf("pool usage %v, want 2", got)
	}
	pool.Release("pod/a")
	r.observePools("metrics-ns/net")
	if got := testutil.ToFloat64(poolAllocations.WithLabelValues("metrics-ns/net")); got != 1 {
		t.Errorf("pool usage after a release %v, want 1", got)
	}
}
