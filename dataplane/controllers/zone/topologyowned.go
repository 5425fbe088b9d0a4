package zone

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/udnkit/udnkit/dataplane"
	"github.com/udnkit/udnkit/dataplane/topology/base"
)

// TopologyWait is how soon a network whose topology udnkit does not (yet)
// program in this zone is looked at again by the controllers that add rows
// to that topology.
const TopologyWait = 5 * time.Second

// WaitForTopology says whether the rows a controller adds to a Primary
// network's topology (pod ports, port groups and ACLs on its switches,
// policies on its routers) must wait: udnkit's own topology piece of the
// network (Layer2's transit router, Layer3's topology) has no row in this
// zone yet, because the topology controller has not applied it or because
// OVN-Kubernetes programs the network here and udnkit stands aside. The
// result is the requeue that looks again; other topologies never wait.
func WaitForTopology(ctx context.Context, ovn *dataplane.Client, network, topology string) (reconcile.Result, bool) {
	piece := ""
	switch topology {
	case base.TopologyLayer2:
		piece = base.PieceTransitRouter
	case base.TopologyLayer3:
		piece = base.PieceTopology
	default:
		return reconcile.Result{}, false
	}
	if ovn.PieceHasNetwork(topology, piece, network) {
		return reconcile.Result{}, false
	}
	log.FromContext(ctx).V(1).Info("waiting for udnkit's topology of the network in this zone", "network", network, "piece", piece)
	return reconcile.Result{RequeueAfter: TopologyWait}, true
}
