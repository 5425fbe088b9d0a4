package dataplane

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// transactionSeconds is the latency of each Northbound transaction an Apply
// sends (one, or a bounded sequence for a large plan), by topology piece.
var transactionSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "udnkit_ovn_transaction_duration_seconds",
	Help:    "Latency of each OVN Northbound transaction of a dataplane apply, by topology and piece.",
	Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
}, []string{"topology", "piece"})

func init() { metrics.Registry.MustRegister(transactionSeconds) }
