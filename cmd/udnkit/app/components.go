package app

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/udnkit/udnkit/reconcilers"
)

// components lists what --controllers can select, in start order.
func components() []Component {
	// The reconcilers share one configuration (flags bound once) and, per
	// manager, one set of allocators.
	rc := reconcilers.DefaultConfig()
	reconciler := func(name string) func(mgr ctrl.Manager) error {
		return func(mgr ctrl.Manager) error {
			cfg := rc
			cfg.Controllers = []string{name}
			return reconcilers.SetupWithManager(mgr, cfg)
		}
	}
	return []Component{
		{Name: reconcilers.ControllerUDN, Help: "UserDefinedNetworks to NADs, network IDs, tunnel keys, transit subnets",
			BindFlags: rc.BindFlags, Setup: reconciler(reconcilers.ControllerUDN)},
		{Name: reconcilers.ControllerCUDN, Help: "ClusterUserDefinedNetworks to NADs in the selected namespaces",
			Setup: reconciler(reconcilers.ControllerCUDN)},
		{Name: reconcilers.ControllerNode, Help: "node IDs, multi-VTEP tunnel IDs, Layer3 host subnets",
			Setup: reconciler(reconcilers.ControllerNode)},
	}
}
