package controllers

import (
	"context"
	"flag"
	"slices"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/udnkit/udnkit/dataplane"
	"github.com/udnkit/udnkit/dataplane/controllers/layer2"
	"github.com/udnkit/udnkit/dataplane/controllers/layer3"
	"github.com/udnkit/udnkit/dataplane/controllers/migration"
	"github.com/udnkit/udnkit/dataplane/controllers/multivtep"
	"github.com/udnkit/udnkit/dataplane/controllers/networkpolicy"
	"github.com/udnkit/udnkit/dataplane/controllers/pods"
	"github.com/udnkit/udnkit/dataplane/controllers/policy"
	lbservices "github.com/udnkit/udnkit/dataplane/controllers/services"
	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/nadtrust"
)

// Options configure the dataplane controllers: the OVN connection, the
// zone they share and each controller's own options.
type Options struct {
	// NBAddress and SBAddress are the manager's --ovn-nb-address and
	// --ovn-sb-address: "unix:/abs/path.sock", "tcp:host:port" or
	// "ssl:host:port", comma-separated for a RAFT cluster.
	NBAddress, SBAddress string
	// TLS is what ssl: endpoints use (--ovn-client-cert, --ovn-client-key,
	// --ovn-ca-cert, --ovn-nb-server-name, --ovn-sb-server-name).
	TLS dataplane.TLS
	// ConnectTimeout is --ovn-connect-timeout (0: dataplane.DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// Cluster are the cluster facts (--udn-allowed-default-services,
	// --masquerade-subnets, --mtu...): the Layer2 topology routes the
	// UDN-enabled services' ClusterIPs to the management port and SNATs
	// management-port traffic to the network's masquerade IP.
	Cluster ovnk.ClusterConfig
	// Options are the zone's: Zone, Local, Workers, FIFOQueue.
	zone.Options
	// Layer2 and Layer3 are those controllers' own options.
	Layer2 layer2.Options
	Layer3 layer3.Options
	Policy policy.Options
	// NetworkPolicy is the network-policy controller's (MultiNetworkPolicy).
	NetworkPolicy networkpolicy.Options
}

// BindFlags binds Options to the manager's flags: the connection's here,
// the zone's and each controller's in their packages.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.NBAddress, "ovn-nb-address", "", "OVN Northbound database: unix:/path, tcp:host:port or ssl:host:port; comma-separated endpoints of a RAFT cluster (the leader is used)")
	fs.StringVar(&o.SBAddress, "ovn-sb-address", "", "OVN Southbound database, in the form of --ovn-nb-address")
	fs.DurationVar(&o.ConnectTimeout, "ovn-connect-timeout", dataplane.DefaultConnectTimeout,
		"bound of one connection attempt to an OVN database, including the monitor's initial copy of its tables (tens of microseconds per Northbound row: a zone of a million rows needs minutes)")
	fs.StringVar(&o.TLS.CertFile, "ovn-client-cert", "", "PEM client certificate for ssl: OVN endpoints (re-read at every connection)")
	fs.StringVar(&o.TLS.KeyFile, "ovn-client-key", "", "PEM private key of --ovn-client-cert")
	fs.StringVar(&o.TLS.CAFile, "ovn-ca-cert", "", "PEM CA certificates that sign the OVN databases' server certificates")
	fs.StringVar(&o.TLS.NBServerName, "ovn-nb-server-name", "", "name the Northbound server certificate must carry (default: each endpoint's host)")
	fs.StringVar(&o.TLS.SBServerName, "ovn-sb-server-name", "", "name the Southbound server certificate must carry (default: each endpoint's host)")
	o.Options.BindFlags(fs)
	o.Layer2.BindFlags(fs)
	o.Layer3.BindFlags(fs)
	o.Policy.BindFlags(fs)
	o.NetworkPolicy.BindFlags(fs)
}

// Reconcilers are the dataplane controllers Setup registered, sharing one
// OVN client; their exported fields may be tuned before the manager starts.
type Reconcilers struct {
	OVN           *dataplane.Client
	Layer2        *layer2.Reconciler
	Layer3        *layer3.Reconciler
	MultiVTEP     *multivtep.Reconciler
	LiveMigration *migration.Reconciler
	Pods          *pods.Reconciler
	Policy        *policy.Reconciler
	Services      *lbservices.Reconciler
	NetworkPolicy *networkpolicy.Reconciler
}

// Setup registers the dataplane controllers with the manager: the Layer2
// transit-router topology (OKEP-5094), the Layer3 topology with its subnet
// pair policies (OKEP-5377), the Layer2 multi-VTEP ports and encaps
// (OKEP-5535), the kubevirt live-migration routes, every pod's and VM's
// port, the network-policy, isolation and EgressIP defaults, and the
// NetworkPolicies of Primary networks.
//
// Setup checks the OVN configuration but does not connect: once the manager
// runs (on the elected leader), a runnable connects to both databases,
// retrying with backoff for as long as it takes, and only then starts the
// controllers. An unreachable OVN so never holds up the manager, its
// webhooks or the other controllers; Reconcilers.OVN.Check and the
// udnkit_ovn_connected metric report it. The client closes when ctx ends.
func Setup(ctx context.Context, mgr ctrl.Manager, o Options) (*Reconcilers, error) {
	ovn, err := dataplane.New(dataplane.Config{NBAddress: o.NBAddress, SBAddress: o.SBAddress, TLS: o.TLS, ConnectTimeout: o.ConnectTimeout})
	if err != nil {
		return nil, err
	}
	// Before the manager starts: an informer takes no index once it runs.
	if err := mgr.GetFieldIndexer().IndexField(ctx, &nadv1.NetworkAttachmentDefinition{}, zone.NADNetworkField, zone.NADNetwork); err != nil {
		return nil, err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &nadv1.NetworkAttachmentDefinition{}, zone.AnyNetworkField, zone.AnyNetwork); err != nil {
		return nil, err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, zone.PodNodeField, zone.PodNode); err != nil {
		return nil, err
	}
	c := mgr.GetClient()
	rec := mgr.GetEventRecorder("udnkit-dataplane")
	// One guard for every controller: a NAD that fails the ownership
	// rule is reported once per version, not once per controller, and
	// each NAD version is verified once against each owner version (every
	// controller's reconcile of a gone NAD Forgets it).
	guard := &nadtrust.Guard{Reader: c, Live: mgr.GetAPIReader(), Recorder: rec, Consumer: zone.DataplaneConsumer, Remember: true}
	// The UDN-enabled services the topologies route and the DNS service
	// VMs' DHCP options name.
	cached := slices.Clone(o.Cluster.UDNAllowedDefaultServices)
	if !slices.Contains(cached, ovnk.DNSService) {
		cached = append(cached, ovnk.DNSService)
	}
	services, err := layer2.NewServiceCache(mgr, cached)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(services); err != nil {
		return nil, err
	}
	rs := &Reconcilers{
		OVN: ovn,
		Layer2: &layer2.Reconciler{Client: c, OVN: ovn, Local: o.Local, Zone: o.Zone, Cluster: o.Cluster, Services: services, Recorder: rec,
			AdoptLegacy: o.Layer2.AdoptLegacy, Workers: o.Workers, FIFOQueue: o.FIFOQueue, Guard: guard,
			GatewayMode: o.GatewayMode, ExternalPortRange: o.ExternalPortRange, EgressIP: o.Policy.EgressIP},
		Layer3: &layer3.Reconciler{Client: c, OVN: ovn, Form: o.Layer3.Form, Topology: true, Local: o.Local, Zone: o.Zone, Cluster: o.Cluster,
			Services: services, Recorder: rec, Workers: o.Workers, FIFOQueue: o.FIFOQueue, Guard: guard,
			GatewayMode: o.GatewayMode, ExternalPortRange: o.ExternalPortRange, EgressIP: o.Policy.EgressIP},
		MultiVTEP: &multivtep.Reconciler{Client: c, OVN: ovn, Local: o.Local, Transit: o.Cluster.TransitSubnets, Workers: o.Workers,
			FIFOQueue: o.FIFOQueue, Guard: guard},
		LiveMigration: &migration.Reconciler{Client: c, OVN: ovn, Recorder: rec, NodePerZone: o.Local != nil, Workers: o.Workers,
			FIFOQueue: o.FIFOQueue, Guard: guard},
		Policy: &policy.Reconciler{Client: c, OVN: ovn, Local: o.Local, Cluster: o.Cluster, EgressIP: o.Policy.EgressIP, Services: services,
			Workers: o.Workers, FIFOQueue: o.FIFOQueue, Guard: guard},
	}
	// The pod-port controller always runs: in every profile udnkit is the
	// only writer of its networks' pod and VM ports.
	rs.Pods = &pods.Reconciler{Client: c, OVN: ovn, Local: o.Local, Recorder: rec, Cluster: o.Cluster, Services: services,
		Workers: o.Workers, FIFOQueue: o.FIFOQueue, Guard: guard}
	// The Services' load balancers of every primary network (always on,
	// as upstream's per-network services controller).
	rs.Services = &lbservices.Reconciler{Client: c, OVN: ovn, Local: o.Local, Cluster: o.Cluster, Workers: o.Workers, FIFOQueue: o.FIFOQueue, Guard: guard}
	rs.NetworkPolicy = &networkpolicy.Reconciler{Client: c, OVN: ovn, Local: o.Local, MultiNetworkPolicy: o.NetworkPolicy.MultiNetworkPolicy,
		Workers: o.Workers, FIFOQueue: o.FIFOQueue, Guard: guard}
	// The isolation port group's members are read as the pod ports are:
	// from the zone's pods and their k8s.ovn.org/pod-networks.
	rs.Policy.IsolationPorts = rs.Pods.IsolationPorts
	// A new Primary network's pod ports, multi-VTEP ports, policy
	// defaults, NetworkPolicies and load balancers follow its topology's
	// Apply at once.
	wake := &zone.TopologyWake{}
	rs.Layer2.Wake, rs.Layer3.Wake = wake, wake
	rs.Pods.Wake, rs.Policy.Wake, rs.NetworkPolicy.Wake, rs.Services.Wake, rs.MultiVTEP.Wake = wake, wake, wake, wake, wake
	setups := []func(ctrl.Manager) error{rs.Layer2.SetupWithManager, rs.Layer3.SetupWithManager, rs.MultiVTEP.SetupWithManager,
		rs.LiveMigration.SetupWithManager, rs.Policy.SetupWithManager, rs.Pods.SetupWithManager, rs.Services.SetupWithManager,
		rs.NetworkPolicy.SetupWithManager}
	// The controllers re-apply the networks whose rows the OVN database lost.
	rq := zone.NewRequeuer(c)
	ovn.OnResync(rs.Policy.Resynced(rq.Resync))
	if err := mgr.Add(&zone.Connector{OVN: ovn, Manager: rq.Manager(mgr), Setups: setups}); err != nil {
		return nil, err
	}
	go func() {
		<-ctx.Done()
		ovn.Close()
	}()
	return rs, nil
}
