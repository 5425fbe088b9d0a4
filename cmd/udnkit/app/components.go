package app

import (
	"context"
	"errors"
	"flag"

	ctrl "sigs.k8s.io/controller-runtime"

	dataplanecontroller "github.com/udnkit/udnkit/dataplane/controller"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers"
	"github.com/udnkit/udnkit/reconcilers/addresses"
	"github.com/udnkit/udnkit/webhooks"
)

// components lists what --controllers can select, in start order. cluster
// is parsed once from flags (Options.BindFlags) and handed to each component;
// each component's own configuration is bound to flags here.
func components(cluster *ovnk.ClusterConfig) []Component {
	rc := reconcilers.DefaultConfig()
	var ovnNB, ovnSB string
	// nad and nodes share one set of allocators, built by whichever is set
	// up first.
	var shared *reconcilers.Reconcilers
	reconciler := func(names ...string) func(context.Context, ctrl.Manager) error {
		return func(_ context.Context, mgr ctrl.Manager) error {
			if shared == nil {
				cfg := rc
				cfg.Cluster = *cluster
				r, err := reconcilers.New(mgr, cfg)
				if err != nil {
					return err
				}
				shared = r
			}
			return shared.Setup(mgr, names...)
		}
	}
	return []Component{
		{
			Name: "admission",
			Help: "UDN/CUDN and pod admission webhooks",
			Setup: func(_ context.Context, mgr ctrl.Manager) error {
				return webhooks.SetupWithManager(mgr, *cluster)
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
			Name: "ipam",
			Help: "pod addresses of Primary Layer2 networks, IPAMClaims, default NAD stub",
			Setup: func(_ context.Context, mgr ctrl.Manager) error {
				return addresses.SetupWithManager(mgr, *cluster)
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
				_, err := dataplanecontroller.Setup(ctx, mgr, dataplanecontroller.Options{
					NBAddress: ovnNB, SBAddress: ovnSB})
				return err
			},
		},
	}
}
