package netconf

// DefaultNADConfig is the CNI config of the ovn-kubernetes/default NAD stub
// (OKEP-5233): Multus resolves a default-network NetworkSelectionElement
// against it and OVN-Kubernetes serves it. The bytes are the ones the stub
// is created with and restored to; a stub whose config differs is rewritten.
const DefaultNADConfig = `{"cniVersion": "0.4.0", "name": "ovn-kubernetes", "type": "ovn-k8s-cni-overlay"}`
