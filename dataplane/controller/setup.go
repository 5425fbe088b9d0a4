package controller

import (
	"context"
	"fmt"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/udnkit/udnkit/dataplane"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/nadtrust"
)

// Options configure the dataplane controllers.
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
	// Local says whether a node belongs to this OVN zone; nil means every node
	// does (one zone, as `make run` has).
	Local func(*corev1.Node) bool
	// Zone is --zone, named in what the dataplane reports ("": the single zone).
	Zone string
	// Cluster are the cluster facts (--udn-allowed-default-services,
	// --masquerade-subnets, --mtu...): the Layer2 topology routes the
	// UDN-enabled services' ClusterIPs to the management port and SNATs
	// management-port traffic to the network's masquerade IP.
	Cluster ovnk.ClusterConfig
	// AdoptLegacyLayer2 is --adopt-legacy-layer2: take over and remove
	// the old Layer2 topology's rows OVN-Kubernetes created (see
	// topology.Layer2Legacy). Off, udnkit never touches a row it did not create.
	AdoptLegacyLayer2 bool
	// Layer3PolicyForm is the manager's --layer3-subnet-policies (default: address-set).
	Layer3PolicyForm topology.Layer3PolicyForm
	// Workers is how many networks each of the Layer2, Layer3, multi-VTEP
	// and live-migration controllers reconciles at once (0:
	// DefaultWorkers), so a large network's reconcile never holds a small
	// one in the workqueue.
	Workers int
	// FIFOQueue gives the controllers controller-runtime's default queue
	// (FIFO among equal priorities). Off (the default), each serves the
	// namespaces of its queued NADs in turn (fairqueue.ByNamespace), so a
	// flood of networks in one namespace does not hold up another
	// namespace's rows.
	FIFOQueue bool
}

// InZone is Options.Local for the manager's --zone: a node is local iff
// its OVN interconnect zone (ovnk.ZoneOf: the node's name, or the
// k8s.ovn.org/zone-name an older OVN-Kubernetes set) is zone. The empty zone
// is the single zone of `make run`, where every node is local (nil).
func InZone(zone string) func(*corev1.Node) bool {
	if zone == "" {
		return nil
	}
	return func(n *corev1.Node) bool { return ovnk.ZoneOf(n) == zone }
}

// Reconcilers are the dataplane controllers Setup registered, sharing one
// OVN client; their exported fields may be tuned before the manager starts.
type Reconcilers struct {
	OVN           *dataplane.Client
	Layer2        *Layer2Reconciler
	Layer3        *Layer3Reconciler
	MultiVTEP     *MultiVTEPReconciler
	LiveMigration *LiveMigrationReconciler
}

// Setup registers the dataplane controllers with the manager: the Layer2
// transit-router topology (OKEP-5094), the Layer3 subnet pair policies
// (OKEP-5377), the Layer2 multi-VTEP ports and encaps (OKEP-5535) and the
// kubevirt live-migration routes.
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
	if err := mgr.GetFieldIndexer().IndexField(ctx, &nadv1.NetworkAttachmentDefinition{}, NADNetworkField, NADNetwork); err != nil {
		return nil, err
	}
	c := mgr.GetClient()
	rec := mgr.GetEventRecorder("udnkit-dataplane")
	// One guard for the four controllers: a NAD that fails the ownership
	// rule is reported once per version, not once per controller.
	guard := &nadtrust.Guard{Reader: c, Live: mgr.GetAPIReader(), Recorder: rec, Consumer: DataplaneConsumer}
	var services cache.Cache
	if len(o.Cluster.UDNAllowedDefaultServices) > 0 {
		if services, err = NewServiceCache(mgr, o.Cluster.UDNAllowedDefaultServices); err != nil {
			return nil, err
		}
		if err := mgr.Add(services); err != nil {
			return nil, err
		}
	}
	rs := &Reconcilers{
		OVN: ovn,
		Layer2: &Layer2Reconciler{Client: c, OVN: ovn, Local: o.Local, Zone: o.Zone, Cluster: o.Cluster, Services: services, Recorder: rec,
			AdoptLegacy: o.AdoptLegacyLayer2, Workers: o.Workers, FIFOQueue: o.FIFOQueue, Guard: guard},
		Layer3: &Layer3Reconciler{Client: c, OVN: ovn, Form: o.Layer3PolicyForm, Workers: o.Workers, FIFOQueue: o.FIFOQueue,
			Guard: guard},
		MultiVTEP: &MultiVTEPReconciler{Client: c, OVN: ovn, Local: o.Local, Transit: o.Cluster.TransitSubnets, Workers: o.Workers,
			FIFOQueue: o.FIFOQueue, Guard: guard},
		LiveMigration: &LiveMigrationReconciler{Client: c, OVN: ovn, Recorder: rec, NodePerZone: o.Local != nil, Workers: o.Workers,
			FIFOQueue: o.FIFOQueue, Guard: guard},
	}
	setups := []func(ctrl.Manager) error{rs.Layer2.SetupWithManager, rs.Layer3.SetupWithManager, rs.MultiVTEP.SetupWithManager,
		rs.LiveMigration.SetupWithManager}
	// The controllers re-apply the networks whose rows the OVN database lost.
	rq := &requeuer{c: c}
	ovn.OnResync(rq.resync)
	if err := mgr.Add(&connector{ovn: ovn, mgr: rq.manager(mgr), setups: setups}); err != nil {
		return nil, err
	}
	go func() {
		<-ctx.Done()
		ovn.Close()
	}()
	return rs, nil
}

// connector connects to OVN in the background and then starts the dataplane
// controllers (controller-runtime starts controllers added to a running
// manager at once). It needs leader election, as the controllers do: replicas
// that are not the leader do not connect.
type connector struct {
	ovn    *dataplane.Client
	mgr    ctrl.Manager
	setups []func(ctrl.Manager) error
}

func (r *connector) Start(ctx context.Context) error {
	if err := r.ovn.Connect(ctx); err != nil {
		return nil // the manager stops
	}
	for _, setup := range r.setups {
		if err := setup(r.mgr); err != nil {
			return fmt.Errorf("starting the dataplane controllers: %w", err)
		}
	}
	<-ctx.Done()
	r.ovn.Close()
	return nil
}
