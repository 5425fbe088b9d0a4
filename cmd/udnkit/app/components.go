package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"

	ipamclaimsv1alpha1 "github.com/k8snetworkplumbingwg/ipamclaims/pkg/crd/ipamclaims/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	dpcontrollers "github.com/udnkit/udnkit/dataplane/controllers"
	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers"
	"github.com/udnkit/udnkit/reconcilers/addresses"
	"github.com/udnkit/udnkit/reconcilers/nodes"
	"github.com/udnkit/udnkit/webhooks"
	"github.com/udnkit/udnkit/webhooks/network"
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
	var dp dpcontrollers.Options
	paramsNamespace := "default"
	limits := network.DefaultLimits()
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
				fs.IntVar(&limits.PerNamespace, network.FlagMaxNetworksPerNamespace, limits.PerNamespace,
					"the most UserDefinedNetworks one namespace may hold (each takes one of the cluster's network IDs); a create beyond it is refused at admission; 0: no limit")
			},
			Setup: func(_ context.Context, mgr ctrl.Manager) error {
				return webhooks.SetupWithManager(mgr, *cluster, paramsNamespace, limits)
			},
		},
		{
			Name:      "nad",
			Help:      "UDNs and CUDNs to NetworkAttachmentDefinitions, network IDs, tunnel keys, transit subnets; mirrored EndpointSlices",
			BindFlags: rc.BindFlags,
			Setup: func(ctx context.Context, mgr ctrl.Manager) error {
				if err := reconcilers.SetupWithManager(mgr, reconcilerConfig(reconcilers.ControllerUDN, reconcilers.ControllerCUDN, reconcilers.ControllerEndpointSliceMirror)); err != nil {
					return err
				}
				return warmInformers(ctx, mgr, append(networkKinds(), podMetadata(), &corev1.Pod{}, &discoveryv1.EndpointSlice{}))
			},
		},
		{
			Name: "nodes",
			Help: "node IDs, transit peer subnets, multi-VTEP tunnel IDs, Layer3 host subnets",
			Setup: func(ctx context.Context, mgr ctrl.Manager) error {
				cfg := reconcilerConfig()
				if err := nodes.SetupWithManager(mgr, cfg.NodeOptions()); err != nil {
					return err
				}
				return warmInformers(ctx, mgr, append(networkKinds(), &corev1.Node{}))
			},
		},
		{
			Name: "ipam",
			Help: "pod addresses of Primary Layer2 networks, IPAMClaims, default NAD stub",
			Setup: func(ctx context.Context, mgr ctrl.Manager) error {
				if err := addresses.SetupWithManager(mgr, *cluster); err != nil {
					return err
				}
				kinds := append(networkKinds(), &corev1.Pod{}, &corev1.Node{})
				claims, err := served(mgr, ipamclaimsv1alpha1.SchemeGroupVersion.WithKind("IPAMClaim"))
				if err != nil {
					return err
				}
				if claims {
					kinds = append(kinds, &ipamclaimsv1alpha1.IPAMClaim{})
				}
				return warmInformers(ctx, mgr, kinds)
			},
		},
		{
			Name:      "dataplane",
			Help:      "OVN Northbound/Southbound programming",
			BindFlags: dp.BindFlags,
			Setup: func(ctx context.Context, mgr ctrl.Manager) error {
				// The dataplane never holds up the manager: with no OVN
				// configured it stays idle, and otherwise it connects in the
				// background. Its readiness check is excluded from the
				// chart's readiness probe (/readyz?exclude=dataplane), so the
				// webhooks stay served while OVN is unreachable.
				if dp.NBAddress == "" && dp.SBAddress == "" {
					ctrl.Log.WithName("dataplane").Info("the dataplane is idle: set --ovn-nb-address and --ovn-sb-address to program OVN, or leave dataplane out of --controllers")
					return mgr.AddReadyzCheck(DataplaneCheck, func(*http.Request) error { return errDataplaneIdle })
				}
				if dp.NBAddress == "" || dp.SBAddress == "" {
					return errors.New("the dataplane needs both --ovn-nb-address and --ovn-sb-address")
				}
				if dp.ConnectTimeout <= 0 {
					return fmt.Errorf("--ovn-connect-timeout=%s: must be positive", dp.ConnectTimeout)
				}
				if dp.Workers < 1 {
					return fmt.Errorf("--dataplane-workers=%d: the dataplane needs at least 1 worker", dp.Workers)
				}
				if err := dp.ValidateGateway(); err != nil {
					return err
				}
				form, err := topology.ParseLayer3PolicyForm(string(dp.Layer3.Form))
				if err != nil {
					return err
				}
				o := dp
				o.Cluster, o.Layer3.Form, o.Local = *cluster, form, zone.InZone(dp.Zone)
				rs, err := dpcontrollers.Setup(ctx, mgr, o)
				if err != nil {
					return err
				}
				// The controllers are registered once OVN is connected,
				// after the manager started: their informers start now.
				if err := warmInformers(ctx, mgr, append(networkKinds(), &corev1.Node{}, &corev1.Pod{}, &corev1.Service{},
					&discoveryv1.EndpointSlice{}, &networkingv1.NetworkPolicy{})); err != nil {
					return err
				}
				return mgr.AddReadyzCheck(DataplaneCheck, rs.OVN.Check)
			},
		},
	}
}
