package dataplane

import (
	"net/netip"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/udnkit/udnkit/dataplane/topology"
)

// transactions is udnkit_ovn_transaction_duration_seconds' count of a
// topology piece's transactions.
func transactions(t *testing.T, topology, piece string) uint64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "udnkit_ovn_transaction_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			if label(m, "topology") == topology && label(m, "piece") == piece {
				return m.GetHistogram().GetSampleCount()
			}
		}
	}
	return 0
}

// label is a metric's value of a label ("" none).
func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// Each Apply that writes observes one transaction; one that has nothing to
// write sends none and observes nothing.
func TestApplyObservesTransactionLatency(t *testing.T) {
	e := newEnv(t)
	d, err := topology.Layer3SubnetPolicies("metrics", []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("10.2.0.0/16")})
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

// metricValue is the value of a counter or gauge of the controller-runtime
// registry with these labels (0 when there is none).
func metricValue(name string, labels map[string]string) float64 {
	families, err := metrics.Registry.Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metric:
		for _, m := range f.GetMetric() {
			for k, v := range labels {
				if label(m, k) != v {
					continue metric
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}
