package controller

import (
	"context"
	"net/netip"
	"strings"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/dataplane"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers/addresses"
)

// LiveMigrationReconciler programs the kubevirt point-to-point routing of
// primary Layer2 networks on their transit routers: for every VM that runs on
// a node that does not own its addresses (addresses.Reconciler.MigratedVMs),
// a /32 (/128) route to the VM via the router's switch port and a
// priority-10 reroute of its traffic to the transit peer address of the
// gateway router of the node it runs on; both go when the VM returns or is
// deleted. There is one request for everything: any pod, node or NAD change,
// and a poll, because MigratedVMs is the address reconciler's memory and
// changes after that reconciler, not this one, has seen a pod.
type LiveMigrationReconciler struct {
	Client client.Client
	OVN    *dataplane.Client
	// MigratedVMs lists the VMs away from their owner node.
	MigratedVMs func() []addresses.MigratedVM
	// Poll is how often MigratedVMs is read again without an event; 0 means 5 s.
	Poll time.Duration
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

// MigrationNetworkName is the OVN network name of a MigratedVM's network
// ID: udn/<namespace>/<name> -> <namespace>_<name>, cudn/<name> -> cluster_udn_<name>.
func MigrationNetworkName(id string) string {
	parts := strings.Split(id, "/")
	switch {
	case len(parts) == 3 && parts[0] == "udn":
		return parts[1] + "_" + parts[2]
	case len(parts) == 2 && parts[0] == "cudn":
		return "cluster_udn_" + parts[1]
	}
	return ""
}

// Reconcile applies every primary Layer2 network's routes.
func (r *LiveMigrationReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	poll := orDefault(r.Poll, 5*time.Second)
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := r.Client.List(ctx, &nads); err != nil {
		return reconcile.Result{}, err
	}
	networks := map[string]dataplane.Layer2Network{}
	for i := range nads.Items {
		nad := &nads.Items[i]
		if net, ok, err := Layer2NetworkFromNAD(nad); err == nil && ok && nad.DeletionTimestamp.IsZero() && isUDN(nad) {
			networks[net.Name] = net
		}
	}
	var nodeList corev1.NodeList
	if err := r.Client.List(ctx, &nodeList); err != nil {
		return reconcile.Result{}, err
	}
	vms := map[string][]dataplane.VM{}
	for _, m := range r.MigratedVMs() {
		name := MigrationNetworkName(m.Network)
		vms[name] = append(vms[name], dataplane.VM{Namespace: m.Namespace, Name: m.VM, IPs: m.IPs, Node: m.CurrentNode, OwnerNode: m.OwnerNode})
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
				continue
			}
			keep = append(keep, vm)
		}
		d := &dataplane.Desired{Owner: dataplane.Owner{Network: name, Topology: dataplane.TopologyLayer2, Piece: dataplane.PieceLiveMigration}}
		if len(keep) > 0 {
			var err error
			if d, err = dataplane.LiveMigrationRoutes(dataplane.LiveMigrationNetwork{Name: name, Topology: dataplane.TopologyLayer2}, nodes, keep); err != nil {
				logger.Error(err, "skipping network's live-migration routes", "network", name)
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
	return reconcile.Result{RequeueAfter: poll}, err
}

func isUDN(nad *nadv1.NetworkAttachmentDefinition) bool {
	_, ok := nad.Labels[udnv1.LabelUserDefinedNetwork]
	return ok
}

// migrationNodes are the nodes with a node ID, as the transit router reaches
// their gateway routers: the router's switch port and the GR side of each
// node's transit peer subnets (OKEP-5094: offset 2·nodeID, odd address).
func migrationNodes(net dataplane.Layer2Network, items []corev1.Node) []dataplane.LiveMigrationNode {
	names := dataplane.NamesFor(net.Name)
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
