package layer2

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/udnkit/udnkit/dataplane"
	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/internal/phase"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/nadtrust"
	"github.com/udnkit/udnkit/ovnk/netconf"
)

// Reconciler programs the transit-router topology of every primary
// Layer2 network. Requests are NetworkAttachmentDefinitions; Node changes
// requeue every udnkit NAD.
type Reconciler struct {
	Client client.Client
	OVN    *dataplane.Client
	// Local says whether a node belongs to this OVN zone; nil means every node
	// does (one zone, as `make run` has).
	Local func(*corev1.Node) bool
	// UpstreamRecheck is how often a network OVN-Kubernetes programs in this
	// zone is looked at again (0: DefaultUpstreamRecheck).
	UpstreamRecheck time.Duration
	// DrainPoll is how often a network waiting for a local node to drain is
	// retried (pods are not watched); 0 means 30 s.
	DrainPoll time.Duration
	// Wake, when set, hears of each network whose topology is applied.
	Wake *zone.TopologyWake
	// Cluster gives the UDN-enabled services (their ClusterIPs are routed
	// to the management port), the masquerade subnets (the management-port
	// SNAT's external IPs), the MTU and the IP families (every gateway
	// router has a join IP of each, as upstream's GetGWRouterIPs gives).
	Cluster ovnk.ClusterConfig
	// Services holds the UDN-enabled services and only them
	// (NewServiceCache); their changes requeue every network. nil: they are
	// read through Client and not watched.
	Services cache.Cache
	// Recorder, when set, raises a Warning Event on each object left out
	// (see skip).
	Recorder recorder.EventRecorder
	// Zone names this dataplane's OVN zone in what it reports ("": the
	// single zone).
	Zone string
	// AdoptLegacy is --adopt-legacy-layer2 (topology.Layer2Network).
	AdoptLegacy bool
	// GatewayMode and ExternalPortRange are --gateway-mode and
	// --external-port-range (topology.Layer2Network; "": shared and
	// ovnk.DefaultExternalPortRange).
	GatewayMode       ovnk.GatewayMode
	ExternalPortRange string
	// EgressIP is --enable-egress-ip (topology.Layer2Network.EgressIP):
	// off, the transit router gets none of EgressIP's policies.
	EgressIP bool
	// Workers is how many networks are reconciled at once (0: DefaultWorkers).
	Workers int
	// FIFOQueue is Options.FIFOQueue.
	FIFOQueue bool
	// Guard applies the NAD ownership rule (trust.go); nil: one reading
	// through Client, without Events.
	Guard *nadtrust.Guard
	trust zone.Trusting

	// Networks serialises the reconciles of one network: the NADs of a
	// CUDN (one per namespace) are separate requests that workers may take
	// at once, and each reads the network's nodes before it applies, so an
	// older read could otherwise be applied after a newer one. Only the
	// reconciler locks it (tests hold it to stall a network).
	Networks engine.KeyLocks
	sweeps   zone.Sweeps
	names    zone.Names // Layer2Name, between sweeps
}

// +kubebuilder:rbac:groups=k8s.cni.cncf.io,resources=network-attachment-definitions,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=k8s.ovn.org,resources=userdefinednetworks;clusteruserdefinednetworks,verbs=get;list;watch
// +kubebuilder:rbac:groups=k8s.ovn.org,resources=userdefinednetworks/status;clusteruserdefinednetworks/status,verbs=patch

// SetupWithManager registers the reconciler.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := zone.TrustWatches(ctrl.NewControllerManagedBy(mgr).
		Named("dataplane-layer2").
		WithOptions(zone.ControllerOptions(r.Workers, r.FIFOQueue)), r.Client, r.guard(), zone.Layer2Name).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(zone.NADsIn(r.Client, "")), zone.Layer2NodeFacts.Predicate())
	if r.Services != nil {
		b = b.WatchesRawSource(r.watchServices())
	}
	return b.Complete(r)
}

// scope carries one reconcile from phase to phase: the NAD's, and the
// network read from its source (ok: a primary Layer2 network to apply).
type scope struct {
	zone.NADScope
	net topology.Layer2Network
	ok  bool
}

// Reconcile applies one network's topology and removes the topology of
// networks whose NADs are gone, one phase after another.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return phase.Run(ctx, &scope{NADScope: zone.NADScope{Req: req}}, []phase.Func[*scope]{
		zone.ReadNADPhase[*scope](r.Client, r.guard()),
		zone.ReadSourcePhase[*scope](r.Client, r.guard(), zone.Layer2Name),
		r.readNetwork,
		r.applyTopology,
		r.sweep,
	})
}

// readNetwork reads the network from its source with the cluster's facts
// and its UDN-enabled services. A malformed NAD is skipped (reported); an
// API read that failed ends the reconcile, to be retried.
func (r *Reconciler) readNetwork(ctx context.Context, s *scope) (reconcile.Result, error) {
	if s.Owner == nil {
		return reconcile.Result{}, nil
	}
	net, ok, err := zone.Layer2NetworkFromNAD(s.Src)
	if err == nil && ok {
		err = r.clusterFacts(s.Src, &net)
	}
	if err != nil {
		// A malformed NAD is the NAD writer's bug; retrying will not fix it.
		zone.Skip(ctx, r.Recorder, s.Src, "NetworkAttachmentDefinition", zone.ReasonMalformedNetwork, err)
		return reconcile.Result{}, nil
	}
	if ok {
		if net.Services, err = r.enabledServices(ctx); err != nil {
			return s.Done(reconcile.Result{}, err)
		}
	}
	s.net, s.ok = net, ok
	return reconcile.Result{}, nil
}

// applyTopology applies the network (its reconciles taking turns) unless
// OVN-Kubernetes programs it in this zone, and reports which; a failure
// ends the reconcile. A zone waiting for a local node to drain is looked at
// again after DrainPoll (pods are not watched).
func (r *Reconciler) applyTopology(ctx context.Context, s *scope) (reconcile.Result, error) {
	if !s.ok {
		return reconcile.Result{}, nil
	}
	s.Network = s.net.Name
	unlock := r.Networks.Lock(s.net.Name)
	waiting, err := r.apply(ctx, s.net)
	unlock()
	if err == nil {
		r.Wake.Applied(s.net.Name)
	}
	up := zone.UpstreamRows{Client: r.Client, Zone: r.Zone, Recheck: zone.OrDefault(r.UpstreamRecheck, zone.DefaultUpstreamRecheck)}
	res, upstream, err := up.Handle(ctx, r.skip, s.Src, s.Owner, err)
	var result reconcile.Result
	switch {
	case err != nil:
		return s.Done(reconcile.Result{}, err)
	case upstream:
		result = res
	default:
		if err := up.Programmed(ctx, s.Owner); err != nil {
			return s.Done(reconcile.Result{}, err)
		}
	}
	if waiting {
		result.RequeueAfter = zone.OrDefault(r.DrainPoll, 30*time.Second)
	}
	return result, nil
}

func (r *Reconciler) sweep(ctx context.Context, s *scope) (reconcile.Result, error) {
	return s.Sweep(ctx, &r.sweeps, r.collect)
}

// clusterFacts adds the cluster's facts to a network read from its NAD,
// and the gateway's: the mode, the SNATs' port range, the cluster's
// masquerade subnets and the network's gateway-router masquerade IPs, one
// per join family.
func (r *Reconciler) clusterFacts(nad *nadv1.NetworkAttachmentDefinition, net *topology.Layer2Network) error {
	if err := zone.ClusterFacts(r.Cluster, nad, net); err != nil {
		return err
	}
	net.GatewayMode, net.ExternalPortRange, net.EgressIP = r.GatewayMode, r.ExternalPortRange, r.EgressIP
	ids, err := ovnk.DecodeNetworkIDs(nad.Annotations)
	if err != nil || !ids.HasID || ids.ID < 1 {
		return err
	}
	for _, v6 := range net.JoinFamilies() {
		masq, ok := ovnk.FamilyOf(r.Cluster.MasqueradeSubnets, v6)
		if !ok {
			continue
		}
		gr, _, err := ovnk.UDNMasqueradeIPs(masq, ids.ID)
		if err != nil {
			return fmt.Errorf("--%s %s: %w", ovnk.FlagMasqueradeSubnets, masq, err)
		}
		net.MasqueradeSubnets = append(net.MasqueradeSubnets, masq)
		net.GatewayMasqueradeIPs = append(net.GatewayMasqueradeIPs, gr)
	}
	return nil
}

// apply programs the network in this zone; waiting reports a local node that
// is not on 2.0 and still runs pods of a primary Layer2 network: the zone then
// stays on the old topology, untouched and unannounced, until it drains
// (OVN-Kubernetes moves a zone, all networks at once, when its node runs no
// such pod). The zones of drained nodes keep the OKEP-5094 upgrade rows while
// any node is on the old topology and drop them once all have moved.
func (r *Reconciler) apply(ctx context.Context, net topology.Layer2Network) (waiting bool, err error) {
	net.AdoptLegacy = r.AdoptLegacy
	// Read-only (announce copies the node it patches): the informer's own
	// objects, not a copy of every node for each network.
	var nodeList corev1.NodeList
	if err := r.Client.List(ctx, &nodeList, client.UnsafeDisableDeepCopy); err != nil {
		return false, err
	}
	// Oldest first: of two nodes with one ID, the younger is left out.
	slices.SortFunc(nodeList.Items, func(a, b corev1.Node) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
	})
	objs := map[string]*corev1.Node{}
	var all []topology.Layer2Node
	for i := range nodeList.Items {
		node := &nodeList.Items[i]
		n, ok, err := zone.Layer2NodeFromNode(node)
		if err != nil {
			zone.Skip(ctx, r.Recorder, node, "Node", zone.ReasonInvalidNodeID, err)
			continue
		}
		if !ok {
			continue // no node ID allocated yet: the node joins on its next update
		}
		// The old topology's keys are OVN-Kubernetes' cluster manager's
		// per-network allocation; without one (no OVN-Kubernetes cluster
		// manager, as in make run) the node ID, unique too.
		if key, ok, err := ovnk.DecodeLayer2GRLRPTunnelID(node, net.Name); err != nil {
			zone.Skip(ctx, r.Recorder, node, "Node", zone.ReasonInvalidTunnelID, err)
			continue
		} else if ok {
			n.LegacyTunnelKey = key
		}
		objs[n.Name] = node
		all = append(all, n)
	}
	usable, skipped := topology.Layer2UsableNodes(net, all)
	for _, s := range skipped {
		zone.Skip(ctx, r.Recorder, objs[s.Name], "Node", s.Reason, s.Err)
	}
	var nodes []topology.Layer2Node
	var switching []*corev1.Node  // drained local nodes still to announce
	var primaryL2 map[string]bool // read once, for the first local node not on 2.0
	for _, n := range usable {
		node := objs[n.Name]
		n.Local = r.Local == nil || r.Local(node)
		if n.Local {
			n.Gateway = r.nodeGateway(ctx, node)
		}
		if n.Local && n.TopologyVersion != ovnk.Layer2TopologyVersionTransitRouter {
			if primaryL2 == nil {
				if primaryL2, err = r.primaryLayer2Namespaces(ctx); err != nil {
					return false, err
				}
			}
			if n.RunningPods, err = r.runningPods(ctx, primaryL2, node.Name); err != nil {
				return false, err
			}
			if !topology.Layer2NodeCanSwitch(n) {
				// The zone still runs OVN-Kubernetes' old topology for this
				// node (its GR holds the gateway port on the switch): leave
				// the zone's rows as they are until the node has drained.
				return true, nil
			}
			switching = append(switching, node)
			n.TopologyVersion = ovnk.Layer2TopologyVersionTransitRouter
		}
		nodes = append(nodes, n)
	}
	for _, node := range switching {
		if err := r.announce(ctx, node); err != nil {
			return false, err
		}
	}
	d, err := topology.Layer2Topology(net, nodes)
	if err != nil {
		return false, err
	}
	_, err = r.OVN.ApplyUnless(ctx, d, zone.UnlessGone(r.Client, r.guard(), zone.Layer2Name, net.Name))
	return waiting, err
}

// nodeGateway is zone.NodeGateway with the reconciler's recorder.
func (r *Reconciler) nodeGateway(ctx context.Context, node *corev1.Node) *ovnk.L3GatewayConfig {
	return zone.NodeGateway(ctx, r.Recorder, node)
}

// skip is skip with the reconciler's recorder.
func (r *Reconciler) skip(ctx context.Context, obj client.Object, kind, reason string, err error) {
	zone.Skip(ctx, r.Recorder, obj, kind, reason, err)
}

// announce marks a node as running the transit-router topology.
func (r *Reconciler) announce(ctx context.Context, cached *corev1.Node) error {
	patch := client.MergeFrom(cached)
	node := cached.DeepCopy()
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[ovnk.AnnotationLayer2TopologyVersion] = ovnk.Layer2TopologyVersionTransitRouter
	return r.Client.Patch(ctx, node, patch)
}

// primaryLayer2Namespaces are the namespaces of every primary Layer2
// network's NADs (a CUDN has one per namespace): the pods OKEP-5094 counts
// before a node moves.
func (r *Reconciler) primaryLayer2Namespaces(ctx context.Context) (map[string]bool, error) {
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := r.Client.List(ctx, &nads, client.HasLabels{ovnk.LabelUserDefinedNetwork}); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for i := range nads.Items {
		conf, err := netconf.Parse(nads.Items[i].Spec.Config)
		if err != nil || conf.Topology != "layer2" || conf.Role != "primary" {
			continue
		}
		if _, ok, err := r.guard().Trusted(ctx, &nads.Items[i]); err != nil {
			return nil, err
		} else if ok {
			out[nads.Items[i].Namespace] = true
		}
	}
	return out, nil
}

// runningPods counts the node's running pods of any primary Layer2 network
// (in namespaces): OKEP-5094 moves a node, all its networks at once, only
// when it runs none, as OVN-Kubernetes checks every primary Layer2 switch.
func (r *Reconciler) runningPods(ctx context.Context, namespaces map[string]bool, node string) (int, error) {
	n := 0
	for ns := range namespaces {
		var pods corev1.PodList
		if err := r.Client.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			return 0, err
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == node && p.Status.Phase == corev1.PodRunning {
				n++
			}
		}
	}
	return n, nil
}

// collect removes the topology of networks that no NAD describes any more.
func (r *Reconciler) collect(ctx context.Context) error {
	_, err := zone.CollectPieces(ctx, r.Client, r.guard(), r.OVN, r.OVN.Networks, r.names.Of(zone.Layer2Name),
		rows.Owner{Topology: base.TopologyLayer2, Piece: base.PieceTransitRouter, AdoptLegacy: r.AdoptLegacy,
			Legacy: topology.Layer2Legacy(topology.Layer2Network{})})
	return err
}

func (r *Reconciler) guard() *nadtrust.Guard { return r.trust.Of(r.Guard, r.Client) }
