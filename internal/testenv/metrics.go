package testenv

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metric finds the sample of a metric family of controller-runtime's
// registry (where udnkit's managers register theirs) that carries every
// label given; ok is false when there is none.
func Metric(tb testing.TB, name string, labels map[string]string) (m *dto.Metric, ok bool) {
	tb.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m, labels) {
				return m, true
			}
		}
	}
	return nil, false
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	found := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			found++
		}
	}
	return found == len(want)
}
