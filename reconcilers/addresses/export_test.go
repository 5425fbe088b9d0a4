package addresses

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/udnkit/udnkit/ovnk"
)

// SetupWithManagerFIFO is SetupWithManager with controller-runtime's default
// queue instead of the per-namespace fair one, for benchmarks to compare.
func SetupWithManagerFIFO(mgr ctrl.Manager, cfg ovnk.ClusterConfig) error {
	return setupWithManager(mgr, cfg, true)
}
