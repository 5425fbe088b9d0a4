// Package v1 holds the k8s.ovn.org/v1 UserDefinedNetwork and
// ClusterUserDefinedNetwork API. Field names and JSON tags follow upstream
// OVN-Kubernetes so that manifests written for it apply unchanged; the
// validation rules are stricter where production use has shown it necessary
// (see the CEL rules on each type).
//
// +kubebuilder:object:generate=true
// +groupName=k8s.ovn.org
package v1
