package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/udnkit/udnkit/dataplane"
	dataplanecontroller "github.com/udnkit/udnkit/dataplane/controller"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers"
	"github.com/udnkit/udnkit/reconcilers/addresses"
	"github.com/udnkit/udnkit/reconcilers/nodes"
	"github.com/udnkit/udnkit/webhooks"
)

// DataplaneCheck names the dataplane's readiness check (/readyz/dataplane):
// ok while connected to OVN (or on a replica that is not the leader), an
// error saying what it waits for otherwise. It is not part of the
// manager's readiness: probes use /readyz?exclude=dataplane.
const DataplaneCheck = "dataplane"

var errDataplaneIdle = errors.New("idle: no --ovn-nb-address and --ovn-sb-address configured")

// components lists what --controllers can select, in start order. cluster
// is parsed once from flags (Options.BindFlags) and handed to each component;
// each component's own configuration is bound to flags here.
func components(cluster *ovnk.ClusterConfig, leaderElect *bool) []Component {
	rc := reconcilers.DefaultConfig()
	var ovnNB, ovnSB, zone string
	var ovnTLS dataplane.TLS
	var ovnConnectTimeout time.Duration
	var adoptLegacy bool
	var layer3Form string
	var workers int
	paramsNamespace := "default"
	limits := webhooks.DefaultLimits()
	reconcilerConfig := func(controllers ...string) reconcilers.Config {
		cfg := rc
		cfg.Cluster = *cluster
		cfg.Controllers = controllers
		// Under leader election this manager is the only writer.
		cfg.SingleWriter = *leaderElect
		return cfg
	}
	return []Component{
		{
			Name: "admission",
			Help: "UDN/CUDN admission policies' params, CUDN and pod admission webhooks",
			BindFlags: func(fs *flag.FlagSet) {
				fs.StringVar(&paramsNamespace, "admission-params-namespace", paramsNamespace,
					"namespace of the ConfigMap "+ovnk.AdmissionParamsConfigMap+", written at start, from which udnkit's ValidatingAdmissionPolicies read the cluster's ranges (the chart: the release namespace)")
				fs.IntVar(&limits.PerNamespace, webhooks.FlagMaxNetworksPerNamespace, limits.PerNamespace,
					"the most UserDefinedNetworks one namespace may hold (each takes one of the cluster's network IDs); a create beyond it is refused at admission; 0: no limit")
			},
			Setup: func(_ context.Context, mgr ctrl.Manager) error {
				return webhooks.SetupWithManager(mgr, *cluster, paramsNamespace, limits)
			},
		},
		{
			Name:      "nad",
			Help:      "UDNs and CUDNs to NetworkAttachmentDefinitions, network IDs, tunnel keys, transit subnets",
			BindFlags: rc.BindFlags,
			Setup: func(_ context.Context, mgr ctrl.Manager) error {
				return reconcilers.SetupWithManager(mgr, reconcilerConfig(reconcilers.ControllerUDN, reconcilers.ControllerCUDN))
			},
		},
		{
			Name: "nodes",
			Help: "node IDs, transit peer subnets, multi-VTEP tunnel IDs, Layer3 host subnets",
			Setup: func(_ context.Context, mgr ctrl.Manager) error {
				cfg := reconcilerConfig()
				return nodes.SetupWithManager(mgr, cfg.NodeOptions())
			},
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
				fs.StringVar(&ovnNB, "ovn-nb-address", "", "OVN Northbound database: unix:/path, tcp:host:port or ssl:host:port; comma-separated endpoints of a RAFT cluster (the leader is used)")
				fs.StringVar(&ovnSB, "ovn-sb-address", "", "OVN Southbound database, in the form of --ovn-nb-address")
				fs.BoolVar(&adoptLegacy, "adopt-legacy-layer2", false, "let the Layer2 transit-router topology take over and remove the old topology's rows of each network that OVN-Kubernetes created (OKEP-5094 upgrade cleanup: the old transit router and layer2 switch by name, their rtos-/stor- ports, routes via the network's subnets, SNATs to its masquerade IPs); off, udnkit never modifies or deletes a row it did not create")
				// The flag's earlier name; "migration" now means only KubeVirt live migration.
				fs.BoolVar(&adoptLegacy, "migrate-legacy-layer2", false, "deprecated: --adopt-legacy-layer2")
				fs.DurationVar(&ovnConnectTimeout, "ovn-connect-timeout", dataplane.DefaultConnectTimeout,
					"bound of one connection attempt to an OVN database, including the monitor's initial copy of its tables (tens of microseconds per Northbound row: a zone of a million rows needs minutes)")
				fs.StringVar(&ovnTLS.CertFile, "ovn-client-cert", "", "PEM client certificate for ssl: OVN endpoints (re-read at every connection)")
				fs.StringVar(&ovnTLS.KeyFile, "ovn-client-key", "", "PEM private key of --ovn-client-cert")
				fs.StringVar(&ovnTLS.CAFile, "ovn-ca-cert", "", "PEM CA certificates that sign the OVN databases' server certificates")
				fs.StringVar(&ovnTLS.NBServerName, "ovn-nb-server-name", "", "name the Northbound server certificate must carry (default: each endpoint's host)")
				fs.StringVar(&ovnTLS.SBServerName, "ovn-sb-server-name", "", "name the Southbound server certificate must carry (default: each endpoint's host)")
				fs.StringVar(&zone, "zone", "", "OVN interconnect zone these databases serve: nodes of other zones get remote ports (a node's zone is its name, or the k8s.ovn.org/zone-name of an older OVN-Kubernetes); empty: one zone where every node is local")
				fs.StringVar(&layer3Form, "layer3-subnet-policies", string(topology.PolicyFormAddressSet),
					"rows of the OKEP-5377 Layer3 subnet-pair rule: address-set (one policy per family, O(subnets)) or pairs (upstream's one policy per subnet pair, O(subnets²))")
				fs.IntVar(&workers, "dataplane-workers", dataplanecontroller.DefaultWorkers,
					"networks each of the Layer2, Layer3, multi-VTEP and live-migration controllers programs at once (one at a time per network), so that a large network's Apply does not hold up the others")
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
				if ovnConnectTimeout <= 0 {
					return fmt.Errorf("--ovn-connect-timeout=%s: must be positive", ovnConnectTimeout)
				}
				if workers < 1 {
					return fmt.Errorf("--dataplane-workers=%d: the dataplane needs at least 1 worker", workers)
				}
				form, err := topology.ParseLayer3PolicyForm(layer3Form)
				if err != nil {
					return err
				}
				rs, err := dataplanecontroller.Setup(ctx, mgr, dataplanecontroller.Options{
					NBAddress: ovnNB, SBAddress: ovnSB, TLS: ovnTLS, ConnectTimeout: ovnConnectTimeout, Cluster: *cluster, Layer3PolicyForm: form, AdoptLegacyLayer2: adoptLegacy,
					Local: dataplanecontroller.InZone(zone), Zone: zone, Workers: workers})
				if err != nil {
					return err
				}
				return mgr.AddReadyzCheck(DataplaneCheck, rs.OVN.Check)
			},
		},
	}
}
