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
	webhooks.FlagServiceCIDRs:   "k8s-service-cidrs",
	webhooks.FlagTransitSubnets: "udn-transit-subnets",
}

// components lists what --controllers can select, in start order. Each
// component's configuration is bound to flags once, here.
func components() []Component {
	admission := webhooks.DefaultConfig()
	rc := reconcilers.DefaultConfig()
	ipam := addresses.DefaultConfig()
	var ovnNB, ovnSB string
	// The reconcilers share one configuration and, per manager, one set of
	// allocators, whichever of nad and nodes run.
	reconciler := func(names ...string) func(context.Context, ctrl.Manager) error {
		return func(_ context.Context, mgr ctrl.Manager) error {
			cfg := rc
			cfg.Controllers = names
			return reconcilers.SetupWithManager(mgr, cfg)
		}
	}
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
			Name:      "nad",
			Help:      "UDNs and CUDNs to NetworkAttachmentDefinitions, network IDs, tunnel keys, transit subnets",
			BindFlags: rc.BindFlags,
			Setup:     reconciler(reconcilers.ControllerUDN, reconcilers.ControllerCUDN),
		},
		{
			Name:  "nodes",
			Help:  "node IDs, transit peer subnets, multi-VTEP tunnel IDs, Layer3 host subnets",
			Setup: reconciler(reconcilers.ControllerNode),
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
				_, err := dataplanecontroller.Setup(ctx, mgr, dataplanecontroller.Options{NBAddress: ovnNB, SBAddress: ovnSB})
				return err
			},
		},
	}
}
