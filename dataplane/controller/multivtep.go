package controller

import (
	"context"
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
	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/nadtrust"
)

// MultiVTEPReconciler programs OKEP-5535 from nodes with several encap IPs
// (k8s.ovn.org/node-encap-ips) and the encap_ip of pods in
// k8s.ovn.org/pod-networks. Primary Layer2 networks: pods on remote such
// nodes get a remote port on the network's layer2 switch, and its Southbound
// Port_Binding.encap points at the Encap row of the pod's encap_ip; a port
// appears with its pod and goes with it. Primary Layer3 networks: the
// on-demand transit switch ports and routes of topology.MultiVTEPPorts; a
// port appears with the first pod on its VTEP and goes with the last.
// Requests are NADs; Node and Pod changes requeue the NADs they concern.
type MultiVTEPReconciler struct {
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
	trust trusting

	// networks serialises the reconciles of one network (its NADs are
	// separate requests; each reads the network's nodes and pods).
	networks engine.KeyLocks
	sweeps   sweeps
}

// SetupWithManager registers the reconciler.
func (r *MultiVTEPReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return trustWatches(ctrl.NewControllerManagedBy(mgr).
		Named("dataplane-multi-vtep").
		WithOptions(controllerOptions(r.Workers, r.FIFOQueue)), r.Client, r.guard(), vtepName).
		Watches(&corev1.Node{}, r.nodeHandler(), vtepNodeFacts.predicate()).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return nadsIn(r.Client, o.GetNamespace())(ctx, o)
		}), podPortChanged()).
		Complete(r)
}

// nodeHandler maps a node event to the NADs it concerns: every NAD, but
// for an update that changes only k8s.ovn.org/node-subnets. That one the
// node reconciler makes on every node whenever a Layer3 network is created
// or deleted, and it concerns only that network, and only on multi-VTEP
// nodes (the others keep the Layer3 topology's ports): mapped to every NAD,
// each new network cost every network's reconcile once per node, which
// grew with the square of the networks.
func (r *MultiVTEPReconciler) nodeHandler() handler.EventHandler {
	all := handler.EnqueueRequestsFromMapFunc(nadsIn(r.Client, ""))
	others := vtepNodeFacts.without(ovnk.AnnotationNodeSubnets)
	return handler.Funcs{CreateFunc: all.Create, DeleteFunc: all.Delete, GenericFunc: all.Generic,
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			old, ok1 := e.ObjectOld.(*corev1.Node)
			cur, ok2 := e.ObjectNew.(*corev1.Node)
			if !ok1 || !ok2 || others.changed(old, cur) {
				all.Update(ctx, e, q)
				return
			}
			// Encap IPs are unchanged (others), so the node was and stays
			// what it is now.
			if n, err := VTEPNodeFromNode(cur); err == nil && !n.MultiVTEP() {
				return
			}
			networks, err := ovnk.NodeSubnetsChanged(old.Annotations[ovnk.AnnotationNodeSubnets], cur.Annotations[ovnk.AnnotationNodeSubnets])
			if err != nil {
				all.Update(ctx, e, q) // each reconcile reports the malformed annotation
				return
			}
			for _, network := range networks {
				var nads nadv1.NetworkAttachmentDefinitionList
				if err := r.Client.List(ctx, &nads, client.MatchingFields{NADNetworkField: network}, client.UnsafeDisableDeepCopy); err != nil {
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
// has one per namespace) and removes those of networks whose NADs are gone.
func (r *MultiVTEPReconciler) Reconcile(ctx context.Context, req reconcile.Request) (result reconcile.Result, _ error) {
	nad, owner, err := trustedNAD(ctx, r.Client, r.guard(), req)
	if err != nil {
		return reconcile.Result{}, err
	}
	network := ""
	if owner != nil {
		var retry bool
		if name, ok := layer2Name(nad); ok {
			network = name
			unlock := r.networks.Lock(name)
			retry, err = r.apply(ctx, name)
			unlock()
		} else if name, ok := layer3Name(nad); ok {
			network = name
			unlock := r.networks.Lock(name)
			retry, err = r.applyLayer3(ctx, name)
			unlock()
		}
		if err != nil {
			return reconcile.Result{}, err
		}
		if retry {
			result = reconcile.Result{RequeueAfter: orDefault(r.EncapRetry, 5*time.Second)}
		}
	}
	return result, r.sweeps.sweep(ctx, req.NamespacedName, network, deleted(nad), r.collect)
}

// setEncaps points the ports' Port_Bindings at their Encap rows; retry
// reports bindings (ovn-northd) or Encap rows (the remote chassis) not there yet.
func (r *MultiVTEPReconciler) setEncaps(ctx context.Context, network string, encaps map[string]topology.PortEncap) (retry bool) {
	if len(encaps) == 0 {
		return false
	}
	if _, err := r.OVN.SetPortEncaps(ctx, encaps); err != nil {
		log.FromContext(ctx).Info("Port_Binding encaps not set yet", "network", network, "reason", err.Error())
		return true
	}
	return false
}

func layer3Name(nad *nadv1.NetworkAttachmentDefinition) (string, bool) {
	name, _, ok, err := Layer3NetworkFromNAD(nad)
	return name, ok && err == nil
}

// vtepName is the network of a primary Layer2 or Layer3 NAD.
func vtepName(nad *nadv1.NetworkAttachmentDefinition) (string, bool) {
	if name, ok := layer2Name(nad); ok {
		return name, true
	}
	return layer3Name(nad)
}

// vtepState reads the nodes and the pods (with an encap_ip) of one network;
// nodes and pods with bad annotations are logged and left out, so one bad
// object does not hold back the others.
func (r *MultiVTEPReconciler) vtepState(ctx context.Context, network string) (
	nodes []topology.VTEPNode, objs map[string]*corev1.Node, pods []topology.Layer2PodPort, err error) {
	logger := log.FromContext(ctx).WithValues("network", network)
	// Read-only: the informer's own objects, not copies of every node and
	// pod for each network.
	var nodeList corev1.NodeList
	if err := r.Client.List(ctx, &nodeList, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, nil, err
	}
	byName := map[string]topology.VTEPNode{}
	objs = map[string]*corev1.Node{}
	for i := range nodeList.Items {
		n, err := VTEPNodeFromNode(&nodeList.Items[i])
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
	nads, err := trustedNamingNADs(ctx, r.Client, r.guard(), network)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, nad := range nads {
		var list corev1.PodList
		if err := r.Client.List(ctx, &list, client.InNamespace(nad.Namespace), client.UnsafeDisableDeepCopy); err != nil {
			return nil, nil, nil, err
		}
		for j := range list.Items {
			p, ok, err := Layer2PodPortFromPod(&list.Items[j], nad.Namespace+"/"+nad.Name)
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
func (r *MultiVTEPReconciler) apply(ctx context.Context, network string) (retry bool, err error) {
	nodes, _, pods, err := r.vtepState(ctx, network)
	if err != nil {
		return false, err
	}
	d, encaps, err := topology.Layer2MultiVTEPPorts(network, nodes, pods)
	if err != nil {
		return false, err
	}
	if _, err := r.OVN.Apply(ctx, d); err != nil {
		return false, err
	}
	return r.setEncaps(ctx, network, encaps), nil
}

// applyLayer3 programs one Layer3 network's on-demand transit switch ports
// and routes (topology.MultiVTEPPorts) for its multi-VTEP nodes, with each
// node's host subnet from k8s.ovn.org/node-subnets and one tunnel ID per
// encap IP from k8s.ovn.org/node-transit-switch-port-tunnel-ids, and points
// each remote port's Port_Binding.encap at its encap IP's Encap row.
func (r *MultiVTEPReconciler) applyLayer3(ctx context.Context, network string) (retry bool, err error) {
	logger := log.FromContext(ctx).WithValues("network", network)
	all, objs, allPods, err := r.vtepState(ctx, network)
	if err != nil {
		return false, err
	}
	var nodes []topology.VTEPNode
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
		subnets, err := NodeSubnetsFromNode(objs[n.Name], network)
		if err != nil {
			logger.Error(err, "node left out of multi-VTEP ports")
			continue
		}
		n.Subnets = subnets
		nodes = append(nodes, n)
		kept[n.Name] = true
	}
	var pods []topology.VTEPPod
	encaps := map[string]topology.PortEncap{}
	names := ovnk.NamesFor(network)
	for _, p := range allPods {
		if !kept[p.Node] {
			continue
		}
		pods = append(pods, p.VTEPPod)
		if n := nodes[slices.IndexFunc(nodes, func(n topology.VTEPNode) bool { return n.Name == p.Node })]; !n.Local {
			encaps[names.TransitSwitchPort(n.Name, slices.Index(n.EncapIPs, p.EncapIP))] = topology.PortEncap{Chassis: n.Chassis, EncapIP: p.EncapIP.String()}
		}
	}
	transit := r.Transit
	if len(transit) == 0 {
		transit = ovnk.DefaultClusterConfig().TransitSubnets
	}
	d, err := topology.MultiVTEPPortsDual(network, transit, nodes, pods)
	if err != nil {
		return false, err
	}
	if _, err := r.OVN.Apply(ctx, d); err != nil {
		return false, err
	}
	return r.setEncaps(ctx, network, encaps), nil
}

// NodeSubnetsFromNode reads a node's host subnets of one network from
// k8s.ovn.org/node-subnets (ovnk.DecodeNodeSubnets).
func NodeSubnetsFromNode(node *corev1.Node, network string) ([]netip.Prefix, error) {
	all, err := ovnk.DecodeNodeSubnets(node)
	if err != nil {
		return nil, err
	}
	return all[network], nil
}

// collect removes the ports of networks that no NAD describes any more.
func (r *MultiVTEPReconciler) collect(ctx context.Context) error {
	if err := collectPiece(ctx, r.Client, r.guard(), r.OVN, rows.Owner{Topology: topology.TopologyLayer2, Piece: topology.PieceMultiVTEP},
		r.OVN.PieceNetworks, layer2Name); err != nil {
		return err
	}
	return collectPiece(ctx, r.Client, r.guard(), r.OVN, rows.Owner{Topology: topology.TopologyLayer3, Piece: topology.PieceMultiVTEP},
		r.OVN.PieceNetworks, layer3Name)
}

// VTEPNodeFromNode reads a node's k8s.ovn.org/node-encap-ips,
// k8s.ovn.org/node-transit-switch-port-tunnel-ids and
// k8s.ovn.org/node-chassis-id (all optional).
func VTEPNodeFromNode(node *corev1.Node) (topology.VTEPNode, error) {
	n := topology.VTEPNode{Name: node.Name}
	var err error
	if n.Chassis, _, err = ovnk.DecodeNodeChassisID(node); err != nil {
		return n, err
	}
	if n.EncapIPs, err = ovnk.DecodeNodeEncapIPs(node); err != nil {
		return n, err
	}
	n.TunnelIDs, err = ovnk.DecodeNodeTunnelIDs(node)
	return n, err
}

// Layer2PodPortFromPod reads a scheduled, not finished pod's entry for the
// NAD key in k8s.ovn.org/pod-networks (ovnk's codec, with its checks); ok is
// false when it has no entry or no encap_ip.
func Layer2PodPortFromPod(pod *corev1.Pod, nadKey string) (topology.Layer2PodPort, bool, error) {
	p := topology.Layer2PodPort{NAD: nadKey, VTEPPod: topology.VTEPPod{Namespace: pod.Namespace, Name: pod.Name, Node: pod.Spec.NodeName}}
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return p, false, nil
	}
	pn, err := ovnk.DecodePodNetwork(pod.Annotations, nadKey)
	if err != nil {
		return p, false, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if pn == nil || pn.EncapIP == "" {
		return p, false, nil
	}
	a, err := pn.Parse()
	if err != nil {
		return p, false, fmt.Errorf("pod %s/%s annotation %s.%w", pod.Namespace, pod.Name, ovnk.PodNetworkField(nadKey), err)
	}
	p.EncapIP, p.IPs, p.MAC, p.TunnelID = a.EncapIP, a.IPs, a.MAC.String(), a.TunnelID
	return p, true, nil
}

func (r *MultiVTEPReconciler) guard() *nadtrust.Guard { return r.trust.of(r.Guard, r.Client) }
