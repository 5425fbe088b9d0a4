package zone

import (
	"slices"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/udnkit/udnkit/ovnk"
)

// What each controller reads of a node or pod: a Node or Pod update that
// changes none of it queues nothing. Without this, every node update (the
// manager rewrites k8s.ovn.org/node-subnets on every node for each new
// Layer3 network) queued every network of the cluster in each controller
// that watches nodes, and every pod status update its namespace's networks.
var (
	// Layer2NodeFromNode, and InZone (Local).
	Layer2NodeFacts = NodeFacts{annotations: []string{ovnk.AnnotationNodeID, ovnk.AnnotationNodeChassisID, ovnk.AnnotationLayer2TopologyVersion, ovnk.AnnotationZoneName,
		ovnk.AnnotationL3GatewayConfig}, addresses: true}
	// VTEPNodeFromNode, NodeSubnetsFromNode, and InZone (Local).
	VTEPNodeFacts = NodeFacts{annotations: []string{ovnk.AnnotationNodeChassisID, ovnk.AnnotationNodeEncapIPs, ovnk.AnnotationNodeTransitSwitchPortTunnelIDs,
		ovnk.AnnotationNodeSubnets, ovnk.AnnotationZoneName}}
)

// NADNetworkField indexes udnkit's NADs by their network's name (the
// config's "name": Layer2 or Layer3; NADNetwork), for the controllers that
// read all of a network's NADs. Setup registers it; a MultiVTEPReconciler
// built otherwise needs its Client to have it.
const NADNetworkField = "udnkit.network"

// NADNetwork is NADNetworkField's index function. A Primary Layer2 NAD is
// indexed only once it has its two tunnel keys (Layer2Name), which delays
// nothing: every reader programs rows that hang off the network's topology
// and waits for it (WaitForTopology), and the Layer2 topology cannot be
// built without those keys. Upstream is the same: its Layer2 network
// controller does not start without them (newClusterRouter and
// initializeLogicalSwitch refuse "requires exactly 2 tunnel keys",
// layer2_user_defined_network_controller.go and
// base_secondary_layer2_network_controller.go), so none of the network's
// pods, services or policies are programmed before. udnkit's NADs carry
// their keys from their first write (netconf.NewNAD), and the NAD update
// that adds them to another's re-indexes and queues it.
func NADNetwork(o client.Object) []string {
	nad, ok := o.(*nadv1.NetworkAttachmentDefinition)
	if !ok {
		return nil
	}
	if name, ok := Layer2Name(nad); ok {
		return []string{name}
	}
	if name, ok := Layer3Name(nad); ok {
		return []string{name}
	}
	return nil
}

// PodNodeField indexes pods by their node (spec.nodeName; PodNode), for
// the controllers that read the pods of the zone's nodes. Setup registers
// it; a reconciler built otherwise needs its Client to have it.
const PodNodeField = "udnkit.pod.node"

// PodNode is PodNodeField's index function: a scheduled pod's node.
func PodNode(o client.Object) []string {
	if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName != "" {
		return []string{p.Spec.NodeName}
	}
	return nil
}

// nodeFacts are the annotations (and, if addresses, status.addresses) a
// controller reads of a node.
type NodeFacts struct {
	annotations []string
	addresses   bool
}

// without returns the facts but the annotation k.
func (f NodeFacts) Without(k string) NodeFacts {
	f.annotations = slices.DeleteFunc(slices.Clone(f.annotations), func(a string) bool { return a == k })
	return f
}

// changed says whether an update from old to cur changes one of the facts.
func (f NodeFacts) Changed(old, cur *corev1.Node) bool {
	for _, k := range f.annotations {
		o, hadOld := old.Annotations[k]
		n, hasNew := cur.Annotations[k]
		if hadOld != hasNew || o != n {
			return true
		}
	}
	return f.addresses && !slices.Equal(old.Status.Addresses, cur.Status.Addresses)
}

// predicate passes every delete and generic event, a create after the
// initial list (createdLater), and an update only when it changes one of
// the facts.
func (f NodeFacts) Predicate() builder.WatchesOption { return builder.WithPredicates(f.Funcs()) }

func (f NodeFacts) Funcs() predicate.Funcs {
	return predicate.Funcs{CreateFunc: CreatedLater, UpdateFunc: func(e event.UpdateEvent) bool {
		old, ok1 := e.ObjectOld.(*corev1.Node)
		cur, ok2 := e.ObjectNew.(*corev1.Node)
		return !ok1 || !ok2 || f.Changed(old, cur)
	}}
}

// podPortChanged passes a Pod update only when it changes what
// Layer2PodPortFromPod reads: spec.nodeName, status.phase or
// k8s.ovn.org/pod-networks; and a create after the initial list.
func PodPortChanged() builder.WatchesOption { return builder.WithPredicates(podPortFuncs) }

var podPortFuncs = predicate.Funcs{CreateFunc: CreatedLater, UpdateFunc: func(e event.UpdateEvent) bool {
	old, ok1 := e.ObjectOld.(*corev1.Pod)
	cur, ok2 := e.ObjectNew.(*corev1.Pod)
	return !ok1 || !ok2 || podPortUpdate(old, cur)
}}

// createdLater drops the creates of a node or pod watch's initial list.
// Every controller here is For(NAD): the NADs' own initial list queues
// every NAD, and controller-runtime starts no worker before every watch's
// cache has synced, so those reconciles read every node and pod there is.
// Mapping each initial node or pod to all its NADs again only repeated
// that: at start each of 500 nodes listed and queued every NAD, in three
// controllers (a fifth of the dataplane's allocations at 1/8 scale).
func CreatedLater(e event.CreateEvent) bool { return !e.IsInInitialList }

func podPortUpdate(old, cur *corev1.Pod) bool {
	o, hadOld := old.Annotations[ovnk.AnnotationPodNetworks]
	n, hasNew := cur.Annotations[ovnk.AnnotationPodNetworks]
	return hadOld != hasNew || o != n || old.Spec.NodeName != cur.Spec.NodeName || old.Status.Phase != cur.Status.Phase
}
