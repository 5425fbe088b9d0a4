package app

import (
	"context"
	"errors"
	"flag"
	"net/http"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/udnkit/udnkit/dataplane"
	dataplanecontroller "github.com/udnkit/udnkit/dataplane/controller"
	"github.com/udnkit/udnkit/reconcilers"
	"github.com/udnkit/udnkit/reconcilers/addresses"
	"github.com/udnkit/udnkit/webhooks"
)

// DataplaneCheck names the dataplane's readiness check (/readyz/dataplane):
// ok while connected to OVN (or on a replica that is not the leader), an
// error saying what it waits for otherwise. It is not part of the
// manager's readiness: probes use /readyz?exclude=dataplane.
const DataplaneCheck = "dataplane"

var errDataplaneIdle = errors.New("idle: no --ovn-nb-address and --ovn-sb-address configured")

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
	var ovnTLS dataplane.TLS
	// The ipam component's pod address reconciler, shared with the dataplane
	// component: it knows which VMs run away from the node owning their
	// addresses. Components are set up in --controllers order, so the
	// dataplane reads it lazily, once the manager runs. When only dataplane
	// runs, it stays nil: the live-migration controller sees no migrated VMs
	// and programs no routes (the other dataplane controllers run as usual);
	// when only ipam runs, nobody reads it.
	var addressReconciler *addresses.Reconciler
	migratedVMs := func() []addresses.MigratedVM {
		if addressReconciler == nil {
			return nil
		}
		return addressReconciler.MigratedVMs()
	}
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
				r, err := addresses.Setup(mgr, ipam)
				addressReconciler = r
				return err
			},
		},
		{
			Name: "dataplane",
			Help: "OVN Northbound/Southbound programming (live-migration routes need ipam in the same manager)",
			BindFlags: func(fs *flag.FlagSet) {
				fs.StringVar(&ovnNB, "ovn-nb-address", "", "OVN Northbound database: unix:/path, tcp:host:port or ssl:host:port; comma-separated endpoints of a RAFT cluster (the leader is used)")
				fs.StringVar(&ovnSB, "ovn-sb-address", "", "OVN Southbound database, in the form of --ovn-nb-address")
				fs.StringVar(&ovnTLS.CertFile, "ovn-client-cert", "", "PEM client certificate for ssl: OVN endpoints (re-read at every connection)")
				fs.StringVar(&ovnTLS.KeyFile, "ovn-client-key", "", "PEM private key of --ovn-client-cert")
				fs.StringVar(&ovnTLS.CAFile, "ovn-ca-cert", "", "PEM CA certificates that sign the OVN databases' server certificates")
				fs.StringVar(&ovnTLS.NBServerName, "ovn-nb-server-name", "", "name the Northbound server certificate must carry (default: each endpoint's host)")
				fs.StringVar(&ovnTLS.SBServerName, "ovn-sb-server-name", "", "name the Southbound server certificate must carry (default: each endpoint's host)")
			},
			Setup: func(ctx context.Context, mgr ctrl.Manager) error {
				// The dataplane never holds up the manager: with no OVN
				// configured it stays idle, and otherwise it connects in the
				// background. Its readiness check is excluded from the
				// chart's readiness probe (/readyz?exclude=dataplane), so the
				// webhooks stay served while OVN is unreachable.
				if ovnNB == "" && ovnSB == "" {
					ctrl.Log.WithName("dataplane").Info("the dataplane is idle: set --ovn-nb-address and --ovn-sb-address to program OVN, or leave dataplane out of --controllers")
					return mgr.AddReadyzCheck(DataplaneCheck, func(*http.Request) error { return errDataplaneIdle })
				}
				if ovnNB == "" || ovnSB == "" {
					return errors.New("the dataplane needs both --ovn-nb-address and --ovn-sb-address")
				}
				rs, err := dataplanecontroller.Setup(ctx, mgr, dataplanecontroller.Options{
					NBAddress: ovnNB, SBAddress: ovnSB, TLS: ovnTLS, MigratedVMs: migratedVMs})
				if err != nil {
					return err
				}
				return mgr.AddReadyzCheck(DataplaneCheck, rs.OVN.Check)
			},
		},
	}
}
