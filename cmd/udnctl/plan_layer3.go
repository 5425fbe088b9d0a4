package main

import (
	"fmt"
	"net/netip"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udnkit/udnkit/dataplane/controllers/layer3"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers/idalloc"
)

// layer3Plan is what `udnctl plan` prints for a Primary Layer3 network: its
// subnet policies (EgressIP's 102 policies; none without EgressIP, as
// upstream) and its whole topology in a zone holding every node, read as the
// Layer3 reconciler reads them. Each node gets its host subnets as udnkit's
// node reconciler allocates them on a fresh cluster (node by node, in
// order) and its transit switch port addresses from its node ID; the nodes
// carry no l3-gateway-config, so the gateway routers have only their join side.
func layer3Plan(n network, r *layer3.Reconciler, nodes []*corev1.Node, networkID int, services []topology.UDNEnabledService) ([]*rows.Desired, error) {
	nads, err := n.nads(r.Cluster)
	if err != nil {
		return nil, err
	}
	nad := nads[0]
	nad.Annotations = map[string]string{ovnk.AnnotationNetworkID: strconv.Itoa(networkID)}
	net, ok, err := r.Network(nad)
	if err != nil || !ok {
		return nil, fmt.Errorf("network %s: %v", n.name, err)
	}
	net.Services = services
	var cluster []idalloc.ClusterSubnet
	for _, s := range n.spec.Layer3.Subnets {
		p, err := netip.ParsePrefix(string(s.CIDR))
		if err != nil {
			return nil, err
		}
		bits := int(s.HostSubnet)
		if bits == 0 {
			bits = idalloc.DefaultHostBits(p)
		}
		cluster = append(cluster, idalloc.ClusterSubnet{CIDR: p.Masked(), HostBits: bits})
	}
	alloc, err := idalloc.NewHostSubnetAllocator(cluster)
	if err != nil {
		return nil, err
	}
	var all []topology.Layer3Node
	for _, node := range nodes {
		hosts, err := alloc.Allocate(node.Name)
		if err != nil {
			return nil, fmt.Errorf("host subnets of node %s: %w", node.Name, err)
		}
		withSubnets := node.DeepCopy()
		withSubnets.Annotations[ovnk.AnnotationNodeSubnets] = ovnk.EncodeNodeSubnets(map[string][]netip.Prefix{net.Name: hosts})
		l3, ok, err := r.Node(withSubnets, net.Name)
		if err != nil || !ok {
			return nil, fmt.Errorf("node %s: %v", node.Name, err)
		}
		all = append(all, l3)
	}
	usable, skipped := topology.Layer3UsableNodes(net, all)
	if len(skipped) > 0 {
		return nil, fmt.Errorf("node %s: %w", skipped[0].Name, skipped[0].Err)
	}
	d, err := topology.Layer3Topology(net, usable)
	if err != nil {
		return nil, err
	}
	if !r.EgressIP {
		return []*rows.Desired{d}, nil
	}
	policies, err := topology.Layer3SubnetPolicies(net.Name, net.Subnets)
	if err != nil {
		return nil, err
	}
	return []*rows.Desired{policies, d}, nil
}

// planNodes are the nodes `udnctl plan` programs: node-1 ... node-N with
// node IDs from ovnk.FirstNodeID, chassis IDs and the transit switch port
// addresses their IDs give.
func planNodes(count int, cfg ovnk.ClusterConfig) ([]*corev1.Node, error) {
	var out []*corev1.Node
	for i := 0; i < count; i++ {
		id := ovnk.FirstNodeID + i
		var transit []netip.Prefix
		for _, t := range cfg.TransitSubnets {
			a, err := ovnk.TransitSwitchPortAddr(t, id)
			if err != nil {
				return nil, err
			}
			transit = append(transit, a)
		}
		out = append(out, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + strconv.Itoa(i+1), Annotations: map[string]string{
			ovnk.AnnotationNodeID:                      strconv.Itoa(id),
			ovnk.AnnotationNodeChassisID:               "chassis-node-" + strconv.Itoa(i+1),
			ovnk.AnnotationLayer2TopologyVersion:       ovnk.Layer2TopologyVersionTransitRouter,
			ovnk.AnnotationNodeTransitSwitchPortIfAddr: ovnk.EncodeNodeTransitSwitchPortAddrs(transit),
		}}})
	}
	return out, nil
}
