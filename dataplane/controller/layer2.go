// Package controller drives the dataplane from the API state: it reads each
// primary Layer2 network's NetworkAttachmentDefinition (its OVN-Kubernetes
// network config and the network ID and tunnel keys the reconcilers allocate)
// and the Nodes (node IDs, topology version), and applies the OKEP-5094
// topology to OVN.
package controller

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/udnkit/udnkit/dataplane"
	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/internal/fairqueue"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/nadtrust"
)

// Layer2Reconciler programs the transit-router topology of every primary
// Layer2 network. Requests are NetworkAttachmentDefinitions; Node changes
// requeue every udnkit NAD.
type Layer2Reconciler struct {
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
	// Workers is how many networks are reconciled at once (0: DefaultWorkers).
	Workers int
	// FIFOQueue is Options.FIFOQueue.
	FIFOQueue bool
	// Guard applies the NAD ownership rule (trust.go); nil: one reading
	// through Client, without Events.
	Guard *nadtrust.Guard
	trust trusting

	// networks serialises the reconciles of one network: the NADs of a
	// CUDN (one per namespace) are separate requests that workers may take
	// at once, and each reads the network's nodes before it applies, so an
	// older read could otherwise be applied after a newer one.
	networks engine.KeyLocks
	sweeps   sweeps
}

// +kubebuilder:rbac:groups=k8s.cni.cncf.io,resources=network-attachment-definitions,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=k8s.ovn.org,resources=userdefinednetworks;clusteruserdefinednetworks,verbs=get;list;watch
// +kubebuilder:rbac:groups=k8s.ovn.org,resources=userdefinednetworks/status;clusteruserdefinednetworks/status,verbs=patch

// SetupWithManager registers the reconciler.
func (r *Layer2Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := trustWatches(ctrl.NewControllerManagedBy(mgr).
		Named("dataplane-layer2").
		WithOptions(controllerOptions(r.Workers, r.FIFOQueue)), r.Client, r.guard(), layer2Name).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(nadsIn(r.Client, "")), layer2NodeFacts.predicate())
	if r.Services != nil {
		b = b.WatchesRawSource(r.watchServices())
	}
	return b.Complete(r)
}

// nadsIn maps an event to udnkit's NADs in namespace ("" for all).
func nadsIn(c client.Client, namespace string) handler.MapFunc {
	return func(ctx context.Context, _ client.Object) []reconcile.Request {
		var nads nadv1.NetworkAttachmentDefinitionList
		if err := c.List(ctx, &nads, client.InNamespace(namespace), client.HasLabels{ovnk.LabelUserDefinedNetwork}, client.UnsafeDisableDeepCopy); err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(nads.Items))
		for _, n := range nads.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&n)})
		}
		return out
	}
}

// Reconcile applies one network's topology and removes the topology of
// networks whose NADs are gone.
func (r *Layer2Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nad, owner, err := trustedNAD(ctx, r.Client, r.guard(), req)
	if err != nil {
		return reconcile.Result{}, err
	}
	var result reconcile.Result
	network := ""
	if owner != nil {
		src, err := networkSource(ctx, r.Client, r.guard(), owner.Network, layer2Name)
		if err != nil {
			return reconcile.Result{}, err
		}
		if src == nil {
			src = nad // not a network (yet), or malformed: reported below
		}
		net, ok, err := Layer2NetworkFromNAD(src)
		if err == nil && ok {
			err = r.clusterFacts(src, &net)
		}
		if err == nil && ok {
			// An API read that failed: retried, unlike a malformed NAD.
			if net.Services, err = r.enabledServices(ctx); err != nil {
				return reconcile.Result{}, err
			}
		}
		switch {
		case err != nil:
			// A malformed NAD is the NAD writer's bug; retrying will not fix it.
			skip(ctx, r.Recorder, src, "NetworkAttachmentDefinition", ReasonMalformedNetwork, err)
		case ok:
			network = net.Name
			unlock := r.networks.Lock(net.Name)
			waiting, err := r.apply(ctx, net)
			unlock()
			up := upstreamRows{client: r.Client, zone: r.Zone, recheck: orDefault(r.UpstreamRecheck, DefaultUpstreamRecheck)}
			res, upstream, err := up.handle(ctx, r.skip, src, owner, err)
			switch {
			case err != nil:
				return reconcile.Result{}, err
			case upstream:
				result = res
			default:
				if err := up.programmed(ctx, owner); err != nil {
					return reconcile.Result{}, err
				}
			}
			if waiting {
				// Pods are not watched: look again for the node to drain.
				result.RequeueAfter = orDefault(r.DrainPoll, 30*time.Second)
			}
		}
	}
	return result, r.sweeps.sweep(ctx, req.NamespacedName, network, deleted(nad), r.collect)
}

// clusterFacts adds the cluster's facts to a network read from its NAD.
func (r *Layer2Reconciler) clusterFacts(nad *nadv1.NetworkAttachmentDefinition, net *topology.Layer2Network) error {
	return ClusterFacts(r.Cluster, nad, net)
}

// ClusterFacts adds to net (read from nad by Layer2NetworkFromNAD) what
// comes from the cluster configuration and the NAD's network ID: the MTU,
// the cluster's IP families with a join subnet for each, and the management
// port's masquerade IPs, one per join family (as upstream's
// GetUDNMgmtPortMasqueradeIPs gives one per cluster family). The dataplane
// and udnctl plan both call it, so a plan shows the rows the dataplane writes.
func ClusterFacts(cluster ovnk.ClusterConfig, nad *nadv1.NetworkAttachmentDefinition, net *topology.Layer2Network) error {
	ids, err := ovnk.DecodeNetworkIDs(nad.Annotations)
	if err != nil {
		return fmt.Errorf("NAD %s/%s: %w", nad.Namespace, nad.Name, err)
	}
	net.GatewayMTU = int(cluster.MTU)
	net.ClusterIPv4, net.ClusterIPv6 = cluster.IPModes()
	addDefaultJoinSubnets(net)
	for _, v6 := range net.JoinFamilies() {
		if masq, ok := ovnk.FamilyOf(cluster.MasqueradeSubnets, v6); ok && ids.HasID && ids.ID > 0 {
			_, mgmt, err := ovnk.UDNMasqueradeIPs(masq, ids.ID)
			if err != nil {
				return fmt.Errorf("--%s %s: %w", ovnk.FlagMasqueradeSubnets, masq, err)
			}
			net.MasqueradeIPs = append(net.MasqueradeIPs, mgmt)
			if net.MasqueradeBits == nil {
				net.MasqueradeBits = map[int]int{}
			}
			net.MasqueradeBits[ipFamily(mgmt)] = masq.Bits()
		}
	}
	return nil
}

// apply programs the network in this zone; waiting reports a local node that
// is not on 2.0 and still runs pods of a primary Layer2 network: the zone then
// stays on the old topology, untouched and unannounced, until it drains
// (OVN-Kubernetes moves a zone, all networks at once, when its node runs no
// such pod). The zones of drained nodes keep the OKEP-5094 upgrade rows while
// any node is on the old topology and drop them once all have moved.
func (r *Layer2Reconciler) apply(ctx context.Context, net topology.Layer2Network) (waiting bool, err error) {
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
		n, ok, err := Layer2NodeFromNode(node)
		if err != nil {
			skip(ctx, r.Recorder, node, "Node", ReasonInvalidNodeID, err)
			continue
		}
		if !ok {
			continue // no node ID allocated yet: the node joins on its next update
		}
		// The old topology's keys are OVN-Kubernetes' cluster manager's
		// per-network allocation; without one (no OVN-Kubernetes cluster
		// manager, as in make run) the node ID, unique too.
		if key, ok, err := ovnk.DecodeLayer2GRLRPTunnelID(node, net.Name); err != nil {
			skip(ctx, r.Recorder, node, "Node", ReasonInvalidTunnelID, err)
			continue
		} else if ok {
			n.LegacyTunnelKey = key
		}
		objs[n.Name] = node
		all = append(all, n)
	}
	usable, skipped := topology.Layer2UsableNodes(net, all)
	for _, s := range skipped {
		skip(ctx, r.Recorder, objs[s.Name], "Node", s.Reason, s.Err)
	}
	var nodes []topology.Layer2Node
	var switching []*corev1.Node  // drained local nodes still to announce
	var primaryL2 map[string]bool // read once, for the first local node not on 2.0
	for _, n := range usable {
		node := objs[n.Name]
		n.Local = r.Local == nil || r.Local(node)
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
	_, err = r.OVN.Apply(ctx, d)
	return waiting, err
}

// skip is skip with the reconciler's recorder.
func (r *Layer2Reconciler) skip(ctx context.Context, obj client.Object, kind, reason string, err error) {
	skip(ctx, r.Recorder, obj, kind, reason, err)
}

// announce marks a node as running the transit-router topology.
func (r *Layer2Reconciler) announce(ctx context.Context, cached *corev1.Node) error {
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
func (r *Layer2Reconciler) primaryLayer2Namespaces(ctx context.Context) (map[string]bool, error) {
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := r.Client.List(ctx, &nads, client.HasLabels{ovnk.LabelUserDefinedNetwork}); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for i := range nads.Items {
		conf, err := ovnk.Parse(nads.Items[i].Spec.Config)
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
func (r *Layer2Reconciler) runningPods(ctx context.Context, namespaces map[string]bool, node string) (int, error) {
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
func (r *Layer2Reconciler) collect(ctx context.Context) error {
	return collectPiece(ctx, r.Client, r.guard(), r.OVN, rows.Owner{Topology: topology.TopologyLayer2, Piece: topology.PieceTransitRouter, AdoptLegacy: r.AdoptLegacy,
		Legacy: topology.Layer2Legacy(nil, nil)},
		r.OVN.Networks, layer2Name)
}

func layer2Name(nad *nadv1.NetworkAttachmentDefinition) (string, bool) {
	net, ok, err := Layer2NetworkFromNAD(nad)
	return net.Name, ok && err == nil
}

// Layer2NetworkFromNAD reads a primary Layer2 network from its NAD: the
// OVN-Kubernetes config in spec.config and the k8s.ovn.org/tunnel-keys
// annotation ([switch key, transit router key]). ok is false for other
// networks and for networks whose tunnel keys are not allocated yet.
func Layer2NetworkFromNAD(nad *nadv1.NetworkAttachmentDefinition) (net topology.Layer2Network, ok bool, err error) {
	conf, err := ovnk.Parse(nad.Spec.Config)
	if err != nil {
		return net, false, fmt.Errorf("NAD %s/%s spec.config: %w", nad.Namespace, nad.Name, err)
	}
	if conf.Topology != "layer2" || conf.Role != "primary" {
		return net, false, nil
	}
	keysText, found := nad.Annotations[ovnk.AnnotationTunnelKeys]
	if !found {
		return net, false, nil
	}
	// ovnk's codec refuses keys outside the interconnect range: nothing out
	// of range reaches OVN.
	ids, err := ovnk.DecodeNetworkIDs(nad.Annotations)
	if err != nil {
		return net, false, fmt.Errorf("NAD %s/%s: %w", nad.Namespace, nad.Name, err)
	}
	keys := ids.TunnelKeys
	if len(keys) < 2 {
		return net, false, fmt.Errorf("NAD %s/%s annotation %s: %q must be a JSON list of the switch and transit router tunnel keys",
			nad.Namespace, nad.Name, ovnk.AnnotationTunnelKeys, keysText)
	}
	bad := func(name string, err error) error {
		return fmt.Errorf("NAD %s/%s spec.config %s: %w", nad.Namespace, nad.Name, name, err)
	}
	net = topology.Layer2Network{Name: conf.Name, SwitchTunnelKey: keys[0], TransitRouterTunnelKey: keys[1], MTU: int(conf.MTU)}
	if net.Subnets, err = ovnk.ParsePrefixes(conf.Subnets); err != nil {
		return net, false, bad("subnets", err)
	}
	if net.JoinSubnets, err = ovnk.ParsePrefixes(conf.JoinSubnet); err != nil {
		return net, false, bad("joinSubnet", err)
	}
	addDefaultJoinSubnets(&net)
	if net.TransitSubnets, err = ovnk.ParsePrefixes(conf.TransitSubnet); err != nil {
		return net, false, bad("transitSubnet", err)
	}
	if net.DefaultGatewayIPs, err = ovnk.ParseAddrs(conf.DefaultGatewayIPs); err != nil {
		return net, false, bad("defaultGatewayIPs", err)
	}
	if net.InfrastructureSubnets, err = ovnk.ParsePrefixes(conf.InfrastructureSubnets); err != nil {
		return net, false, bad("infrastructureSubnets", err)
	}
	return net, true, nil
}

// addDefaultJoinSubnets gives each join family without a join subnet
// upstream's default one, as its parseJoinSubnet fills the family a spec
// leaves out (a spec may give joinSubnets for one family only; found by
// FuzzAdmittedSpecToRows).
func addDefaultJoinSubnets(net *topology.Layer2Network) {
	for _, v6 := range net.JoinFamilies() {
		if _, ok := ovnk.FamilyOf(net.JoinSubnets, v6); ok {
			continue
		}
		join := ovnk.DefaultUDNJoinSubnetV4
		if v6 {
			join = ovnk.DefaultUDNJoinSubnetV6
		}
		net.JoinSubnets = append(net.JoinSubnets, join)
	}
}

// Layer2NodeFromNode reads a node's k8s.ovn.org/node-id,
// k8s.ovn.org/node-chassis-id and k8s.ovn.org/layer2-topology-version; ok is
// false until the node has an ID.
func Layer2NodeFromNode(node *corev1.Node) (topology.Layer2Node, bool, error) {
	id, ok, err := ovnk.DecodeNodeID(node)
	if err != nil || !ok {
		return topology.Layer2Node{}, false, err
	}
	var ips []netip.Addr
	for _, a := range node.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil {
			ips = append(ips, ip.Unmap())
		}
	}
	// A node without its chassis yet is kept with none: Layer2UsableNodes
	// reports it and leaves it out until ovnkube-node publishes it.
	chassis, _, err := ovnk.DecodeNodeChassisID(node)
	if err != nil {
		return topology.Layer2Node{}, false, err
	}
	return topology.Layer2Node{
		Name: node.Name, ID: id, NodeIPs: ips, Chassis: chassis,
		TopologyVersion: node.Annotations[ovnk.AnnotationLayer2TopologyVersion],
		NoGatewayMTU:    !ovnk.GatewayMTUSupported(node),
		LegacyTunnelKey: id,
	}, true, nil
}

// liveNAD gets a request's NAD; live is false when it is gone, being deleted
// or not udnkit's.
func liveNAD(ctx context.Context, c client.Client, req reconcile.Request) (nad *nadv1.NetworkAttachmentDefinition, live bool, err error) {
	nad = &nadv1.NetworkAttachmentDefinition{}
	if err := c.Get(ctx, req.NamespacedName, nad); err != nil {
		return nil, false, client.IgnoreNotFound(err)
	}
	_, labeled := nad.Labels[ovnk.LabelUserDefinedNetwork]
	return nad, labeled && nad.DeletionTimestamp.IsZero(), nil
}

// deleted says whether a NAD liveNAD read is gone or being deleted.
func deleted(nad *nadv1.NetworkAttachmentDefinition) bool {
	return nad == nil || !nad.DeletionTimestamp.IsZero()
}

// liveNetworks names the networks that udnkit's NADs (not being deleted)
// describe, as network reads them, and that pass the ownership rule.
func liveNetworks(ctx context.Context, c client.Client, g *nadtrust.Guard, network func(*nadv1.NetworkAttachmentDefinition) (string, bool)) (map[string]bool, error) {
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := c.List(ctx, &nads, client.HasLabels{ovnk.LabelUserDefinedNetwork}); err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for i := range nads.Items {
		name, ok := network(&nads.Items[i])
		if !ok || live[name] || !nads.Items[i].DeletionTimestamp.IsZero() {
			continue
		}
		owner, trusted, err := g.Trusted(ctx, &nads.Items[i])
		if err != nil {
			return nil, err
		}
		if trusted && owner.Network == name {
			live[name] = true
		}
	}
	return live, nil
}

// orDefault is d, or def when d is 0.
func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// DefaultWorkers is how many networks each dataplane controller reconciles
// at once: a large network's reconcile (a long Apply) never queues a small
// one's behind it.
const DefaultWorkers = 4

func workers(n int) int {
	if n <= 0 {
		return DefaultWorkers
	}
	return n
}

// controllerOptions are a dataplane controller's: n workers and, unless
// fifo, a queue that serves the NADs' namespaces in turn.
func controllerOptions(n int, fifo bool) controller.Options {
	o := controller.Options{MaxConcurrentReconciles: workers(n)}
	if !fifo {
		o.NewQueue = fairqueue.ByNamespace
	}
	return o
}

func (r *Layer2Reconciler) guard() *nadtrust.Guard { return r.trust.of(r.Guard, r.Client) }

// ipFamily is 4 or 6.
func ipFamily(a netip.Addr) int {
	if a.Is4() {
		return 4
	}
	return 6
}
