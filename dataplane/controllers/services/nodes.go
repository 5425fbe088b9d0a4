package services

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	svctopo "github.com/udnkit/udnkit/dataplane/topology/services"
	"github.com/udnkit/udnkit/ovnk"
)

// nodeFacts passes the node events that change a node's per-node load
// balancers: its host addresses, gateway config, subnets and zone; every
// create after the initial list and every delete.
var nodeFacts = builder.WithPredicates(predicate.Funcs{CreateFunc: zone.CreatedLater, UpdateFunc: func(e event.UpdateEvent) bool {
	old, ok1 := e.ObjectOld.(*corev1.Node)
	cur, ok2 := e.ObjectNew.(*corev1.Node)
	if !ok1 || !ok2 {
		return true
	}
	for _, k := range []string{ovnk.AnnotationHostCIDRs, ovnk.AnnotationL3GatewayConfig, ovnk.AnnotationNodeSubnets, ovnk.AnnotationZoneName} {
		if old.Annotations[k] != cur.Annotations[k] {
			return true
		}
	}
	return false
}})

// nodes are the zone's nodes on the network as upstream's
// nodeInfoForNetwork reads the local node: a Layer3 network's only with
// their host subnets on it; the gateway router only with an
// l3-gateway-config whose mode is not disabled; a node whose host-cidrs
// or gateway config is malformed is kept without them (logged).
func (r *Reconciler) nodes(ctx context.Context, net svctopo.Network) ([]svctopo.Node, error) {
	// Read-only: no copy of every node at each network's reconcile.
	var list corev1.NodeList
	if err := r.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	r.subnets.Retain(list.Items)
	names := ovnk.NamesFor(net.Name)
	var out []svctopo.Node
	for i := range list.Items {
		n := &list.Items[i]
		if r.Local != nil && !r.Local(n) {
			continue
		}
		node := svctopo.Node{Name: n.Name, Switch: names.Switch()}
		if net.Topology == base.TopologyLayer3 {
			hosts, err := r.subnets.Of(n, net.Name)
			if err != nil || len(hosts) == 0 {
				continue
			}
			node.Switch = names.NodeSwitch(n.Name)
		}
		if cidrs, _, err := ovnk.DecodeNodeHostCIDRs(n); err != nil {
			log.FromContext(ctx).Error(err, "node without host addresses for its NodePorts", "node", n.Name)
		} else {
			for _, c := range cidrs {
				node.HostAddresses = append(node.HostAddresses, c.Addr())
			}
		}
		gw, ok, err := ovnk.DecodeL3GatewayConfig(n)
		if err == nil && ok && gw.Mode != ovnk.GatewayModeDisabled {
			node.GatewayRouter, node.NodePortEnabled = names.GatewayRouter(n.Name), gw.NodePortEnable
			for _, a := range gw.IPAddresses {
				node.GatewayAddresses = append(node.GatewayAddresses, a.Addr())
			}
		}
		out = append(out, node)
	}
	slices.SortFunc(out, func(a, b svctopo.Node) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
