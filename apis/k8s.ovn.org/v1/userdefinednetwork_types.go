package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// UserDefinedNetworkSpec is the network of one namespace.
//
// +kubebuilder:validation:XValidation:rule="self.topology == 'Layer3' ? has(self.layer3) : !has(self.layer3)",message="spec.layer3 is required when topology is Layer3 and forbidden otherwise."
// +kubebuilder:validation:XValidation:rule="self.topology == 'Layer2' ? has(self.layer2) : !has(self.layer2)",message="spec.layer2 is required when topology is Layer2 and forbidden otherwise."
type UserDefinedNetworkSpec struct {
	// topology is Layer2 (one logical switch shared by all nodes) or Layer3
	// (one switch per node, routed).
	//
	// +kubebuilder:validation:Enum=Layer2;Layer3
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
}

// UserDefinedNetwork is a network for the pods of its namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=userdefinednetworks,scope=Namespaced,shortName=udn,categories=ovn;udnkit
// +kubebuilder:printcolumn:name="Topology",type=string,JSONPath=`.spec.topology`
// +kubebuilder:printcolumn:name="Role",type=string,JSONPath=`.spec.*.role`
// +kubebuilder:printcolumn:name="Subnets",type=string,JSONPath=`.spec.*.subnets`
// +kubebuilder:printcolumn:name="Created",type=string,JSONPath=`.status.conditions[?(@.type=="NetworkCreated")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="NetworkCreated")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type UserDefinedNetwork struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired network.
	//
	// +required
	Spec UserDefinedNetworkSpec `json:"spec"`

	// status is the observed state of the network.
	//
	// +optional
	Status NetworkStatus `json:"status,omitempty"`
}

// UserDefinedNetworkList is a list of UserDefinedNetworks.
//
// +kubebuilder:object:root=true
type UserDefinedNetworkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []UserDefinedNetwork `json:"items"`
}

func init() {
	SchemeBuilder.Register(&UserDefinedNetwork{}, &UserDefinedNetworkList{})
}
