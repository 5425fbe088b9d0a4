package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Condition types and reasons shared by UserDefinedNetwork and
// ClusterUserDefinedNetwork.
const (
	// ConditionNetworkCreated reports whether the NetworkAttachmentDefinitions of
	// the network exist and match the spec.
	ConditionNetworkCreated = "NetworkCreated"

	// ReasonNADCreated: every NetworkAttachmentDefinition of the network exists.
	ReasonNADCreated = "NetworkAttachmentDefinitionCreated"
	// ReasonNADDeleted: the network is being deleted.
	ReasonNADDeleted = "NetworkAttachmentDefinitionDeleted"
	// ReasonSyncError: the NetworkAttachmentDefinitions could not be reconciled.
	ReasonSyncError = "SyncError"
	// ReasonPrimaryNetworkConflict: another Primary network, older by
	// creationTimestamp (then kind, then name), holds a namespace this
	// Primary network selects; it gets no NetworkAttachmentDefinition there
	// until the other one is gone.
	ReasonPrimaryNetworkConflict = "PrimaryNetworkConflict"
	// ReasonSubnetConflict: a Layer3 subnet appended after the network's
	// NetworkAttachmentDefinitions were written (OKEP-5377) overlaps a range
	// in use (the network's join subnet, a cluster range, or a subnet of
	// another network in one of its namespaces); the
	// NetworkAttachmentDefinitions keep their old subnets until the conflict
	// is gone.
	ReasonSubnetConflict = "SubnetConflict"

	// ConditionHostSubnetsAllocated reports, on a Layer3 network, whether
	// every node holds a host subnet of it (k8s.ovn.org/node-subnets).
	ConditionHostSubnetsAllocated = "HostSubnetsAllocated"
	// ReasonHostSubnetsAllocated: every node holds a host subnet of the network.
	ReasonHostSubnetsAllocated = "HostSubnetsAllocated"
	// ReasonHostSubnetsExhausted: the network's subnets have no host subnet
	// left for some node; the message names them.
	ReasonHostSubnetsExhausted = "HostSubnetsExhausted"
	// ReasonWaitingForNodeIDs: some node has no valid k8s.ovn.org/node-id
	// from OVN-Kubernetes' cluster manager yet (the node controller only
	// reads node IDs, --node-id-source=read), so it gets no host subnet until
	// it has one; the message names the nodes and why they wait.
	ReasonWaitingForNodeIDs = "WaitingForNodeIDs"

	// ConditionTransportAccepted reports whether the transport a
	// ClusterUserDefinedNetwork asks for (spec.network.transport, noOverlay,
	// evpn) is in place. Upstream OVN-Kubernetes sets it only when transport
	// is set; NotImplementedConditions returns it only then too.
	ConditionTransportAccepted = "TransportAccepted"
	// ConditionUplinksReady reports whether the Uplinks a
	// ClusterUserDefinedNetwork names (spec.uplinks) carry its external
	// traffic; the condition type is upstream OVN-Kubernetes'.
	ConditionUplinksReady = "UplinksReady"

	// ConditionDataplaneProgrammed is present only while udnkit's dataplane
	// leaves the network's OVN rows alone: False with reason
	// OwnedByOVNKubernetes when OVN-Kubernetes programs the same network in a
	// zone (its rows for the network exist without udnkit's mark). The
	// dataplane removes it once it programs the network.
	ConditionDataplaneProgrammed = "DataplaneProgrammed"
	// ReasonOwnedByOVNKubernetes: OVN-Kubernetes writes this network's OVN
	// rows; the message names the zone and the row.
	ReasonOwnedByOVNKubernetes = "OwnedByOVNKubernetes"

	// ReasonFeatureNotImplemented: the spec sets fields that udnkit admits,
	// so that upstream manifests apply unchanged, but does not implement.
	// The condition is False and its message lists the fields.
	ReasonFeatureNotImplemented = "FeatureNotImplemented"
)

// NetworkTopology is the shape of the OVN topology created for a network.
type NetworkTopology string

const (
	NetworkTopologyLayer2   NetworkTopology = "Layer2"
	NetworkTopologyLayer3   NetworkTopology = "Layer3"
	NetworkTopologyLocalnet NetworkTopology = "Localnet"
)

// NetworkRole is the role a network plays for the pods attached to it.
type NetworkRole string

const (
	NetworkRolePrimary   NetworkRole = "Primary"
	NetworkRoleSecondary NetworkRole = "Secondary"
)

// IPAMMode controls how much of the IP configuration OVN-Kubernetes manages.
// +kubebuilder:validation:Enum=Enabled;Disabled
type IPAMMode string

const (
	IPAMEnabled  IPAMMode = "Enabled"
	IPAMDisabled IPAMMode = "Disabled"
)

// NetworkIPAMLifecycle controls the lifecycle of allocated addresses.
// +kubebuilder:validation:Enum=Persistent
type NetworkIPAMLifecycle string

const IPAMLifecyclePersistent NetworkIPAMLifecycle = "Persistent"

// Host bits: as upstream OVN-Kubernetes, a network's subnets may be written
// with host bits set (10.20.100.0/16 stands for 10.20.0.0/16; admission warns
// and names the network address), while reservedSubnets and
// infrastructureSubnets must be masked. udnkit also requires masked
// joinSubnets and excludeSubnets, which upstream does not check.

// CIDR is an IPv4 or IPv6 prefix in CIDR notation, such as 10.128.0.0/16.
// +kubebuilder:validation:MaxLength=43
// +kubebuilder:validation:XValidation:rule="isCIDR(self)",message="CIDR is invalid: it must be an IPv4 or IPv6 prefix such as 10.128.0.0/16."
type CIDR string

// NetworkCIDR is a CIDR of a field that must be a network address (no host
// bits set); the rule is on each such field, with the field's name.
type NetworkCIDR = CIDR

// IP is an IPv4 or IPv6 address.
// +kubebuilder:validation:MaxLength=45
// +kubebuilder:validation:XValidation:rule="isIP(self)",message="IP is invalid: it must be an IPv4 or IPv6 address."
type IP string

// DualStackCIDRs holds one CIDR, or two of different IP families.
// +kubebuilder:validation:MinItems=1
// +kubebuilder:validation:MaxItems=2
// +kubebuilder:validation:XValidation:rule="size(self) != 2 || !isCIDR(self[0]) || !isCIDR(self[1]) || cidr(self[0]).ip().family() != cidr(self[1]).ip().family()",message="When 2 CIDRs are set, they must be from different IP families."
type DualStackCIDRs []CIDR

// DualStackIPs holds one IP, or two of different IP families.
// +kubebuilder:validation:MinItems=1
// +kubebuilder:validation:MaxItems=2
// +kubebuilder:validation:XValidation:rule="size(self) != 2 || !isIP(self[0]) || !isIP(self[1]) || ip(self[0]).family() != ip(self[1]).family()",message="When 2 IPs are set, they must be from different IP families."
type DualStackIPs []IP

// Layer3Config is the configuration of a Layer3 network: one logical switch per
// node, each with its own slice of the cluster subnets, joined by a router.
//
// Subnets are append-only (OKEP-5377): existing entries cannot be removed or
// changed, and a Primary network may add subnets of either IP family later.
//
// +kubebuilder:validation:XValidation:rule="!has(self.joinSubnets) || self.role == 'Primary'",message="JoinSubnets is only supported for Primary network."
// +kubebuilder:validation:XValidation:rule="!has(self.joinSubnets) || !self.joinSubnets.exists(j, isCIDR(j) && self.subnets.exists(s, isCIDR(s.cidr) && (cidr(j).containsCIDR(cidr(s.cidr)) || cidr(s.cidr).containsCIDR(cidr(j)))))",message="joinSubnets must not overlap subnets: pod or join subnet overlaps with already configured internal subnets.",fieldPath=".joinSubnets"
// +kubebuilder:validation:XValidation:rule="!has(self.mtu) || self.mtu >= 1280 || !self.subnets.exists(s, isCIDR(s.cidr) && cidr(s.cidr).ip().family() == 6)",message="MTU should be greater than or equal to 1280 when IPv6 subnet is used."
// +kubebuilder:validation:XValidation:rule="self.role != 'Secondary' || size(self.subnets) <= 2",message="Secondary networks may define at most 2 subnets."
// +kubebuilder:validation:XValidation:rule="self.role != 'Secondary' || size(self.subnets) != 2 || !isCIDR(self.subnets[0].cidr) || !isCIDR(self.subnets[1].cidr) || cidr(self.subnets[0].cidr).ip().family() != cidr(self.subnets[1].cidr).ip().family()",message="When 2 CIDRs are set for Secondary networks, they must be from different IP families."
// +kubebuilder:validation:XValidation:rule="self.subnets.all(i, a, self.subnets.all(j, b, i == j || a.cidr != b.cidr))",message="Subnets with same CIDR are not allowed."
// +kubebuilder:validation:XValidation:rule="!self.subnets.all(s, isCIDR(s.cidr)) || self.subnets.all(i, a, self.subnets.all(j, b, i == j || a.cidr == b.cidr || !cidr(a.cidr).containsCIDR(b.cidr)))",message="Subnets must not overlap or contain each other."
// +kubebuilder:validation:XValidation:rule="[4, 6].all(f, self.subnets.filter(s, isCIDR(s.cidr) && cidr(s.cidr).ip().family() == f).map(s, has(s.hostSubnet) ? s.hostSubnet : 0).distinct().size() <= 1)",message="Subnets from the same IP family must use the same hostSubnet value."
// +kubebuilder:validation:XValidation:rule="has(self.mtu) == has(oldSelf.mtu) && (!has(self.mtu) || self.mtu == oldSelf.mtu)",message="mtu is immutable."
// +kubebuilder:validation:XValidation:rule="has(self.joinSubnets) == has(oldSelf.joinSubnets) && (!has(self.joinSubnets) || self.joinSubnets == oldSelf.joinSubnets)",message="joinSubnets is immutable."
// +kubebuilder:validation:XValidation:rule="oldSelf.role != 'Secondary' || self.subnets == oldSelf.subnets",message="Subnets is immutable for Secondary role."
// +kubebuilder:validation:XValidation:rule="size(self.subnets) >= size(oldSelf.subnets) && self.subnets.slice(0, size(oldSelf.subnets)).map(s, s.cidr) == oldSelf.subnets.map(s, s.cidr)",message="Removing existing subnets is not allowed; existing subnets cannot be reordered or changed either, new subnets may only be appended."
// +kubebuilder:validation:XValidation:rule="oldSelf.subnets.all(i, o, i >= size(self.subnets) || self.subnets[i].cidr != o.cidr || has(self.subnets[i].hostSubnet) == has(o.hostSubnet) && (!has(o.hostSubnet) || self.subnets[i].hostSubnet == o.hostSubnet))",message="hostSubnet is immutable for an existing subnet."
type Layer3Config struct {
	// role is the network's role for the pods of the namespace: Primary (the
	// pods' default interface) or Secondary (attached only on request through
	// the k8s.v1.cni.cncf.io/networks annotation).
	//
	// +kubebuilder:validation:Enum=Primary;Secondary
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="role is immutable."
	// +required
	Role NetworkRole `json:"role"`

	// mtu is the maximum transmission unit of the network. When omitted, the
	// cluster-wide OVN-Kubernetes value (1400 by default) is used.
	//
	// +kubebuilder:validation:Minimum=576
	// +kubebuilder:validation:Maximum=65536
	// +optional
	MTU int32 `json:"mtu,omitempty"`

	// subnets are the cluster subnets of the network; every node gets a slice of
	// hostSubnet bits from one of them per IP family. Primary networks may list
	// several subnets per IP family and append more later; Secondary networks
	// take one per family and cannot change them.
	//
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=200
	// +required
	Subnets []Layer3Subnet `json:"subnets"`

	// joinSubnets are used inside the OVN topology between the network's
	// routers. Only for Primary networks; when omitted a default is used.
	//
	// +kubebuilder:validation:XValidation:rule="self.all(s, !isCIDR(s) || cidr(s) == cidr(s).masked())",message="joinSubnets must be network addresses with no host bits set, such as 100.65.0.0/16."
	// +optional
	JoinSubnets DualStackCIDRs `json:"joinSubnets,omitempty"`
}

// Layer3Subnet is one cluster subnet of a Layer3 network.
//
// +kubebuilder:validation:XValidation:rule="!has(self.hostSubnet) || !isCIDR(self.cidr) || self.hostSubnet > cidr(self.cidr).prefixLength()",message="HostSubnet must be smaller than CIDR subnet: hostSubnet must be longer than the prefix length of cidr."
// +kubebuilder:validation:XValidation:rule="!has(self.hostSubnet) || !isCIDR(self.cidr) || cidr(self.cidr).ip().family() != 4 || self.hostSubnet <= 30",message="HostSubnet must < 32 for ipv4 CIDR, and udnkit requires at most 30 to leave room for pods."
// +kubebuilder:validation:XValidation:rule="!has(self.hostSubnet) || !isCIDR(self.cidr) || cidr(self.cidr).ip().family() != 6 || self.hostSubnet <= 126",message="hostSubnet must leave room for pods: at most 126 for an IPv6 cidr."
type Layer3Subnet struct {
	// cidr is the cluster subnet, split into per-node subnets.
	//
	// +required
	CIDR CIDR `json:"cidr"`

	// hostSubnet is the prefix length of each node's subnet; it must leave
	// room for pods (at most 30 for IPv4, 126 for IPv6). When omitted it is
	// chosen automatically (24 for IPv4, 64 for IPv6).
	//
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=127
	// +optional
	HostSubnet int32 `json:"hostSubnet,omitempty"`
}

// Layer2Config is the configuration of a Layer2 network: one logical switch
// shared by all nodes.
//
// The predefined-address fields (OKEP-5233) reservedSubnets,
// infrastructureSubnets and defaultGatewayIPs apply to Primary networks only.
//
// +kubebuilder:validation:XValidation:rule="has(self.subnets) || has(self.ipam) && has(self.ipam.mode) && self.ipam.mode == 'Disabled'",message="Subnets is required with ipam.mode is Enabled or unset."
// +kubebuilder:validation:XValidation:rule="!has(self.subnets) || !has(self.ipam) || !has(self.ipam.mode) || self.ipam.mode != 'Disabled'",message="Subnets must be unset when ipam.mode is Disabled."
// +kubebuilder:validation:XValidation:rule="!has(self.ipam) || !has(self.ipam.mode) || self.ipam.mode != 'Disabled' || self.role == 'Secondary'",message="Disabled ipam.mode is only supported for Secondary network."
// +kubebuilder:validation:XValidation:rule="!has(self.joinSubnets) || self.role == 'Primary'",message="JoinSubnets is only supported for Primary network."
// +kubebuilder:validation:XValidation:rule="!has(self.joinSubnets) || !has(self.subnets) || !self.joinSubnets.exists(j, isCIDR(j) && self.subnets.exists(s, isCIDR(s) && (cidr(j).containsCIDR(cidr(s)) || cidr(s).containsCIDR(cidr(j)))))",message="joinSubnets must not overlap subnets: pod or join subnet overlaps with already configured internal subnets.",fieldPath=".joinSubnets"
// +kubebuilder:validation:XValidation:rule="!has(self.subnets) || !has(self.mtu) || self.mtu >= 1280 || !self.subnets.exists(s, isCIDR(s) && cidr(s).ip().family() == 6)",message="MTU should be greater than or equal to 1280 when IPv6 subnet is used."
// +kubebuilder:validation:XValidation:rule="!has(self.defaultGatewayIPs) || self.role == 'Primary'",message="defaultGatewayIPs is only supported for Primary network."
// +kubebuilder:validation:XValidation:rule="!has(self.defaultGatewayIPs) || has(self.subnets)",message="defaultGatewayIPs must be unset when subnets is unset."
// +kubebuilder:validation:XValidation:rule="!has(self.defaultGatewayIPs) || !has(self.subnets) || self.defaultGatewayIPs.all(g, !isIP(g) || self.subnets.exists(s, isCIDR(s) && cidr(s).containsIP(g)))",message="defaultGatewayIPs must belong to one of the subnets specified in the subnets field.",fieldPath=".defaultGatewayIPs"
// +kubebuilder:validation:XValidation:rule="!has(self.defaultGatewayIPs) || !has(self.subnets) || size(self.defaultGatewayIPs) == size(self.subnets) && self.subnets.all(s, !isCIDR(s) || self.defaultGatewayIPs.exists(g, isIP(g) && ip(g).family() == cidr(s).ip().family()))",message="defaultGatewayIPs must be specified for all IP families: exactly one IP for the IP family of each subnet.",fieldPath=".defaultGatewayIPs"
// +kubebuilder:validation:XValidation:rule="!has(self.reservedSubnets) || self.role == 'Primary'",message="reservedSubnets is only supported for Primary network."
// +kubebuilder:validation:XValidation:rule="!has(self.reservedSubnets) || has(self.subnets)",message="reservedSubnets must be unset when subnets is unset."
// +kubebuilder:validation:XValidation:rule="!has(self.reservedSubnets) || !has(self.subnets) || self.reservedSubnets.all(e, !isCIDR(e) || self.subnets.exists(s, isCIDR(s) && cidr(s).containsCIDR(cidr(e))))",message="reservedSubnets must be subnetworks of the networks specified in the subnets field.",fieldPath=".reservedSubnets"
// +kubebuilder:validation:XValidation:rule="!has(self.infrastructureSubnets) || self.role == 'Primary'",message="infrastructureSubnets is only supported for Primary network."
// +kubebuilder:validation:XValidation:rule="!has(self.infrastructureSubnets) || has(self.subnets)",message="infrastructureSubnets must be unset when subnets is unset."
// +kubebuilder:validation:XValidation:rule="!has(self.infrastructureSubnets) || !has(self.subnets) || self.infrastructureSubnets.all(e, !isCIDR(e) || self.subnets.exists(s, isCIDR(s) && cidr(s).containsCIDR(cidr(e))))",message="infrastructureSubnets must be subnetworks of the networks specified in the subnets field.",fieldPath=".infrastructureSubnets"
// +kubebuilder:validation:XValidation:rule="!has(self.infrastructureSubnets) || !has(self.defaultGatewayIPs) || self.defaultGatewayIPs.all(g, !isIP(g) || self.infrastructureSubnets.exists(s, isCIDR(s) && cidr(s).containsIP(g)))",message="defaultGatewayIPs have to belong to infrastructureSubnets.",fieldPath=".defaultGatewayIPs"
// +kubebuilder:validation:XValidation:rule="!has(self.infrastructureSubnets) || !has(self.reservedSubnets) || self.infrastructureSubnets.all(i, !isCIDR(i) || self.reservedSubnets.all(r, !isCIDR(r) || !cidr(i).containsCIDR(cidr(r)) && !cidr(r).containsCIDR(cidr(i))))",message="infrastructureSubnets and reservedSubnets must not overlap."
type Layer2Config struct {
	// role is the network's role for the pods of the namespace: Primary (the
	// pods' default interface) or Secondary (attached only on request through
	// the k8s.v1.cni.cncf.io/networks annotation).
	//
	// +kubebuilder:validation:Enum=Primary;Secondary
	// +required
	Role NetworkRole `json:"role"`

	// mtu is the maximum transmission unit of the network. When omitted, the
	// cluster-wide OVN-Kubernetes value (1400 by default) is used.
	//
	// +kubebuilder:validation:Minimum=576
	// +kubebuilder:validation:Maximum=65536
	// +optional
	MTU int32 `json:"mtu,omitempty"`

	// subnets are the pod subnets of the network, one per IP family. Required
	// unless ipam.mode is Disabled, and forbidden when it is. Each must leave
	// room for pods: /30 or shorter for IPv4, /126 or shorter for IPv6.
	//
	// +kubebuilder:validation:XValidation:rule="self.all(s, !isCIDR(s) || cidr(s).prefixLength() <= (cidr(s).ip().family() == 4 ? 30 : 126))",message="Layer2 subnets must leave room for pods: a prefix length of at most 30 for IPv4 and 126 for IPv6."
	// +optional
	Subnets DualStackCIDRs `json:"subnets,omitempty"`

	// reservedSubnets are ranges inside subnets that automatic allocation never
	// uses; pods can still request addresses from them explicitly through the
	// v1.multus-cni.io/default-network annotation. Primary networks only.
	//
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=25
	// +kubebuilder:validation:XValidation:rule="self.all(s, !isCIDR(s) || cidr(s) == cidr(s).masked())",message="reservedSubnets must be a masked network address (no host bits set)."
	// +optional
	ReservedSubnets []NetworkCIDR `json:"reservedSubnets,omitempty"`

	// infrastructureSubnets are ranges inside subnets reserved for
	// OVN-Kubernetes itself (gateway and management port addresses); workloads
	// never get addresses from them. When omitted, the first usable addresses
	// of subnets are taken. Primary networks only.
	//
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=4
	// +kubebuilder:validation:XValidation:rule="self.all(s, !isCIDR(s) || cidr(s) == cidr(s).masked())",message="infrastructureSubnets must be a masked network address (no host bits set)."
	// +optional
	InfrastructureSubnets []NetworkCIDR `json:"infrastructureSubnets,omitempty"`

	// defaultGatewayIPs are the pods' default gateway addresses, one for the IP
	// family of each subnet. When omitted, the first usable address of each
	// subnet is used. Primary networks only.
	//
	// +optional
	DefaultGatewayIPs DualStackIPs `json:"defaultGatewayIPs,omitempty"`

	// joinSubnets are used inside the OVN topology between the network's
	// routers. Only for Primary networks; when omitted a default is used.
	//
	// +kubebuilder:validation:XValidation:rule="self.all(s, !isCIDR(s) || cidr(s) == cidr(s).masked())",message="joinSubnets must be network addresses with no host bits set, such as 100.65.0.0/16."
	// +optional
	JoinSubnets DualStackCIDRs `json:"joinSubnets,omitempty"`

	// ipam configures IP address management for the network.
	//
	// +optional
	IPAM *IPAMConfig `json:"ipam,omitempty"`
}

// IPAMConfig configures IP address management.
//
// +kubebuilder:validation:MinProperties=1
// +kubebuilder:validation:XValidation:rule="!has(self.lifecycle) || !has(self.mode) || self.mode == 'Enabled'",message="ipam.lifecycle Persistent is only supported when ipam.mode is Enabled."
type IPAMConfig struct {
	// mode is Enabled (OVN-Kubernetes assigns addresses from subnets, the
	// default) or Disabled (only MAC addresses and layer 2 connectivity; for
	// Secondary networks only).
	//
	// +optional
	Mode IPAMMode `json:"mode,omitempty"`

	// lifecycle Persistent keeps a workload's addresses in an IPAMClaim
	// (ipamclaims.k8s.cni.cncf.io) across restarts and live migration.
	//
	// +optional
	Lifecycle NetworkIPAMLifecycle `json:"lifecycle,omitempty"`
}

// LocalnetConfig is the configuration of a Localnet network: a Layer2 network
// bridged to a physical network of the nodes.
//
// +kubebuilder:validation:XValidation:rule="has(self.subnets) || has(self.ipam) && has(self.ipam.mode) && self.ipam.mode == 'Disabled'",message="Subnets is required with ipam.mode is Enabled or unset, and forbidden otherwise: a Localnet network with IPAM needs subnets."
// +kubebuilder:validation:XValidation:rule="!has(self.subnets) || !has(self.ipam) || !has(self.ipam.mode) || self.ipam.mode != 'Disabled'",message="Subnets is required with ipam.mode is Enabled or unset, and forbidden otherwise: a Localnet network with ipam.mode Disabled takes no subnets."
// +kubebuilder:validation:XValidation:rule="!has(self.excludeSubnets) || has(self.subnets)",message="excludeSubnets must be unset when subnets is unset."
// +kubebuilder:validation:XValidation:rule="!has(self.excludeSubnets) || !has(self.subnets) || self.excludeSubnets.all(e, !isCIDR(e) || self.subnets.exists(s, isCIDR(s) && cidr(s).containsCIDR(cidr(e))))",message="excludeSubnets must each be inside one of the subnets.",fieldPath=".excludeSubnets"
// +kubebuilder:validation:XValidation:rule="!has(self.subnets) || !has(self.mtu) || self.mtu >= 1280 || !self.subnets.exists(s, isCIDR(s) && cidr(s).ip().family() == 6)",message="MTU should be greater than or equal to 1280 when an IPv6 subnet is used."
type LocalnetConfig struct {
	// role of a Localnet network is always Secondary.
	//
	// +kubebuilder:validation:Enum=Secondary
	// +required
	Role NetworkRole `json:"role"`

	// physicalNetworkName is the network name of the OVS bridge mapping
	// configured on the nodes (for example the localnet value of an NNCP).
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[^,:]+$')",message="physicalNetworkName cannot contain `,` or `:` characters."
	// +required
	PhysicalNetworkName string `json:"physicalNetworkName"`

	// subnets are the pod subnets of the network, one per IP family. Required
	// unless ipam.mode is Disabled, and forbidden when it is.
	//
	// +optional
	Subnets DualStackCIDRs `json:"subnets,omitempty"`

	// excludeSubnets are ranges inside subnets that are never assigned to pods,
	// for example addresses already used on the physical network.
	//
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=25
	// +kubebuilder:validation:XValidation:rule="self.all(s, !isCIDR(s) || cidr(s) == cidr(s).masked())",message="excludeSubnets must be network addresses with no host bits set, such as 192.0.2.0/28."
	// +optional
	ExcludeSubnets []CIDR `json:"excludeSubnets,omitempty"`

	// ipam configures IP address management for the network.
	//
	// +optional
	IPAM *IPAMConfig `json:"ipam,omitempty"`

	// mtu is the maximum transmission unit of the network; it should match the
	// physical network's.
	//
	// +kubebuilder:validation:Minimum=576
	// +kubebuilder:validation:Maximum=65536
	// +optional
	MTU int32 `json:"mtu,omitempty"`

	// vlan configures the VLAN of the network's ports on the physical network.
	//
	// +optional
	VLAN *VLANConfig `json:"vlan,omitempty"`
}

// VLANMode is how ports join a VLAN.
// +kubebuilder:validation:Enum=Access
type VLANMode string

const VLANModeAccess VLANMode = "Access"

// VLANConfig is the VLAN configuration of a Localnet network.
//
// +kubebuilder:validation:XValidation:rule="self.mode == 'Access' ? has(self.access) : !has(self.access)",message="vlan access config is required when vlan mode is 'Access', and forbidden otherwise."
type VLANConfig struct {
	// mode is the VLAN mode; Access puts the network's ports in access mode.
	//
	// +required
	Mode VLANMode `json:"mode"`

	// access is the access-mode configuration.
	//
	// +optional
	Access *AccessVLANConfig `json:"access,omitempty"`
}

// AccessVLANConfig is the configuration of an access-mode VLAN.
type AccessVLANConfig struct {
	// id is the VLAN ID (VID) of the network.
	//
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4094
	// +required
	ID int32 `json:"id"`
}

// NetworkStatus is the observed state shared by UserDefinedNetwork and
// ClusterUserDefinedNetwork.
type NetworkStatus struct {
	// conditions report the state of the network:
	//
	// NetworkCreated: True when every NetworkAttachmentDefinition of the
	// network exists and matches the spec (reason
	// NetworkAttachmentDefinitionCreated); False with reason SyncError (the
	// message says why), PrimaryNetworkConflict (an older Primary network
	// holds a namespace this one selects), SubnetConflict (an appended Layer3
	// subnet overlaps a range in use) or NetworkAttachmentDefinitionDeleted
	// (the network is being deleted).
	//
	// TransportAccepted (ClusterUserDefinedNetwork, only when
	// spec.network.transport is set) and UplinksReady (only when spec.uplinks
	// is set): False with reason FeatureNotImplemented, naming the fields
	// udnkit admits but does not implement.
	//
	// DataplaneProgrammed: present only while udnkit's dataplane leaves the
	// network to OVN-Kubernetes, which programs it in a zone: False with
	// reason OwnedByOVNKubernetes, the message naming the zone and the row.
	//
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// transitSubnets are the transit subnets picked for a Primary Layer2
	// network (OKEP-5094 "Transit subnet conflict", option 4): the default
	// 100.88.0.0/16 and fd97::/64 unless the network's subnets overlap them.
	//
	// +optional
	TransitSubnets DualStackCIDRs `json:"transitSubnets,omitempty"`
}
