// Package services is the dataplane's controller of the load balancers of
// the Services in a primary Layer2 or Layer3 network's namespaces (package
// topology/services): for each such network, once udnkit's topology of it
// exists in the zone (the load balancer groups are the topology's), it
// applies one piece holding the network's Services' cluster-wide load
// balancers, read from the Services of the namespaces whose NADs describe
// the network and the EndpointSlices upstream's mirror controller writes
// for it, and its per-node load balancers on the zone's nodes' switches
// and gateway routers, read from the nodes' host-cidrs and
// l3-gateway-config. A NAD's request applies its network's whole piece: a
// NAD or node change, a resync (healing) and the start queue NADs. A
// Service or mirrored EndpointSlice change queues its Service's request
// (service.go), which applies that Service's part of the piece only
// (topology/services: ServiceLoadBalancers), so one Service's change costs
// one Service and not every Service of the network; the fair queue keeps
// a busy namespace from holding up another. Both kinds of reconcile of a
// network read its objects and apply under the network's lock (locks), so
// a whole-piece reconcile that read the cache before a Service's change
// never applies after that Service's own. A node whose gateway router or
// switch is not written yet is left out until it is (apply), so it holds
// up no other node's load balancers. A network's piece goes with its last
// NAD.
//
// Package zone holds what it shares with the other dataplane controllers.
package services

import (
	"context"
	"errors"
	"fmt"
	"slices"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/udnkit/udnkit/dataplane"
	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	svctopo "github.com/udnkit/udnkit/dataplane/topology/services"
	"github.com/udnkit/udnkit/internal/phase"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/nadtrust"
)

// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch

// Reconciler applies the load balancers of every primary Layer2 and
// Layer3 network's Services.
type Reconciler struct {
	Client client.Client
	OVN    *dataplane.Client
	// Local says whether a node belongs to this OVN zone; nil means every node does.
	Local func(*corev1.Node) bool
	// Cluster are the cluster facts: the Service CIDRs and the masquerade
	// subnets (hairpin SNAT, host and ETP-local addresses).
	Cluster ovnk.ClusterConfig
	// Workers is how many networks are reconciled at once (0: DefaultWorkers).
	Workers int
	// FIFOQueue is zone.Options.FIFOQueue.
	FIFOQueue bool
	// Guard applies the NAD ownership rule; nil: one reading through
	// Client, without Events.
	Guard  *nadtrust.Guard
	trust  zone.Trusting
	sweeps zone.Sweeps
	// layer2 and layer3 are Layer2Name and Layer3Name, between sweeps.
	layer2, layer3 zone.Names
	// Wake, when set, queues a Primary network's NADs again as soon as
	// its topology is applied in the zone (nil: TopologyWait later).
	Wake   *zone.TopologyWake
	waiter *zone.TopologyWaiter
	locks  networkLocks
	// subnets: the nodes' decoded k8s.ovn.org/node-subnets, between
	// reconciles.
	subnets zone.NodeSubnets
}

// mirroredSlice passes the EndpointSlices a network's load balancers read:
// those labelled with a Service of a user-defined network.
var mirroredSlice = builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
	_, ok := o.GetLabels()[ovnk.LabelUserDefinedServiceName]
	return ok
}))

// SetupWithManager registers the reconciler.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := zone.TrustWatches(ctrl.NewControllerManagedBy(mgr).
		Named("dataplane-services").
		WithOptions(zone.ControllerOptions(r.Workers, r.FIFOQueue)), r.Client, r.guard(), zone.VTEPName).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(r.serviceRequests)).
		Watches(&discoveryv1.EndpointSlice{}, handler.EnqueueRequestsFromMapFunc(r.serviceRequests), mirroredSlice).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(zone.NADsIn(r.Client, "")), nodeFacts)
	b, r.waiter = r.Wake.Watch(b)
	return b.Complete(r)
}

// Reconcile applies the NAD's network's load balancers and removes those
// of networks whose NADs are gone, one phase after another.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if name, ok := serviceOf(req); ok {
		return r.reconcileService(ctx, req.Namespace, name)
	}
	return phase.Run(ctx, &zone.NADScope{Req: req}, []phase.Func[*zone.NADScope]{
		zone.ReadNADPhase[*zone.NADScope](r.Client, r.guard()),
		zone.ReadSourcePhase[*zone.NADScope](r.Client, r.guard(), zone.VTEPName),
		r.applyNetwork,
		func(ctx context.Context, s *zone.NADScope) (reconcile.Result, error) {
			return s.Sweep(ctx, &r.sweeps, r.collect)
		},
	})
}

// network reads the NAD's primary Layer2 or Layer3 network: ok is false
// for other NADs and a Layer2 network not allocated yet.
func (r *Reconciler) network(nad *nadv1.NetworkAttachmentDefinition) (svctopo.Network, bool, error) {
	net := svctopo.Network{MasqueradeSubnets: r.Cluster.MasqueradeSubnets, ServiceCIDRs: r.Cluster.ServiceCIDRs}
	if l2, ok, err := zone.Layer2NetworkFromNAD(nad); err != nil || ok {
		net.Name, net.Topology, net.Subnets = l2.Name, base.TopologyLayer2, l2.Subnets
		return net, ok, err
	}
	name, subnets, ok, err := zone.Layer3NetworkFromNAD(nad)
	net.Name, net.Topology, net.Subnets = name, base.TopologyLayer3, subnets
	return net, ok, err
}

// applyNetwork applies the source's network's load balancers once its
// topology exists in the zone, and waits (requeues) while a router or
// switch they go on is missing; a malformed NAD is logged and skipped, a
// failed read or apply ends the reconcile.
func (r *Reconciler) applyNetwork(ctx context.Context, s *zone.NADScope) (reconcile.Result, error) {
	if s.Owner == nil {
		return reconcile.Result{}, nil
	}
	net, ok, err := r.network(s.Src)
	if err != nil || !ok {
		if err != nil {
			log.FromContext(ctx).Error(err, "skipping network")
		}
		return reconcile.Result{}, nil
	}
	s.Network = net.Name
	if res, wait := r.waiter.WaitForTopology(ctx, r.OVN, net.Name, net.Topology, s.Req); wait {
		return res, nil
	}
	defer r.locks.lock(net.Name)()
	svcs, err := r.services(ctx, net.Name)
	if err != nil {
		return s.Done(reconcile.Result{}, err)
	}
	nodes, err := r.nodes(ctx, net)
	if err != nil {
		return s.Done(reconcile.Result{}, err)
	}
	res, err := r.apply(ctx, net, nodes, zone.UnlessGone(r.Client, r.guard(), zone.VTEPName, net.Name), func(nodes []svctopo.Node) (*rows.Desired, error) {
		return svctopo.LoadBalancers(net, nodes, svcs)
	})
	if err != nil {
		return s.Done(reconcile.Result{}, err)
	}
	return res, nil
}

// apply applies the rows build makes for the zone's nodes. A node whose
// gateway router or switch is not written yet (by the topology's
// controller, or OVN-Kubernetes) is left out and the reconcile requeued
// after zone.TopologyWait: its per-node load balancers wait for it, the
// other nodes' and the cluster-wide ones do not. A row no node names
// (the network's group) makes them all wait. Rows build cannot make (a
// malformed Service or network) are logged and skipped; a failed apply is
// the error. unless is ApplyUnless's (nil: none).
func (r *Reconciler) apply(ctx context.Context, net svctopo.Network, nodes []svctopo.Node, unless func(context.Context) (bool, error),
	build func([]svctopo.Node) (*rows.Desired, error)) (reconcile.Result, error) {
	var res reconcile.Result
	for {
		d, err := build(nodes)
		if err != nil {
			log.FromContext(ctx).Error(err, "skipping network", "network", net.Name)
			return res, nil
		}
		_, err = r.OVN.ApplyUnless(ctx, d, unless)
		missing := (*rows.MissingRowError)(nil)
		if !errors.As(err, &missing) {
			return res, err
		}
		log.FromContext(ctx).V(1).Info("load balancers wait for the network's topology", "network", net.Name, "missing", missing.Name)
		res = reconcile.Result{RequeueAfter: zone.TopologyWait}
		left := slices.DeleteFunc(slices.Clone(nodes), func(n svctopo.Node) bool {
			return n.GatewayRouter == missing.Name || n.Switch == missing.Name
		})
		if len(left) == len(nodes) {
			return res, nil
		}
		nodes = left
	}
}

// services are the Services of the namespaces whose trusted NADs describe
// the network, each with its namespace's mirrored EndpointSlices: the
// cache's own objects, not copies (every reconcile reads them all, and
// the builder only reads them).
func (r *Reconciler) services(ctx context.Context, network string) ([]svctopo.Service, error) {
	nads, err := zone.TrustedNamingNADs(ctx, r.Client, r.guard(), network)
	if err != nil {
		return nil, err
	}
	var namespaces []string
	for _, nad := range nads {
		if !slices.Contains(namespaces, nad.Namespace) {
			namespaces = append(namespaces, nad.Namespace)
		}
	}
	slices.Sort(namespaces)
	var out []svctopo.Service
	for _, ns := range namespaces {
		var svcs corev1.ServiceList
		if err := r.Client.List(ctx, &svcs, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("services of namespace %s: %w", ns, err)
		}
		var eps discoveryv1.EndpointSliceList
		if err := r.Client.List(ctx, &eps, client.InNamespace(ns), client.HasLabels{ovnk.LabelUserDefinedServiceName},
			client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("endpoint slices of namespace %s: %w", ns, err)
		}
		bySvc := map[string][]*discoveryv1.EndpointSlice{}
		for i := range eps.Items {
			s := &eps.Items[i]
			name := s.Labels[ovnk.LabelUserDefinedServiceName]
			bySvc[name] = append(bySvc[name], s)
		}
		for i := range svcs.Items {
			svc := &svcs.Items[i]
			out = append(out, svctopo.Service{Service: svc, Slices: bySvc[svc.Name]})
		}
	}
	return out, nil
}

// collect removes the piece of the networks no NAD describes any more,
// then the load balancer groups such networks left (collectGroups).
func (r *Reconciler) collect(ctx context.Context) error {
	for _, t := range []struct {
		topology string
		names    *zone.Names
	}{{base.TopologyLayer2, r.layer2.Of(zone.Layer2Name)}, {base.TopologyLayer3, r.layer3.Of(zone.Layer3Name)}} {
		if _, err := zone.CollectPieces(ctx, r.Client, r.guard(), r.OVN, r.OVN.PieceNetworks, t.names,
			rows.Owner{Topology: t.topology, Piece: base.PieceServices}); err != nil {
			return err
		}
	}
	return r.collectGroups(ctx)
}

func (r *Reconciler) guard() *nadtrust.Guard { return r.trust.Of(r.Guard, r.Client) }
