package app

import (
	"context"
	"errors"
	"flag"

	ctrl "sigs.k8s.io/controller-runtime"

	dataplanecontroller "github.com/udnkit/udnkit/dataplane/controller"
	"github.com/udnkit/udnkit/reconcilers"
	"github.com/udnkit/udnkit/reconcilers/addresses"
	"github.com/udnkit/udnkit/webhooks"
)

// flagAliases: setting the key also sets the value (one cluster fact, one flag).
var flagAliases = map[string]string{
	webhooks.FlagServiceCIDRs: "k8s-service-cidrs",
}

// components lists what --controllers can select, in start order. Each
// component's configuration is bound to flags once, here.
func components() []Component {
	admission := webhooks.DefaultConfig()
	ipam := addresses.DefaultConfig()
	// The udn, cudn and node reconcilers share one configuration and, per
	// manager, one set of allocators.
	networks := reconcilers.DefaultConfig()
	reconciler := func(name string) func(context.Context, ctrl.Manager) error {
		return func(_ context.Context, mgr ctrl.Manager) error {
			cfg := networks
			cfg.Controllers = []string{name}
			return reconcilers.SetupWithManager(mgr, cfg)
		}
	}
	var ovnNB, ovnSB string
	return []Component{
		{
			Name:      "admission",
			Help:      "UDN/CUDN and pod admission webhooks",
			BindFlags: admission.BindFlags,
			Setup: func(_ context.Context, mgr ctrl.Manager) error {
				return webhooks.SetupWithManager(mgr, admission)
			},
		},
		{
			Name:      "ipam",
			Help:      "pod addresses of Primary Layer2 networks, IPAMClaims, default NAD stub",
			BindFlags: ipam.BindFlags,
			Setup: func(_ context.Context, mgr ctrl.Manager) error {
				return addresses.SetupWithManager(mgr, ipam)
			},
		},
		{
			Name:      reconcilers.ControllerUDN,
			Help:      "UserDefinedNetworks to NADs, network IDs, tunnel keys, transit subnets",
			BindFlags: networks.BindFlags,
			Setup:     reconciler(reconcilers.ControllerUDN),
		},
		{
			Name:  reconcilers.ControllerCUDN,
			Help:  "ClusterUserDefinedNetworks to NADs in the selected namespaces",
			Setup: reconciler(reconcilers.ControllerCUDN),
		},
		{
			Name:  reconcilers.ControllerNode,
			Help:  "node IDs, multi-VTEP tunnel IDs, Layer3 host subnets",
			Setup: reconciler(reconcilers.ControllerNode),
		},
		{
			Name: "dataplane",
			Help: "OVN Northbound/Southbound programming",
			BindFlags: func(fs *flag.FlagSet) {
				fs.StringVar(&ovnNB, "ovn-nb-address", "", "OVN Northbound database (unix:/path or tcp:host:port)")
				fs.StringVar(&ovnSB, "ovn-sb-address", "", "OVN Southbound database (unix:/path or tcp:host:port)")
			},
			Setup: func(ctx context.Context, mgr ctrl.Manager) error {
				if ovnNB == "" || ovnSB == "" {
					return errors.New("the dataplane needs --ovn-nb-address and --ovn-sb-address")
				}
				_, err := dataplanecontroller.Setup(ctx, mgr, ovnNB, ovnSB, nil)
				return err
			},
		},
	}
}
