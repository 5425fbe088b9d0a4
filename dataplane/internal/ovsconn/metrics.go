package ovsconn

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// connected is 1 while the client's connection to a database is up with its
// cache filled, 0 while it connects or reconnects.
var connected = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "udnkit_ovn_connected",
	Help: "Whether the dataplane is connected to the OVN database (db: nb or sb), with its cache filled: 1 connected, 0 connecting or reconnecting.",
}, []string{"db"})

func init() { metrics.Registry.MustRegister(connected) }
