package controller

import (
	"context"
	"net/netip"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/udnkit/udnkit/dataplane"
	"github.com/udnkit/udnkit/ovnk"
)

// LiveMigrationReconciler programs the kubevirt point-to-point routing of
// primary Layer2 networks on their transit routers: for every VM that runs on
// a node that does not own its addresses (ovnk.MigratedVMs: the owner node the
// address reconciler publishes on the VM's pods, and the pod it runs in),
// a /32 (/128) route to the VM via the router's switch port and a
// priority-10 reroute of its traffic to the transit peer address of the
// gateway router of the node it runs on; both go when the VM returns or is
// deleted. There is one request for everything: any pod, node or NAD change.
type LiveMigrationReconciler struct {
	Client client.Client
	OVN    *dataplane.Client
	// Recorder, when set, raises a Warning Event on a migrated VM's pod
	// whose routes cannot be programmed (its node has no node ID yet, its
	// addresses are malformed, the routes are refused).
	Recorder recorder.EventRecorder
}

// Event reasons of live migration.
const (
	ReasonLiveMigrationWaiting = "LiveMigrationWaiting"
	ReasonLiveMigrationFailed  = "LiveMigrationFailed"
)

func (r *LiveMigrationReconciler) warn(pod *corev1.Pod, reason, format string, args ...any) {
	if r.Recorder != nil && pod != nil {
		r.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, reason, "ProgramLiveMigration", format, args...)
	}
}

var liveMigrationRequest = reconcile.Request{NamespacedName: types.NamespacedName{Name: "live-migration"}}

// SetupWithManager registers the reconciler.
func (r *LiveMigrationReconciler) SetupWithManager(mgr ctrl.Manager) error {
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{liveMigrationRequest}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("dataplane-live-migration").
		Watches(&corev1.Pod{}, one).
		Watches(&corev1.Node{}, one).
		Watches(&nadv1.NetworkAttachmentDefinition{}, one).
		Complete(r)
}

// Reconcile applies every primary Layer2 network's routes.
func (r *LiveMigrationReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := r.Client.List(ctx, &nads); err != nil {
		return reconcile.Result{}, err
	}
	networks := map[string]dataplane.Layer2Network{}
	networkOfKey := map[string]string{} // pod-networks key (NAD namespace/name) -> network
	for i := range nads.Items {
		nad := &nads.Items[i]
		if net, ok, err := Layer2NetworkFromNAD(nad); err == nil && ok && nad.DeletionTimestamp.IsZero() && isUDN(nad) {
			networks[net.Name] = net
			networkOfKey[nad.Namespace+"/"+nad.Name] = net.Name
		}
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods); err != nil {
		return reconcile.Result{}, err
	}
	var nodeList corev1.NodeList
	if err := r.Client.List(ctx, &nodeList); err != nil {
		return reconcile.Result{}, err
	}
	vms := map[string][]dataplane.VM{}
	podOf := map[string]*corev1.Pod{} // namespace/VM -> the pod it runs in
	for _, m := range ovnk.MigratedVMs(pods.Items) {
		podOf[m.Namespace+"/"+m.VM] = m.Pod
		all, err := ovnk.DecodePodNetworks(m.Pod.Annotations)
		if err != nil {
			logger.Error(err, "skipping migrated VM", "vm", m.Namespace+"/"+m.VM)
			r.warn(m.Pod, ReasonLiveMigrationFailed, "no live-migration routes for VM %s: %v", m.VM, err)
			continue
		}
		for key, pn := range all {
			name, ok := networkOfKey[key]
			if !ok || pn.Role != ovnk.RolePrimary {
				continue
			}
			addrs, err := pn.Parse()
			if err != nil {
				logger.Error(err, "skipping migrated VM", "vm", m.Namespace+"/"+m.VM, "field", ovnk.PodNetworkField(key))
				r.warn(m.Pod, ReasonLiveMigrationFailed, "no live-migration routes for VM %s: annotation %s.%v", m.VM, ovnk.PodNetworkField(key), err)
				continue
			}
			vms[name] = append(vms[name], dataplane.VM{Namespace: m.Namespace, Name: m.VM, IPs: addrs.IPs, Node: m.CurrentNode, OwnerNode: m.OwnerNode})
		}
	}
	var failed error
	for name, net := range networks {
		nodes := migrationNodes(net, nodeList.Items)
		known := map[string]bool{}
		for _, n := range nodes {
			known[n.Name] = true
		}
		var keep []dataplane.VM
		for _, vm := range vms[name] {
			if !known[vm.Node] {
				// Its node has no node ID yet: routed once it has.
				logger.Info("migrated VM waits for its node", "network", name, "vm", vm.Namespace+"/"+vm.Name, "node", vm.Node)
				r.warn(podOf[vm.Namespace+"/"+vm.Name], ReasonLiveMigrationWaiting,
					"VM %s runs on node %s, which has no %s yet: its live-migration routes are programmed once it has", vm.Name, vm.Node, ovnk.AnnotationNodeID)
				continue
			}
			keep = append(keep, vm)
		}
		d := &dataplane.Desired{Owner: dataplane.Owner{Network: name, Topology: dataplane.TopologyLayer2, Piece: dataplane.PieceLiveMigration}}
		if len(keep) > 0 {
			var err error
			if d, err = dataplane.LiveMigrationRoutes(dataplane.LiveMigrationNetwork{Name: name, Topology: dataplane.TopologyLayer2}, nodes, keep); err != nil {
				logger.Error(err, "skipping network's live-migration routes", "network", name)
				for _, vm := range keep {
					r.warn(podOf[vm.Namespace+"/"+vm.Name], ReasonLiveMigrationFailed, "no live-migration routes for VM %s: %v", vm.Name, err)
				}
				continue
			}
		}
		if _, err := r.OVN.Apply(ctx, d); err != nil && failed == nil {
			failed = err // the other networks still get theirs
		}
	}
	if failed != nil {
		return reconcile.Result{}, failed
	}
	err := collectPiece(ctx, r.Client, r.OVN, dataplane.Owner{Topology: dataplane.TopologyLayer2, Piece: dataplane.PieceLiveMigration},
		r.OVN.PieceNetworks, layer2Name)
	return reconcile.Result{}, err
}

func isUDN(nad *nadv1.NetworkAttachmentDefinition) bool {
	_, ok := nad.Labels[ovnk.LabelUserDefinedNetwork]
	return ok
}

// migrationNodes are the nodes with a node ID, as the transit router reaches
// their gateway routers: the router's switch port and the GR side of each
// node's transit peer subnets (OKEP-5094: offset 2·nodeID, odd address).
func migrationNodes(net dataplane.Layer2Network, items []corev1.Node) []dataplane.LiveMigrationNode {
	names := ovnk.NamesFor(net.Name)
	transits := net.TransitSubnets
	if len(transits) == 0 {
		transits = []netip.Prefix{ovnk.DefaultTransitSubnetV4, ovnk.DefaultTransitSubnetV6}
	}
	var out []dataplane.LiveMigrationNode
	for i := range items {
		n, ok, err := Layer2NodeFromNode(&items[i])
		if err != nil || !ok {
			continue
		}
		node := dataplane.LiveMigrationNode{Name: n.Name, RouterPort: names.RouterToSwitch()}
		for _, s := range net.Subnets {
			for _, tr := range transits {
				if tr.Addr().Is4() != s.Addr().Is4() {
					continue
				}
				if peer, err := ovnk.TransitPeerSubnet(tr, n.ID); err == nil {
					_, gr := ovnk.TransitPeerIPs(peer)
					node.GatewayIPs = append(node.GatewayIPs, gr.Addr())
				}
			}
		}
		if len(node.GatewayIPs) > 0 {
			out = append(out, node)
		}
	}
	return out
}
