package addresses

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// poolAllocations is the number of owners (pods, VMs, IPAMClaims) holding
// addresses in each network's pool, updated after every reconcile.
var poolAllocations = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "udnkit_ipam_pool_allocations",
	Help: "Owners (pods, VMs, IPAMClaims) holding addresses in a Primary Layer2 network's pool.",
}, []string{"network"})

func init() { metrics.Registry.MustRegister(poolAllocations) }

// observePools publishes the usage of the pools of networks (IDs); the
// caller holds r.mu.
func (r *Reconciler) observePools(networks ...string) {
	for _, id := range networks {
		if st := r.networks[id]; st != nil {
			poolAllocations.WithLabelValues(id).Set(float64(st.pool.Len()))
		}
	}
}
