package dataplane

import (
	"net/netip"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func transactions(t *testing.T, topology, piece string) uint64 {
	t.Helper()
	var m dto.Metric
	if err := transactionSeconds.WithLabelValues(topology, piece).(prometheus.Histogram).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// Each Apply that writes observes one transaction; one that has nothing to
// write sends none and observes nothing.
func TestApplyObservesTransactionLatency(t *testing.T) {
	e := newEnv(t)
	d, err := Layer3SubnetPolicies("metrics", []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("10.2.0.0/16")})
	if err != nil {
		t.Fatal(err)
	}
	e.nbctl("lr-add", "metrics_ovn_cluster_router")
	before := transactions(t, d.Owner.Topology, d.Owner.Piece)
	if ops := e.apply(d); ops == 0 {
		t.Fatal("the first apply wrote nothing")
	}
	if ops := e.apply(d); ops != 0 {
		t.Fatalf("the second apply wrote %d operations", ops)
	}
	if got := transactions(t, d.Owner.Topology, d.Owner.Piece) - before; got != 1 {
		t.Errorf("observed %d transactions, want 1", got)
	}
}
