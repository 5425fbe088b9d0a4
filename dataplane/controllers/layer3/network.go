package layer3

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"slices"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/netconf"
)

// readNetwork reads the network's topology facts from its NAD, the
// cluster's configuration and its UDN-enabled services. A network without
// its network ID yet waits for it (the NAD's update queues it again); a
// malformed one is reported and skipped.
func (r *Reconciler) readNetwork(ctx context.Context, s *scope) (reconcile.Result, error) {
	if s.name == "" || !r.Topology {
		return reconcile.Result{}, nil // not a valid primary Layer3 network, or only its policies are udnkit's
	}
	net, ok, err := r.Network(s.Src)
	if err != nil {
		zone.Skip(ctx, r.Recorder, s.Src, "NetworkAttachmentDefinition", zone.ReasonMalformedNetwork, err)
		return reconcile.Result{}, nil
	}
	if !ok {
		return reconcile.Result{}, nil
	}
	reader := client.Reader(r.Client)
	if r.Services != nil {
		reader = r.Services
	}
	if net.Services, err = zone.EnabledServices(ctx, reader, r.Cluster.UDNAllowedDefaultServices); err != nil {
		return s.Done(reconcile.Result{}, err)
	}
	s.net, s.topo = net, true
	return reconcile.Result{}, nil
}

// Network is the Layer3 network of a primary Layer3 NAD with its network
// ID: its cluster subnets, its join subnets (the cluster's UDN join
// subnets for a family the NAD sets none of), the transit switch's key,
// its masquerade IPs and the cluster's facts (the Reconciler's Cluster,
// EgressIP, GatewayMode and ExternalPortRange; `udnctl plan` reads its
// networks with it too). ok is false without a network ID.
func (r *Reconciler) Network(nad *nadv1.NetworkAttachmentDefinition) (topology.Layer3Network, bool, error) {
	name, subnets, ok, err := zone.Layer3NetworkFromNAD(nad)
	if err != nil || !ok {
		return topology.Layer3Network{}, false, err
	}
	ids, err := ovnk.DecodeNetworkIDs(nad.Annotations)
	if err != nil {
		return topology.Layer3Network{}, false, fmt.Errorf("NAD %s/%s: %w", nad.Namespace, nad.Name, err)
	}
	if !ids.HasID || ids.ID < 1 {
		return topology.Layer3Network{}, false, nil
	}
	conf, err := netconf.Parse(nad.Spec.Config)
	if err != nil {
		return topology.Layer3Network{}, false, err
	}
	net := topology.Layer3Network{Name: name, Subnets: subnets, GatewayMTU: int(r.Cluster.MTU), EgressIP: r.EgressIP,
		TransitSubnets: r.Cluster.TransitSubnets, GatewayMode: r.GatewayMode, ExternalPortRange: r.ExternalPortRange}
	net.ClusterIPv4, net.ClusterIPv6 = r.Cluster.IPModes()
	if net.JoinSubnets, err = ovnk.ParsePrefixes(conf.JoinSubnet); err != nil {
		return net, false, fmt.Errorf("NAD %s/%s spec.config joinSubnet: %w", nad.Namespace, nad.Name, err)
	}
	for _, def := range r.Cluster.UDNJoinSubnets {
		if _, has := ovnk.FamilyOf(net.JoinSubnets, def.Addr().Is6()); !has {
			net.JoinSubnets = append(net.JoinSubnets, def)
		}
	}
	if len(net.TransitSubnets) == 0 {
		net.TransitSubnets = []netip.Prefix{ovnk.DefaultTransitSubnetV4, ovnk.DefaultTransitSubnetV6}
	}
	if net.TransitSwitchTunnelKey, err = ovnk.LegacyTransitSwitchKey(ids.ID); err != nil {
		return net, false, fmt.Errorf("NAD %s/%s: %w", nad.Namespace, nad.Name, err)
	}
	for _, masq := range r.Cluster.MasqueradeSubnets {
		gr, mgmt, err := ovnk.UDNMasqueradeIPs(masq, ids.ID)
		if err != nil {
			return net, false, fmt.Errorf("--%s %s: %w", ovnk.FlagMasqueradeSubnets, masq, err)
		}
		net.MasqueradeSubnets = append(net.MasqueradeSubnets, masq)
		net.GatewayMasqueradeIPs = append(net.GatewayMasqueradeIPs, gr)
		net.ManagementMasqueradeIPs = append(net.ManagementMasqueradeIPs, mgmt)
	}
	return net, true, nil
}

// apply programs the network in this zone from the nodes' annotations; a
// node that cannot be programmed yet is reported and left out.
func (r *Reconciler) apply(ctx context.Context, net topology.Layer3Network) error {
	var list corev1.NodeList
	if err := r.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	// Oldest first: of two nodes with one ID, the younger is left out.
	slices.SortFunc(list.Items, func(a, b corev1.Node) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
	})
	objs := map[string]*corev1.Node{}
	var all []topology.Layer3Node
	for i := range list.Items {
		node := &list.Items[i]
		n, ok, err := r.Node(node, net.Name)
		if err != nil {
			zone.Skip(ctx, r.Recorder, node, "Node", ReasonInvalidNodeAnnotation, err)
			continue
		}
		if ok {
			if n.Local {
				// Without a usable l3-gateway-config upstream syncs no
				// gateway for the node (nodeGatewayConfig fails).
				n.Gateway = zone.NodeGateway(ctx, r.Recorder, node)
				n.NoGateway = n.Gateway == nil
			}
			objs[n.Name] = node
			all = append(all, n)
		}
	}
	r.subnets.Retain(list.Items)
	usable, skipped := topology.Layer3UsableNodes(net, all)
	for _, s := range skipped {
		zone.Skip(ctx, r.Recorder, objs[s.Name], "Node", s.Reason, s.Err)
	}
	d, err := topology.Layer3Topology(net, usable)
	if err != nil {
		return err
	}
	if _, err = r.OVN.ApplyUnless(ctx, d, zone.UnlessGone(r.Client, r.guard(), zone.Layer3Name, net.Name)); err == nil {
		r.Wake.Applied(net.Name)
	}
	return err
}

// ReasonInvalidNodeAnnotation: one of the node annotations the Layer3
// topology reads (node ID, chassis, host subnets, transit switch port
// addresses, encap IPs) is malformed; the node is left out until it is fixed.
const ReasonInvalidNodeAnnotation = "InvalidNodeAnnotation"

// Node reads what the Layer3 topology needs of a node (Local by the
// Reconciler's Local): ok is false while it has no node ID (it joins on its
// next update); a malformed annotation is an error.
func (r *Reconciler) Node(node *corev1.Node, network string) (topology.Layer3Node, bool, error) {
	id, ok, err := ovnk.DecodeNodeID(node)
	if err != nil || !ok {
		return topology.Layer3Node{}, false, err
	}
	n := topology.Layer3Node{Name: node.Name, ID: id, Local: r.Local == nil || r.Local(node), NoGatewayMTU: !ovnk.GatewayMTUSupported(node)}
	if n.Chassis, _, err = ovnk.DecodeNodeChassisID(node); err != nil {
		return n, false, err
	}
	if n.HostSubnets, err = r.subnets.Of(node, network); err != nil {
		return n, false, err
	}
	if n.TransitIPs, _, err = ovnk.DecodeNodeTransitSwitchPortAddrs(node.Annotations); err != nil {
		return n, false, fmt.Errorf("node %s: %w", node.Name, err)
	}
	encaps, err := ovnk.DecodeNodeEncapIPs(node)
	if err != nil {
		return n, false, err
	}
	n.MultiVTEP = len(encaps) > 1
	return n, true, nil
}

// nodeAnnotations are what the Layer3 topology reads of a node: an update
// that changes none of them queues nothing.
var nodeAnnotations = []string{ovnk.AnnotationNodeID, ovnk.AnnotationNodeChassisID, ovnk.AnnotationNodeSubnets,
	ovnk.AnnotationNodeTransitSwitchPortIfAddr, ovnk.AnnotationNodeEncapIPs, ovnk.AnnotationGatewayMTUSupport, ovnk.AnnotationZoneName,
	ovnk.AnnotationL3GatewayConfig}

// nodeFactsChanged passes deletes, creates after the initial list and
// updates that change what node reads or which zone the node is in.
func nodeFactsChanged() predicate.Funcs {
	return predicate.Funcs{CreateFunc: zone.CreatedLater, UpdateFunc: func(e event.UpdateEvent) bool {
		old, ok1 := e.ObjectOld.(*corev1.Node)
		cur, ok2 := e.ObjectNew.(*corev1.Node)
		if !ok1 || !ok2 {
			return true
		}
		for _, k := range nodeAnnotations {
			o, hadOld := old.Annotations[k]
			n, hasNew := cur.Annotations[k]
			if hadOld != hasNew || o != n {
				return true
			}
		}
		return false
	}}
}
