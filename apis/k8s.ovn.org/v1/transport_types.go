package v1

// Transport and EVPN configuration of a ClusterUserDefinedNetwork, field for
// field the upstream OVN-Kubernetes API (transport, noOverlay, evpn). udnkit
// admits them so upstream manifests apply unchanged, but does not program
// them: see NetworkSpec.UnimplementedFeatures.

// TransportOption is the technology that carries pod-to-pod traffic.
type TransportOption string

const (
	TransportOptionNoOverlay TransportOption = "NoOverlay"
	TransportOptionEVPN      TransportOption = "EVPN"
)

// SNATOption turns source NAT of pods' outbound traffic on or off.
type SNATOption string

const (
	SNATEnabled  SNATOption = "Enabled"
	SNATDisabled SNATOption = "Disabled"
)

// RoutingOption says who routes the pod network.
type RoutingOption string

const (
	RoutingManaged   RoutingOption = "Managed"
	RoutingUnmanaged RoutingOption = "Unmanaged"
)

// NoOverlayConfig configures a network whose pod traffic is routed by the
// underlay instead of an overlay tunnel.
type NoOverlayConfig struct {
	// outboundSNAT is Enabled (pods' outbound traffic leaves with the node's
	// address) or Disabled (with the pod's own address).
	//
	// +kubebuilder:validation:Enum=Enabled;Disabled
	// +required
	OutboundSNAT SNATOption `json:"outboundSNAT"`

	// routing is Managed (OVN-Kubernetes advertises the pod subnets) or
	// Unmanaged (the user's routing infrastructure does).
	//
	// +kubebuilder:validation:Enum=Managed;Unmanaged
	// +required
	Routing RoutingOption `json:"routing"`
}

// EVPNConfig configures a network carried over EVPN (VXLAN with a BGP
// control plane).
//
// +kubebuilder:validation:XValidation:rule="has(self.macVRF) || has(self.ipVRF)",message="at least one of macVRF or ipVRF must be specified."
// +kubebuilder:validation:XValidation:rule="!has(self.macVRF) || !has(self.ipVRF) || self.macVRF.vni != self.ipVRF.vni",message="macVRF and ipVRF must use different VNIs."
type EVPNConfig struct {
	// vtep names the VTEP object that gives the nodes' VTEP addresses.
	//
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	// +required
	VTEP string `json:"vtep"`

	// macVRF is the MAC-VRF (Layer 2 EVPN) of the network: required for
	// Layer2 topology, forbidden for Layer3.
	//
	// +optional
	MACVRF *VRFConfig `json:"macVRF,omitempty"`

	// ipVRF is the IP-VRF (Layer 3 EVPN) of the network: required for Layer3
	// topology, optional for Layer2.
	//
	// +optional
	IPVRF *VRFConfig `json:"ipVRF,omitempty"`
}

// VRFConfig is one VRF of an EVPN network.
type VRFConfig struct {
	// vni is the VXLAN Network Identifier of the VRF (24 bits, 1 to
	// 16777215), unique among the cluster's EVPN networks.
	//
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16777215
	// +required
	VNI int32 `json:"vni"`

	// routeTarget is the VRF's import and export route target. When omitted
	// it is derived as <AS>:<VNI>.
	//
	// +optional
	RouteTarget RouteTargetString `json:"routeTarget,omitempty"`
}

// RouteTargetString is the 6-byte value of a BGP route target extended
// community (RFC 4360) in FRR's notation: a global administrator (a 2-byte AS,
// a 4-byte AS, an IPv4 address, or * to match any when importing), a colon,
// and a local administrator that takes the bytes the global one leaves: 4
// bytes after a 2-byte AS or *, 2 bytes after a 4-byte AS or an IPv4 address.
// For example 65000:100, 4200000000:100, 192.0.2.1:100 or *:100.
//
// +kubebuilder:validation:MaxLength=21
// +kubebuilder:validation:XValidation:rule="self.split(':').size() == 2",message="RT must contain exactly one colon."
// +kubebuilder:validation:XValidation:rule="self.split(':').size() != 2 || (self.startsWith('*:') || isIP(self.split(':')[0]) || self.split(':')[0].matches('^[0-9]+$'))",message="RT global administrator must be either '*', an IPv4 address, or a number."
// +kubebuilder:validation:XValidation:rule="self.split(':').size() != 2 || self.split(':')[1].matches('^[0-9]+$')",message="RT local administrator must be a number."
// +kubebuilder:validation:XValidation:rule="self.split(':').size() != 2 || !self.startsWith('*:') || (self.split(':')[1].matches('^[0-9]+$') && uint(self.split(':')[1]) <= 4294967295u)",message="RT with wildcard global administrator must have format *:OPQR where OPQR <= 4294967295."
// +kubebuilder:validation:XValidation:rule="self.split(':').size() != 2 || !self.split(':')[0].contains('.') || (self.split(':')[1].matches('^[0-9]+$') && uint(self.split(':')[1]) <= 65535u)",message="RT with IPv4 global administrator must have format A.B.C.D:MN where MN <= 65535."
// +kubebuilder:validation:XValidation:rule="self.split(':').size() != 2 || self.startsWith('*:') || self.split(':')[0].contains('.') || !self.split(':')[0].matches('^[0-9]+$') || !self.split(':')[1].matches('^[0-9]+$') || uint(self.split(':')[0]) <= 65535u || uint(self.split(':')[1]) <= 65535u",message="RT with 4-byte ASN global administrator must have format GHJK:MN where GHJK <= 4294967295 and MN <= 65535."
// +kubebuilder:validation:XValidation:rule="self.split(':').size() != 2 || self.startsWith('*:') || self.split(':')[0].contains('.') || !self.split(':')[0].matches('^[0-9]+$') || !self.split(':')[1].matches('^[0-9]+$') || uint(self.split(':')[0]) > 65535u || uint(self.split(':')[1]) <= 4294967295u",message="RT with 2-byte ASN global administrator must have format EF:OPQR where EF <= 65535 and OPQR <= 4294967295."
type RouteTargetString string
