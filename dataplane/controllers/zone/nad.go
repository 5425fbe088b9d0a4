package zone

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/dataplane/topology/multivtep"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/netconf"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

func Layer2Name(nad *nadv1.NetworkAttachmentDefinition) (string, bool) {
	net, ok, err := Layer2NetworkFromNAD(nad)
	return net.Name, ok && err == nil
}

// Layer2NetworkFromNAD reads a primary Layer2 network from its NAD: the
// OVN-Kubernetes config in spec.config and the k8s.ovn.org/tunnel-keys
// annotation ([switch key, transit router key]). ok is false for other
// networks and for networks whose tunnel keys are not allocated yet.
func Layer2NetworkFromNAD(nad *nadv1.NetworkAttachmentDefinition) (net topology.Layer2Network, ok bool, err error) {
	conf, err := netconf.Parse(nad.Spec.Config)
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

// ClusterFacts adds to net (read from nad by Layer2NetworkFromNAD) what
// comes from the cluster configuration and the NAD's network ID: the MTU
// (the gateway MTU, and the network's MTU when the NAD has no mtu key), the
// cluster's IP families with a join subnet for each, and the management
// port's masquerade IPs, one per join family (as upstream's
// GetUDNMgmtPortMasqueradeIPs gives one per cluster family). The dataplane
// and udnctl plan both call it, so a plan shows the rows the dataplane writes.
func ClusterFacts(cluster ovnk.ClusterConfig, nad *nadv1.NetworkAttachmentDefinition, net *topology.Layer2Network) error {
	ids, err := ovnk.DecodeNetworkIDs(nad.Annotations)
	if err != nil {
		return fmt.Errorf("NAD %s/%s: %w", nad.Namespace, nad.Name, err)
	}
	conf, err := netconf.Parse(nad.Spec.Config)
	if err != nil {
		return fmt.Errorf("NAD %s/%s spec.config: %w", nad.Namespace, nad.Name, err)
	}
	net.GatewayMTU = int(cluster.MTU)
	net.MTU = int(conf.NetworkMTU(cluster.MTU))
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

// Layer3NetworkFromNAD reads a primary Layer3 network's name and cluster
// subnets from its NAD's spec.config, where each subnet is "CIDR" or
// "CIDR/hostSubnet" (e.g. 10.200.0.0/16/24). ok is false for other networks.
func Layer3NetworkFromNAD(nad *nadv1.NetworkAttachmentDefinition) (name string, subnets []netip.Prefix, ok bool, err error) {
	conf, err := netconf.Parse(nad.Spec.Config)
	if err != nil {
		return "", nil, false, fmt.Errorf("NAD %s/%s spec.config: %w", nad.Namespace, nad.Name, err)
	}
	if conf.Topology != "layer3" || conf.Role != "primary" {
		return "", nil, false, nil
	}
	if subnets, err = conf.SubnetPrefixes(); err != nil {
		return "", nil, false, fmt.Errorf("NAD %s/%s spec.config %w", nad.Namespace, nad.Name, err)
	}
	for i := range subnets {
		subnets[i] = subnets[i].Masked()
	}
	if conf.Name == "" || len(subnets) == 0 {
		return "", nil, false, fmt.Errorf("NAD %s/%s spec.config: a Layer3 network needs a name and subnets", nad.Namespace, nad.Name)
	}
	return conf.Name, subnets, true, nil
}

func Layer3Name(nad *nadv1.NetworkAttachmentDefinition) (string, bool) {
	name, _, ok, err := Layer3NetworkFromNAD(nad)
	return name, ok && err == nil
}

// vtepName is the network of a primary Layer2 or Layer3 NAD.
func VTEPName(nad *nadv1.NetworkAttachmentDefinition) (string, bool) {
	if name, ok := Layer2Name(nad); ok {
		return name, true
	}
	return Layer3Name(nad)
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

// VTEPNodeFromNode reads a node's k8s.ovn.org/node-encap-ips,
// k8s.ovn.org/node-transit-switch-port-tunnel-ids and
// k8s.ovn.org/node-chassis-id (all optional).
func VTEPNodeFromNode(node *corev1.Node) (multivtep.VTEPNode, error) {
	n := multivtep.VTEPNode{Name: node.Name}
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
func Layer2PodPortFromPod(pod *corev1.Pod, nadKey string) (multivtep.Layer2PodPort, bool, error) {
	p := multivtep.Layer2PodPort{NAD: nadKey, VTEPPod: multivtep.VTEPPod{Namespace: pod.Namespace, Name: pod.Name, Node: pod.Spec.NodeName}}
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return p, false, nil
	}
	pn, err := podannotation.DecodePodNetwork(pod.Annotations, nadKey)
	if err != nil {
		return p, false, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if pn == nil || pn.EncapIP == "" {
		return p, false, nil
	}
	a, err := pn.Parse()
	if err != nil {
		return p, false, fmt.Errorf("pod %s/%s annotation %s.%w", pod.Namespace, pod.Name, podannotation.PodNetworkField(nadKey), err)
	}
	p.EncapIP, p.IPs, p.MAC, p.TunnelID = a.EncapIP, a.IPs, a.MAC.String(), a.TunnelID
	return p, true, nil
}
