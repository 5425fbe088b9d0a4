package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// NetworkSpec is the network of a ClusterUserDefinedNetwork.
//
// +kubebuilder:validation:XValidation:rule="self.topology == 'Layer3' ? has(self.layer3) : !has(self.layer3)",message="spec.layer3 is required when topology is Layer3 and forbidden otherwise."
// +kubebuilder:validation:XValidation:rule="self.topology == 'Layer2' ? has(self.layer2) : !has(self.layer2)",message="spec.layer2 is required when topology is Layer2 and forbidden otherwise."
// +kubebuilder:validation:XValidation:rule="self.topology == 'Localnet' ? has(self.localnet) : !has(self.localnet)",message="spec.localnet is required when topology is Localnet and forbidden otherwise."
// +kubebuilder:validation:XValidation:rule="!has(self.transport) || self.transport != 'NoOverlay' || (self.topology == 'Layer3' && has(self.layer3) && self.layer3.role == 'Primary')",message="transport 'NoOverlay' is only supported for Layer3 primary networks."
// +kubebuilder:validation:XValidation:rule="!has(self.transport) || self.transport != 'NoOverlay' || has(self.noOverlay)",message="spec.noOverlay is required when type transport is 'NoOverlay'."
// +kubebuilder:validation:XValidation:rule="(has(self.transport) && self.transport == 'NoOverlay') || !has(self.noOverlay)",message="spec.noOverlay is forbidden when transport type is not 'NoOverlay'."
// +kubebuilder:validation:XValidation:rule="!has(self.transport) || self.transport != 'EVPN' || ((self.topology == 'Layer2' && has(self.layer2) && self.layer2.role == 'Primary') || (self.topology == 'Layer3' && has(self.layer3) && self.layer3.role == 'Primary'))",message="transport 'EVPN' is only supported for Layer2 or Layer3 primary networks."
// +kubebuilder:validation:XValidation:rule="!has(self.transport) || self.transport != 'EVPN' || has(self.evpn)",message="spec.evpn field is required when transport is 'EVPN'."
// +kubebuilder:validation:XValidation:rule="(has(self.transport) && self.transport == 'EVPN') || !has(self.evpn)",message="spec.evpn field is forbidden when transport is not 'EVPN'."
// +kubebuilder:validation:XValidation:rule="!has(self.transport) || self.transport != 'EVPN' || self.topology != 'Layer2' || (has(self.evpn) && has(self.evpn.macVRF))",message="spec.evpn.macVRF field is required for Layer2 topology when transport is 'EVPN'."
// +kubebuilder:validation:XValidation:rule="!has(self.transport) || self.transport != 'EVPN' || self.topology != 'Layer3' || (has(self.evpn) && has(self.evpn.ipVRF))",message="spec.evpn.ipVRF field is required for Layer3 topology when transport is 'EVPN'."
// +kubebuilder:validation:XValidation:rule="!has(self.transport) || self.transport != 'EVPN' || self.topology != 'Layer3' || !has(self.evpn) || !has(self.evpn.macVRF)",message="spec.evpn.macVRF field is forbidden for Layer3 topology when transport is 'EVPN'."
type NetworkSpec struct {
	// topology is Layer2 (one logical switch shared by all nodes), Layer3 (one
	// switch per node, routed) or Localnet (bridged to a physical network).
	//
	// +kubebuilder:validation:Enum=Layer2;Layer3;Localnet
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Topology is immutable."
	// +required
	Topology NetworkTopology `json:"topology"`

	// layer3 is the configuration of a Layer3 network.
	//
	// +optional
	Layer3 *Layer3Config `json:"layer3,omitempty"`

	// layer2 is the configuration of a Layer2 network; immutable once created.
	//
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Layer2 is immutable."
	// +optional
	Layer2 *Layer2Config `json:"layer2,omitempty"`

	// localnet is the configuration of a Localnet network; immutable once
	// created.
	//
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Localnet is immutable."
	// +optional
	Localnet *LocalnetConfig `json:"localnet,omitempty"`

	// transport is how pod-to-pod traffic is carried: NoOverlay (routed by
	// the underlay; Layer3 Primary networks only) or EVPN (Layer2 and Layer3
	// Primary networks). When omitted, the cluster's OVN overlay (Geneve or
	// VXLAN, as ovn-encap-type says) is used. udnkit accepts it but does not
	// implement it (see UnimplementedFeatures).
	//
	// +kubebuilder:validation:Enum=NoOverlay;EVPN
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Transport is immutable."
	// +optional
	Transport TransportOption `json:"transport,omitempty"`

	// noOverlay configures transport NoOverlay; required with it and
	// forbidden otherwise.
	//
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="NoOverlay is immutable."
	// +optional
	NoOverlay *NoOverlayConfig `json:"noOverlay,omitempty"`

	// evpn configures transport EVPN; required with it and forbidden
	// otherwise.
	//
	// +optional
	EVPN *EVPNConfig `json:"evpn,omitempty"`
}

// ClusterUserDefinedNetworkSpec is a network shared by the namespaces its
// selector matches.
//
// +kubebuilder:validation:XValidation:rule="!has(self.uplinks) || ((self.network.topology == 'Layer2' && has(self.network.layer2) && self.network.layer2.role == 'Primary') || (self.network.topology == 'Layer3' && has(self.network.layer3) && self.network.layer3.role == 'Primary'))",message="spec.uplinks is supported only for primary Layer2 and Layer3 networks."
// +kubebuilder:validation:XValidation:rule="!has(self.uplinks) || !has(self.network.transport) || self.network.transport != 'EVPN'",message="spec.uplinks is not supported with EVPN transport."
type ClusterUserDefinedNetworkSpec struct {
	// namespaceSelector selects the namespaces the network is available in.
	//
	// +required
	NamespaceSelector metav1.LabelSelector `json:"namespaceSelector"`

	// uplinks names the Uplink objects that carry the network's external
	// traffic; one for now. When omitted, the node's gateway is used as
	// before. udnkit accepts it but does not implement it (see
	// UnimplementedFeatures).
	//
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=1
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="uplinks is immutable."
	// +listType=atomic
	// +optional
	Uplinks []string `json:"uplinks,omitempty"`

	// network is the network's configuration.
	//
	// +required
	Network NetworkSpec `json:"network"`
}

// ClusterUserDefinedNetwork is a network shared across namespaces.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=clusteruserdefinednetworks,scope=Cluster,shortName=cudn,categories=ovn;udnkit
// +kubebuilder:printcolumn:name="Topology",type=string,JSONPath=`.spec.network.topology`
// +kubebuilder:printcolumn:name="Role",type=string,JSONPath=`.spec.network.*.role`
// +kubebuilder:printcolumn:name="Subnets",type=string,JSONPath=`.spec.network.*.subnets`
// +kubebuilder:printcolumn:name="Created",type=string,JSONPath=`.status.conditions[?(@.type=="NetworkCreated")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="NetworkCreated")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterUserDefinedNetwork struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired network.
	//
	// +required
	Spec ClusterUserDefinedNetworkSpec `json:"spec"`

	// status is the observed state of the network.
	//
	// +optional
	Status NetworkStatus `json:"status,omitempty"`
}

// ClusterUserDefinedNetworkList is a list of ClusterUserDefinedNetworks.
//
// +kubebuilder:object:root=true
type ClusterUserDefinedNetworkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterUserDefinedNetwork `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ClusterUserDefinedNetwork{}, &ClusterUserDefinedNetworkList{})
}
