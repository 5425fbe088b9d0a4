package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// NetworkSpec is the network of a ClusterUserDefinedNetwork.
//
// +kubebuilder:validation:XValidation:rule="self.topology == 'Layer3' ? has(self.layer3) : !has(self.layer3)",message="layer3 is required when topology is Layer3 and forbidden otherwise."
// +kubebuilder:validation:XValidation:rule="self.topology == 'Layer2' ? has(self.layer2) : !has(self.layer2)",message="layer2 is required when topology is Layer2 and forbidden otherwise."
// +kubebuilder:validation:XValidation:rule="self.topology == 'Localnet' ? has(self.localnet) : !has(self.localnet)",message="localnet is required when topology is Localnet and forbidden otherwise."
type NetworkSpec struct {
	// topology is Layer2 (one logical switch shared by all nodes), Layer3 (one
	// switch per node, routed) or Localnet (bridged to a physical network).
	//
	// +kubebuilder:validation:Enum=Layer2;Layer3;Localnet
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="topology is immutable."
	// +required
	Topology NetworkTopology `json:"topology"`

	// layer3 is the configuration of a Layer3 network.
	//
	// +optional
	Layer3 *Layer3Config `json:"layer3,omitempty"`

	// layer2 is the configuration of a Layer2 network; immutable once created.
	//
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="layer2 is immutable."
	// +optional
	Layer2 *Layer2Config `json:"layer2,omitempty"`

	// localnet is the configuration of a Localnet network; immutable once
	// created.
	//
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="localnet is immutable."
	// +optional
	Localnet *LocalnetConfig `json:"localnet,omitempty"`
}

// ClusterUserDefinedNetworkSpec is a network shared by the namespaces its
// selector matches.
type ClusterUserDefinedNetworkSpec struct {
	// namespaceSelector selects the namespaces the network is available in.
	//
	// +required
	NamespaceSelector metav1.LabelSelector `json:"namespaceSelector"`

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
