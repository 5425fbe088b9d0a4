package multivtep

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/udnkit/udnkit/dataplane"
	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/dataplane/topology/multivtep"
	"github.com/udnkit/udnkit/internal/phase"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/nadtrust"
)

// Reconciler programs OKEP-5535 from nodes with several encap IPs
// (k8s.ovn.org/node-encap-ips) and the encap_ip of pods in
// k8s.ovn.org/pod-networks. Primary Layer2 networks: pods on remote such
// nodes get a remote port on the network's layer2 switch, and its Southbound
// Port_Binding.encap points at the Encap row of the pod's encap_ip; a port
// appears with its pod and goes with it. Primary Layer3 networks: the
// on-demand transit switch ports and routes of multivtep.MultiVTEPPorts; a
// port appears with the first pod on its VTEP and goes with the last.
// Requests are NADs; Node and Pod changes requeue the NADs they concern.
type Reconciler struct {
	Client client.Client
	OVN    *dataplane.Client
	// Local says whether a node belongs to this OVN zone; nil means every node
	// does (then every pod's port and encap are the CNI's and nothing is written).
	Local func(*corev1.Node) bool
	// EncapRetry is how soon a port whose Port_Binding (ovn-northd) or Encap
	// row (the remote chassis) is not there yet is tried again; 0 means 5 s.
	EncapRetry time.Duration
	// Transit are the cluster's transit subnets, one per IP family
	// (--transit-subnets); nil means OVN-Kubernetes' defaults.
	Transit []netip.Prefix
	// Workers is how many networks are reconciled at once (0: DefaultWorkers).
	Workers int
	// FIFOQueue is Options.FIFOQueue.
	FIFOQueue bool
	// Guard applies the NAD ownership rule (trust.go); nil: one reading
	// through Client, without Events.
	Guard *nadtrust.Guard
	// Wake, when set, queues a network's NADs again as soon as its
	// topology is applied (a port waiting for its switch or router).
	Wake   *zone.TopologyWake
	waiter *zone.TopologyWaiter
	trust  zone.Trusting

	// networks serialises the reconciles of one network (its NADs are
	// separate requests; each reads the network's nodes and pods).
	networks engine.KeyLocks
	sweeps   zone.Sweeps
	// layer2 and layer3 are Layer2Name and Layer3Name, between sweeps.
	layer2, layer3 zone.Names
}

// SetupWithManager registers the reconciler.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := zone.TrustWatches(ctrl.NewControllerManagedBy(mgr).
		Named("dataplane-multi-vtep").
		WithOptions(zone.ControllerOptions(r.Workers, r.FIFOQueue)), r.Client, r.guard(), zone.VTEPName).
		Watches(&corev1.Node{}, r.NodeHandler(), zone.VTEPNodeFacts.Predicate()).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return zone.NADsIn(r.Client, o.GetNamespace())(ctx, o)
		}), zone.PodPortChanged())
	b, r.waiter = r.Wake.Watch(b)
	return b.Complete(r)
}

// nodeHandler maps a node event to the NADs it concerns: every NAD, but
// for an update that changes only k8s.ovn.org/node-subnets. That one the
// node reconciler makes on every node whenever a Layer3 network is created
// or deleted, and it concerns only that network, and only on multi-VTEP
// nodes (the others keep the Layer3 topology's ports): mapped to every NAD,
// each new network cost every network's reconcile once per node, which
// grew with the square of the networks.
func (r *Reconciler) NodeHandler() handler.EventHandler {
	all := handler.EnqueueRequestsFromMapFunc(zone.NADsIn(r.Client, ""))
	others := zone.VTEPNodeFacts.Without(ovnk.AnnotationNodeSubnets)
	return handler.Funcs{CreateFunc: all.Create, DeleteFunc: all.Delete, GenericFunc: all.Generic,
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			old, ok1 := e.ObjectOld.(*corev1.Node)
			cur, ok2 := e.ObjectNew.(*corev1.Node)
			if !ok1 || !ok2 || others.Changed(old, cur) {
				all.Update(ctx, e, q)
				return
			}
			// Encap IPs are unchanged (others), so the node was and stays
			// what it is now.
			if n, err := zone.VTEPNodeFromNode(cur); err == nil && !n.MultiVTEP() {
				return
			}
			networks, err := ovnk.NodeSubnetsChanged(old.Annotations[ovnk.AnnotationNodeSubnets], cur.Annotations[ovnk.AnnotationNodeSubnets])
			if err != nil {
				all.Update(ctx, e, q) // each reconcile reports the malformed annotation
				return
			}
			for _, network := range networks {
				var nads nadv1.NetworkAttachmentDefinitionList
				if err := r.Client.List(ctx, &nads, client.MatchingFields{zone.NADNetworkField: network}, client.UnsafeDisableDeepCopy); err != nil {
					all.Update(ctx, e, q)
					return
				}
				for i := range nads.Items {
					q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&nads.Items[i])})
				}
			}
		}}
}

// Reconcile applies the ports of the NAD's network (every NAD of it: a CUDN
// has one per namespace) and removes those of networks whose NADs are gone,
// one phase after another.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return phase.Run(ctx, &zone.NADScope{Req: req}, []phase.Func[*zone.NADScope]{
		zone.ReadNADPhase[*zone.NADScope](r.Client, r.guard()),
		r.applyPorts,
		r.sweep,
	})
}

// applyPorts applies the ports of the NAD's Layer2 or Layer3 network, its
// reconciles taking turns; a failed apply ends the reconcile, a port still
// waiting for its Port_Binding or Encap row requeues it after EncapRetry.
func (r *Reconciler) applyPorts(ctx context.Context, s *zone.NADScope) (reconcile.Result, error) {
	if s.Owner == nil {
		return reconcile.Result{}, nil
	}
	apply := r.apply
	name, ok := zone.Layer2Name(s.NAD)
	if !ok {
		apply = r.applyLayer3
		if name, ok = zone.Layer3Name(s.NAD); !ok {
			return reconcile.Result{}, nil
		}
	}
	s.Network = name
	try := func() (bool, error) {
		unlock := r.networks.Lock(name)
		defer unlock()
		return apply(ctx, name)
	}
	retry, err := try()
	missing := (*rows.MissingRowError)(nil)
	if errors.As(err, &missing) && r.waiter != nil {
		// Woken by the topology's Apply; looked at again after the record.
		r.waiter.Await(name, s.Req)
		retry, err = try()
	}
	if errors.As(err, &missing) {
		// The topology's router or switch the ports go on is not there yet:
		// its controller (or OVN-Kubernetes) creates it, this one waits
		// (TopologyWait is the backstop of the wake).
		log.FromContext(ctx).V(1).Info("multi-VTEP ports wait for the network's topology", "network", name, "missing", missing.Name)
		return reconcile.Result{RequeueAfter: zone.TopologyWait}, nil
	}
	if err != nil {
		return s.Done(reconcile.Result{}, err)
	}
	if retry {
		return reconcile.Result{RequeueAfter: zone.OrDefault(r.EncapRetry, 5*time.Second)}, nil
	}
	return reconcile.Result{}, nil
}

func (r *Reconciler) sweep(ctx context.Context, s *zone.NADScope) (reconcile.Result, error) {
	return s.Sweep(ctx, &r.sweeps, r.collect)
}

// setEncaps points the ports' Port_Bindings at their Encap rows; retry
// reports bindings (ovn-northd) or Encap rows (the remote chassis) not there yet.
func (r *Reconciler) setEncaps(ctx context.Context, network string, encaps map[string]multivtep.PortEncap) (retry bool) {
	if _, err := r.OVN.SetPortEncaps(ctx, network, encaps); err != nil {
		log.FromContext(ctx).Info("Port_Binding encaps not set yet", "network", network, "reason", err.Error())
		return true
	}
	return false
}

// vtepState reads the nodes and the pods (with an encap_ip) of one network;
// nodes and pods with bad annotations are logged and left out, so one bad
// object does not hold back the others.
func (r *Reconciler) vtepState(ctx context.Context, network string) (
	nodes []multivtep.VTEPNode, objs map[string]*corev1.Node, pods []multivtep.Layer2PodPort, err error) {
	logger := log.FromContext(ctx).WithValues("network", network)
	// Read-only: the informer's own objects, not copies of every node and
	// pod for each network.
	var nodeList corev1.NodeList
	if err := r.Client.List(ctx, &nodeList, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, nil, err
	}
	byName := map[string]multivtep.VTEPNode{}
	objs = map[string]*corev1.Node{}
	for i := range nodeList.Items {
		n, err := zone.VTEPNodeFromNode(&nodeList.Items[i])
		if err != nil {
			logger.Error(err, "node left out of multi-VTEP ports")
			continue
		}
		n.Local = r.Local == nil || r.Local(&nodeList.Items[i])
		if !n.Local && n.Chassis == "" {
			// Its ports would need a chassis ovnkube-node has not published yet.
			logger.Info("multi-VTEP node waits for its chassis", "node", n.Name, "annotation", ovnk.AnnotationNodeChassisID)
			continue
		}
		nodes = append(nodes, n)
		byName[n.Name], objs[n.Name] = n, &nodeList.Items[i]
	}
	// The network's NADs (a CUDN has one per namespace), by the cache's
	// index (which parsed each NAD's config once), not every NAD of the
	// cluster for each network.
	// Only NADs that pass the ownership rule: a forged NAD naming this
	// network adds no pods of its namespace.
	nads, err := zone.TrustedNamingNADs(ctx, r.Client, r.guard(), network)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, nad := range nads {
		var list corev1.PodList
		if err := r.Client.List(ctx, &list, client.InNamespace(nad.Namespace), client.UnsafeDisableDeepCopy); err != nil {
			return nil, nil, nil, err
		}
		for j := range list.Items {
			p, ok, err := zone.Layer2PodPortFromPod(&list.Items[j], nad.Namespace+"/"+nad.Name)
			if err == nil && ok {
				node, known := byName[p.Node]
				if !known {
					continue // the node has no Node object (yet)
				}
				if node.MultiVTEP() && !slices.Contains(node.EncapIPs, p.EncapIP) {
					err = fmt.Errorf("encap_ip %s is not one of node %s's encap IPs %v", p.EncapIP, node.Name, node.EncapIPs)
				}
			}
			if err != nil {
				logger.Error(err, "pod left out of multi-VTEP ports", "pod", client.ObjectKeyFromObject(&list.Items[j]))
				continue
			}
			if ok {
				pods = append(pods, p)
			}
		}
	}
	return nodes, objs, pods, nil
}

// apply programs one Layer2 network; retry reports encaps that could not be set yet.
func (r *Reconciler) apply(ctx context.Context, network string) (retry bool, err error) {
	nodes, _, pods, err := r.vtepState(ctx, network)
	if err != nil {
		return false, err
	}
	d, encaps, err := multivtep.Layer2MultiVTEPPorts(network, nodes, pods)
	if err != nil {
		return false, err
	}
	if _, err := r.OVN.ApplyUnless(ctx, d, zone.UnlessGone(r.Client, r.guard(), zone.Layer2Name, network)); err != nil {
		return false, err
	}
	return r.setEncaps(ctx, network, encaps), nil
}

// applyLayer3 programs one Layer3 network's on-demand transit switch ports
// and routes (multivtep.MultiVTEPPorts) for its multi-VTEP nodes, with each
// node's host subnet from k8s.ovn.org/node-subnets and one tunnel ID per
// encap IP from k8s.ovn.org/node-transit-switch-port-tunnel-ids, and points
// each remote port's Port_Binding.encap at its encap IP's Encap row.
func (r *Reconciler) applyLayer3(ctx context.Context, network string) (retry bool, err error) {
	logger := log.FromContext(ctx).WithValues("network", network)
	all, objs, allPods, err := r.vtepState(ctx, network)
	if err != nil {
		return false, err
	}
	var nodes []multivtep.VTEPNode
	kept := map[string]bool{}
	for _, n := range all {
		if !n.MultiVTEP() {
			continue // single-VTEP nodes keep the Layer3 topology's ports
		}
		if len(n.TunnelIDs) != len(n.EncapIPs) {
			// The node reconciler has not allocated its tunnel IDs yet.
			logger.Info("multi-VTEP node waits for its tunnel IDs", "node", n.Name)
			continue
		}
		subnets, err := zone.NodeSubnetsFromNode(objs[n.Name], network)
		if err != nil {
			logger.Error(err, "node left out of multi-VTEP ports")
			continue
		}
		n.Subnets = subnets
		nodes = append(nodes, n)
		kept[n.Name] = true
	}
	var pods []multivtep.VTEPPod
	encaps := map[string]multivtep.PortEncap{}
	names := ovnk.NamesFor(network)
	for _, p := range allPods {
		if !kept[p.Node] {
			continue
		}
		pods = append(pods, p.VTEPPod)
		if n := nodes[slices.IndexFunc(nodes, func(n multivtep.VTEPNode) bool { return n.Name == p.Node })]; !n.Local {
			encaps[names.TransitSwitchPort(n.Name, slices.Index(n.EncapIPs, p.EncapIP))] = multivtep.PortEncap{Chassis: n.Chassis, EncapIP: p.EncapIP.String()}
		}
	}
	transit := r.Transit
	if len(transit) == 0 {
		transit = ovnk.DefaultClusterConfig().TransitSubnets
	}
	d, err := multivtep.MultiVTEPPortsDual(network, transit, nodes, pods)
	if err != nil {
		return false, err
	}
	if _, err := r.OVN.ApplyUnless(ctx, d, zone.UnlessGone(r.Client, r.guard(), zone.Layer3Name, network)); err != nil {
		return false, err
	}
	return r.setEncaps(ctx, network, encaps), nil
}

// collect removes the ports of networks that no NAD describes any more.
func (r *Reconciler) collect(ctx context.Context) error {
	if _, err := zone.CollectPieces(ctx, r.Client, r.guard(), r.OVN, r.OVN.PieceNetworks, r.layer2.Of(zone.Layer2Name),
		rows.Owner{Topology: base.TopologyLayer2, Piece: base.PieceMultiVTEP}); err != nil {
		return err
	}
	_, err := zone.CollectPieces(ctx, r.Client, r.guard(), r.OVN, r.OVN.PieceNetworks, r.layer3.Of(zone.Layer3Name),
		rows.Owner{Topology: base.TopologyLayer3, Piece: base.PieceMultiVTEP})
	return err
}

func (r *Reconciler) guard() *nadtrust.Guard { return r.trust.Of(r.Guard, r.Client) }
