package policy

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/dataplane/topology/policy"
	"github.com/udnkit/udnkit/ovnk"
)

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch

// defaultNetwork is the default network's key in k8s.ovn.org/node-subnets.
const defaultNetwork = "default"

// nodeFacts passes the node events that change what a reconcile reads of
// a node: its subnets (management IPs), host addresses (the node-ips set)
// and zone; every create after the initial list and every delete.
var nodeFacts = builder.WithPredicates(predicate.Funcs{CreateFunc: zone.CreatedLater, UpdateFunc: func(e event.UpdateEvent) bool {
	old, ok1 := e.ObjectOld.(*corev1.Node)
	cur, ok2 := e.ObjectNew.(*corev1.Node)
	if !ok1 || !ok2 {
		return true
	}
	for _, k := range []string{ovnk.AnnotationNodeSubnets, ovnk.AnnotationHostCIDRs, ovnk.AnnotationZoneName} {
		if o, n := old.Annotations[k], cur.Annotations[k]; o != n {
			return true
		}
	}
	return false
}})

// watchServices requeues every NAD when a UDN-enabled service's ClusterIPs
// change: the zone's udn-enabled-svc address sets follow.
func watchServices(services cache.Cache, nads handler.MapFunc) source.Source {
	return source.Kind(services, &corev1.Service{},
		handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, s *corev1.Service) []reconcile.Request { return nads(ctx, s) }),
		predicate.TypedFuncs[*corev1.Service]{UpdateFunc: func(e event.TypedUpdateEvent[*corev1.Service]) bool {
			return !slices.Equal(e.ObjectOld.Spec.ClusterIPs, e.ObjectNew.Spec.ClusterIPs)
		}})
}

// local are the zone's nodes, by name.
func (r *Reconciler) local(nodes []corev1.Node) []*corev1.Node {
	var out []*corev1.Node
	for i := range nodes {
		if r.Local == nil || r.Local(&nodes[i]) {
			out = append(out, &nodes[i])
		}
	}
	slices.SortFunc(out, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// network reads the NAD's primary Layer2 or Layer3 network with the zone's
// nodes: ok is false for other NADs and a Layer2 network not allocated yet.
// A Layer3 node without its host subnets on the network yet is left out.
func (r *Reconciler) network(ctx context.Context, nad *nadv1.NetworkAttachmentDefinition, nodes []corev1.Node) (policy.Network, bool, error) {
	var net policy.Network
	if l2, ok, err := zone.Layer2NetworkFromNAD(nad); err != nil || ok {
		if err != nil {
			return net, false, err
		}
		_, mgmt, err := ovnk.Layer2GatewayAndManagement(l2.Subnets, l2.InfrastructureSubnets, l2.DefaultGatewayIPs)
		if err != nil {
			return net, false, fmt.Errorf("network %s: %w", l2.Name, err)
		}
		net = policy.Network{Name: l2.Name, Topology: base.TopologyLayer2, Subnets: l2.Subnets}
		for _, n := range r.local(nodes) {
			net.Nodes = append(net.Nodes, policy.Node{Name: n.Name, Switch: ovnk.NamesFor(l2.Name).Switch(),
				ManagementPort: ovnk.NamesFor(l2.Name).ManagementPort(n.Name), ManagementIPs: mgmt})
		}
	} else {
		name, subnets, ok, err := zone.Layer3NetworkFromNAD(nad)
		if err != nil || !ok {
			return net, false, err
		}
		net = policy.Network{Name: name, Topology: base.TopologyLayer3, Subnets: subnets}
		r.subnets.Retain(nodes)
		for _, n := range r.local(nodes) {
			hosts, err := r.subnets.Of(n, name)
			if err != nil {
				return net, false, err
			}
			if len(hosts) == 0 {
				continue
			}
			mgmt, err := managementIPs(hosts)
			if err != nil {
				return net, false, fmt.Errorf("node %s network %s: %w", n.Name, name, err)
			}
			net.Nodes = append(net.Nodes, policy.Node{Name: n.Name, Switch: ovnk.NetworkPrefix(name) + n.Name,
				ManagementPort: ovnk.NamesFor(name).ManagementPort(n.Name), ManagementIPs: mgmt})
		}
	}
	return net, true, nil
}

// managementIPs are the management port's addresses in host subnets: the
// second address of each (upstream's GetNodeManagementIfAddr).
func managementIPs(subnets []netip.Prefix) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, s := range subnets {
		a, err := ovnk.AddrAt(s, 2)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// isolation is the zone's isolation piece: the local nodes with their
// default network management IPs; without any (the default network's
// subnets not allocated yet), the piece holds nothing.
func (r *Reconciler) isolation(ctx context.Context, nodes []corev1.Node) (*rows.Desired, error) {
	var local []policy.Node
	for _, n := range r.local(nodes) {
		hosts, err := r.subnets.Of(n, defaultNetwork)
		if err != nil {
			return nil, err
		}
		if len(hosts) == 0 {
			continue
		}
		mgmt, err := managementIPs(hosts)
		if err != nil {
			return nil, fmt.Errorf("node %s default network: %w", n.Name, err)
		}
		local = append(local, policy.Node{Name: n.Name, ManagementIPs: mgmt})
	}
	if len(local) == 0 {
		return &rows.Desired{Owner: rows.Owner{Network: policy.ZoneNetwork, Topology: base.TopologyZone, Piece: base.PieceUDNIsolation}}, nil
	}
	var ports []policy.IsolationMember
	if r.IsolationPorts != nil {
		var err error
		if ports, err = r.IsolationPorts(ctx); err != nil {
			return nil, err
		}
	}
	return policy.UDNIsolation(local, ports)
}

// serviceIPs are the ClusterIPs of the UDN-enabled services that exist.
func (r *Reconciler) serviceIPs(ctx context.Context) ([]netip.Addr, error) {
	reader := client.Reader(r.Client)
	if r.Services != nil {
		reader = r.Services
	}
	var out []netip.Addr
	for _, key := range r.Cluster.UDNAllowedDefaultServices {
		var svc corev1.Service
		if err := reader.Get(ctx, key, &svc); apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return nil, err
		}
		for _, ip := range svc.Spec.ClusterIPs {
			if a, err := netip.ParseAddr(ip); err == nil {
				out = append(out, a)
			}
		}
	}
	return out, nil
}
