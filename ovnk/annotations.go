package ovnk

// Annotations, labels and finalizers shared by the webhooks, reconcilers and
// dataplane. The names are OVN-Kubernetes' own, so nodes and CNI see what
// they expect.
const (
	// LabelPrimaryUserDefinedNetwork marks a namespace whose pods use a Primary
	// UDN or CUDN instead of the default network.
	LabelPrimaryUserDefinedNetwork = "k8s.ovn.org/primary-user-defined-network"
	// LabelUserDefinedNetwork marks NetworkAttachmentDefinitions udnkit owns.
	LabelUserDefinedNetwork = "k8s.ovn.org/user-defined-network"
	// FinalizerUserDefinedNetworkProtection is set on UDNs, CUDNs and their NADs.
	FinalizerUserDefinedNetworkProtection = "k8s.ovn.org/user-defined-network-protection"

	// AnnotationDefaultNetwork is Multus' default-network NetworkSelectionElement;
	// in a namespace with a Primary Layer2 network it carries requested IPs/MAC.
	AnnotationDefaultNetwork = "v1.multus-cni.io/default-network"
	// AnnotationNetworks is Multus' list of a pod's secondary attachments
	// (NetworkSelectionElements, or "namespace/name@interface" items).
	AnnotationNetworks = "k8s.v1.cni.cncf.io/networks"
	// AnnotationPrimaryUDNIPAMClaim is the deprecated pod-to-IPAMClaim link.
	AnnotationPrimaryUDNIPAMClaim = "k8s.ovn.org/primary-udn-ipamclaim"
	// AnnotationPodNetworks holds a pod's allocated addresses per network.
	AnnotationPodNetworks = "k8s.ovn.org/pod-networks"

	// AnnotationNetworkID is a network's cluster-unique ID, on its NADs.
	AnnotationNetworkID = "k8s.ovn.org/network-id"
	// AnnotationTunnelKeys lists a network's centrally allocated tunnel keys.
	AnnotationTunnelKeys = "k8s.ovn.org/tunnel-keys"

	// AnnotationNodeID is a node's cluster-unique ID.
	AnnotationNodeID = "k8s.ovn.org/node-id"
	// AnnotationNodeTransitSwitchPortIfAddr is the address of a node's port
	// on the transit switches (the default network's and every Layer3
	// network's); OVN-Kubernetes' cluster manager writes it together with
	// AnnotationNodeID (upstream util.OvnTransitSwitchPortAddr).
	AnnotationNodeTransitSwitchPortIfAddr = "k8s.ovn.org/node-transit-switch-port-ifaddr"
	// AnnotationNodeEncapIPs lists a node's encapsulation IPs (multi-VTEP).
	AnnotationNodeEncapIPs = "k8s.ovn.org/node-encap-ips"
	// AnnotationNodeTransitSwitchPortTunnelIDs lists one tunnel ID per encap IP.
	AnnotationNodeTransitSwitchPortTunnelIDs = "k8s.ovn.org/node-transit-switch-port-tunnel-ids"
	// AnnotationNodeSubnets maps network names to a node's host subnets.
	AnnotationNodeSubnets = "k8s.ovn.org/node-subnets"
	// AnnotationLayer2TopologyVersion is "2.0" on nodes that run the Layer2
	// transit-router topology (OKEP-5094).
	AnnotationLayer2TopologyVersion = "k8s.ovn.org/layer2-topology-version"
	// AnnotationGatewayMTUSupport is "false" on nodes whose ovnkube-node
	// turned gateway_mtu off (upstream util.OvnNodeGatewayMtuSupport); any
	// other value, or none, means supported.
	AnnotationGatewayMTUSupport = "k8s.ovn.org/gateway-mtu-support"

	// DefaultNetworkNamespace and DefaultNetworkName name the default NAD stub
	// a default-network NetworkSelectionElement must reference (OKEP-5233).
	DefaultNetworkNamespace = "ovn-kubernetes"
	DefaultNetworkName      = "default"
)
