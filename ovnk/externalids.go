package ovnk

// The external_ids keys of the Northbound rows udnkit writes. Those
// OVN-Kubernetes also writes keep upstream's values, so each side finds the
// other's rows; the udnkit-* keys are udnkit's own and mean nothing upstream.
const (
	// ExternalIDNetwork names the network a row belongs to (upstream's
	// types.NetworkExternalID).
	ExternalIDNetwork = "k8s.ovn.org/network"
	// ExternalIDTopology names the network's topology, "layer2" or "layer3"
	// (upstream's types.TopologyExternalID).
	ExternalIDTopology = "k8s.ovn.org/topology"
	// ExternalIDNode names the node a remote port or route leads to
	// (upstream's types.NodeExternalID).
	ExternalIDNode = "k8s.ovn.org/node"
	// ExternalIDNetworkRole is a network's role on its switches and routers,
	// "primary" or "secondary" (upstream's types.NetworkRoleExternalID, from
	// GenerateExternalIDsForSwitchOrRouter).
	ExternalIDNetworkRole = "k8s.ovn.org/role"
	// ExternalIDUDNEnabledService names the default-network service
	// (namespace/name) a route to a UDN-enabled service serves (upstream's
	// types.UDNEnabledServiceExternalID), by which upstream's services
	// controller finds and removes the route.
	ExternalIDUDNEnabledService = "k8s.ovn.org/udn-enabled-default-service"
	// ExternalIDVM names the VM (namespace/name) a DHCP_Options row serves
	// (upstream's libovsdbops.VirtualMachineKey); part of the row's identity.
	ExternalIDVM = "k8s.ovn.org/vm"
	// ExternalIDObjectID is the primary key upstream gives the rows it
	// builds from DbObjectIDs (libovsdbops.PrimaryIDKey: owner controller,
	// owner type and the object's own keys joined with ":"), unique among
	// them; an ACL's or QoS rule's identity when present.
	ExternalIDObjectID = "k8s.ovn.org/id"
	// ExternalIDNAD names the NAD key ("namespace/name") a pod's logical
	// switch port attaches the pod through (upstream's
	// types.NADExternalID).
	ExternalIDNAD = "k8s.ovn.org/nad"
	// ExternalIDPodNamespace and ExternalIDPod mark a pod's logical switch
	// port: its namespace, and "true" (upstream's
	// addLogicalPortToNetwork writes these two bare keys).
	ExternalIDPodNamespace = "namespace"
	ExternalIDPod          = "pod"
	// ExternalIDLoadBalancerKind and ExternalIDLoadBalancerOwner mark a
	// Service's load balancer: "Service" and the Service's
	// "namespace/name" (upstream's types.LoadBalancerKindExternalID and
	// LoadBalancerOwnerExternalID), by which upstream's services controller
	// finds a Service's load balancers.
	ExternalIDLoadBalancerKind  = "k8s.ovn.org/kind"
	ExternalIDLoadBalancerOwner = "k8s.ovn.org/owner"
	// ExternalIDClusterRouter marks a cluster router, as upstream's
	// topologyfactory marks every one it creates ("yes").
	ExternalIDClusterRouter = "k8s-cluster-router"

	// ExternalIDPiece separates the topology pieces udnkit writes that share
	// a router (the Layer2 topology and the live-migration routes on one
	// transit router), so applying one piece never removes another's rows.
	ExternalIDPiece = "k8s.ovn.org/udnkit-piece"
	// ExternalIDShared marks a router or switch a piece created as shared
	// with other pieces (rows.Router.Shared).
	ExternalIDShared = "k8s.ovn.org/udnkit-shared"
)

// The external_ids upstream builds from a DbObjectIDs
// (pkg/libovsdb/ops/db_object_ids.go and db_object_types.go): who owns the
// row and what it is, on the port groups, ACLs, address sets, policies and
// QoS rules of network policy, UDN isolation and EgressIP.
const (
	// ExternalIDOwnerController is the controller that owns the row
	// (libovsdbops.OwnerControllerKey).
	ExternalIDOwnerController = "k8s.ovn.org/owner-controller"
	// ExternalIDOwnerType is the kind of object the row serves
	// (libovsdbops.OwnerTypeKey): Cluster, NetpolDefault, EgressIP, ...
	ExternalIDOwnerType = "k8s.ovn.org/owner-type"
	// ExternalIDObjectName is the object's name (libovsdbops.ObjectNameKey).
	ExternalIDObjectName = "k8s.ovn.org/name"
	// ExternalIDPolicyDirection is an ACL's "Ingress" or "Egress"
	// (libovsdbops.PolicyDirectionKey).
	ExternalIDPolicyDirection = "direction"
	// ExternalIDIP is the management port address an ACL admits
	// (libovsdbops.IpKey).
	ExternalIDIP = "ip"
	// ExternalIDIPFamily is "v4"/"v6" on an address set, "ip4"/"ip6"/"ip"
	// on a policy or QoS rule (libovsdbops.IPFamilyKey).
	ExternalIDIPFamily = "ip-family"
	// ExternalIDObjectNetwork is the network an EgressIP row serves
	// (libovsdbops.NetworkKey; not k8s.ovn.org/network).
	ExternalIDObjectNetwork = "network"
	// ExternalIDPriority is an EgressIP policy's or QoS rule's priority
	// (libovsdbops.PriorityKey).
	ExternalIDPriority = "priority"
	// ExternalIDType is what a namespace's default-deny ACL does,
	// "defaultDeny" or "arpAllow" (libovsdbops.TypeKey).
	ExternalIDType = "type"
	// ExternalIDGressIndex is the index of a network policy ACL's rule in
	// its policy's ingress or egress list (libovsdbops.GressIdxKey).
	ExternalIDGressIndex = "gress-index"
	// ExternalIDIPBlockIndex is -1 on a network policy ACL of selectors
	// (or of no peer), -2 on the one of ipBlocks (libovsdbops.IpBlockIndexKey).
	ExternalIDIPBlockIndex = "ip-block-index"
	// ExternalIDPortPolicyProtocol is a network policy ACL's protocol,
	// "tcp", "udp", "sctp" or "None" (libovsdbops.PortPolicyProtocolKey).
	ExternalIDPortPolicyProtocol = "port-policy-protocol"
)
