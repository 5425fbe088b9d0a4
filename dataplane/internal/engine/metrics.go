package engine

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

// resyncs counts the times the dataplane asked its controllers to re-apply
// networks because the Northbound database no longer held their rows as
// udnkit wrote them (heal.go), by reason.
var resyncs = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "udnkit_dataplane_resyncs_total",
	Help: "Times the dataplane re-queued networks whose OVN Northbound rows were lost or changed without udnkit, by reason: database_replaced (another database after a reconnect: every network), owned_rows_lost (owned rows missing or changed after the cache was refilled), foreign_edit (another client deleted or changed owned rows).",
}, []string{"reason"})

// resyncsHeld counts foreign-edit resyncs held back because the network's
// rows were edited again soon after its last resync (another writer
// fighting udnkit).
var resyncsHeld = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "udnkit_dataplane_resyncs_held_total",
	Help: "Foreign-edit resyncs of a network held back (the wait doubles up to 5 minutes) because another client kept changing its OVN rows.",
})

func init() { metrics.Registry.MustRegister(resyncs, resyncsHeld) }
