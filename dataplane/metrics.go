package dataplane

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// transactionSeconds is the latency of the one Northbound transaction each
// Apply sends, by topology piece.
var transactionSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "udnkit_ovn_transaction_duration_seconds",
	Help:    "Latency of the OVN Northbound transaction of one dataplane apply, by topology and piece.",
	Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
}, []string{"topology", "piece"})

func init() { metrics.Registry.MustRegister(transactionSeconds) }
