// Package testobj builds the API objects the tests create, in the
// `MakeX(...).Option(...).Obj()` style: each builder starts from the
// smallest object the API admits and each option changes one thing, so a
// test names only what it is about.
//
// It is imported only by tests; it depends on apis and ovnk, never on a
// stage (webhooks, reconcilers, dataplane).
package testobj

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
)

// Layer2 is a Layer2 network spec with the given role and subnets.
func Layer2(role udnv1.NetworkRole, subnets ...udnv1.CIDR) udnv1.NetworkSpec {
	return udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2,
		Layer2: &udnv1.Layer2Config{Role: role, Subnets: subnets}}
}

// Layer3 is a Layer3 network spec with the given role and cluster subnets,
// each split into /24 host subnets.
func Layer3(role udnv1.NetworkRole, cidrs ...udnv1.CIDR) udnv1.NetworkSpec {
	return Layer3Hosts(role, 24, cidrs...)
}

// Layer3Hosts is Layer3 with host subnets of prefix length hostSubnet.
func Layer3Hosts(role udnv1.NetworkRole, hostSubnet int32, cidrs ...udnv1.CIDR) udnv1.NetworkSpec {
	s := udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer3, Layer3: &udnv1.Layer3Config{Role: role}}
	for _, c := range cidrs {
		s.Layer3.Subnets = append(s.Layer3.Subnets, udnv1.Layer3Subnet{CIDR: c, HostSubnet: hostSubnet})
	}
	return s
}

// UDNWrapper builds a UserDefinedNetwork.
type UDNWrapper struct{ udnv1.UserDefinedNetwork }

// MakeUDN is a Secondary Layer2 UDN on 10.0.0.0/24, the smallest network the
// API admits.
func MakeUDN(namespace, name string) *UDNWrapper {
	w := &UDNWrapper{udnv1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}}
	return w.Spec(Layer2(udnv1.NetworkRoleSecondary, "10.0.0.0/24"))
}

// Spec replaces the network (topology and its config).
func (w *UDNWrapper) Spec(s udnv1.NetworkSpec) *UDNWrapper {
	w.UserDefinedNetwork.Spec = udnv1.UserDefinedNetworkSpec{Topology: s.Topology, Layer2: s.Layer2, Layer3: s.Layer3}
	return w
}

// Labels adds labels.
func (w *UDNWrapper) Labels(kv map[string]string) *UDNWrapper {
	w.ObjectMeta.Labels = merge(w.ObjectMeta.Labels, kv)
	return w
}

// Obj returns the object.
func (w *UDNWrapper) Obj() *udnv1.UserDefinedNetwork { return &w.UserDefinedNetwork }

// CUDNWrapper builds a ClusterUserDefinedNetwork.
type CUDNWrapper struct {
	udnv1.ClusterUserDefinedNetwork
}

// MakeCUDN is a Secondary Layer2 CUDN on 10.0.0.0/24 selecting the
// namespaces labelled kubernetes.io/metadata.name=name (none, usually).
func MakeCUDN(name string) *CUDNWrapper {
	w := &CUDNWrapper{udnv1.ClusterUserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Name: name}}}
	w.ClusterUserDefinedNetwork.Spec.NamespaceSelector = metav1.LabelSelector{
		MatchLabels: map[string]string{corev1.LabelMetadataName: name}}
	return w.Spec(Layer2(udnv1.NetworkRoleSecondary, "10.0.0.0/24"))
}

// Spec replaces the network.
func (w *CUDNWrapper) Spec(s udnv1.NetworkSpec) *CUDNWrapper {
	w.ClusterUserDefinedNetwork.Spec.Network = s
	return w
}

// Selector replaces the namespace selector.
func (w *CUDNWrapper) Selector(s metav1.LabelSelector) *CUDNWrapper {
	w.ClusterUserDefinedNetwork.Spec.NamespaceSelector = s
	return w
}

// SelectLabels selects the namespaces carrying every label in kv.
func (w *CUDNWrapper) SelectLabels(kv map[string]string) *CUDNWrapper {
	return w.Selector(metav1.LabelSelector{MatchLabels: kv})
}

// Obj returns the object.
func (w *CUDNWrapper) Obj() *udnv1.ClusterUserDefinedNetwork { return &w.ClusterUserDefinedNetwork }

// NamespaceWrapper builds a Namespace.
type NamespaceWrapper struct{ corev1.Namespace }

// MakeNamespace is a namespace labelled kubernetes.io/metadata.name=name, as
// the apiserver labels every namespace.
func MakeNamespace(name string) *NamespaceWrapper {
	return &NamespaceWrapper{corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{corev1.LabelMetadataName: name}}}}
}

// Labels adds labels.
func (w *NamespaceWrapper) Labels(kv map[string]string) *NamespaceWrapper {
	w.ObjectMeta.Labels = merge(w.ObjectMeta.Labels, kv)
	return w
}

// Primary adds the label that asks for a Primary UDN
// (k8s.ovn.org/primary-user-defined-network).
func (w *NamespaceWrapper) Primary() *NamespaceWrapper {
	return w.Labels(map[string]string{ovnk.LabelPrimaryUserDefinedNetwork: ""})
}

// Obj returns the object.
func (w *NamespaceWrapper) Obj() *corev1.Namespace { return &w.Namespace }

func merge(into, kv map[string]string) map[string]string {
	if len(kv) == 0 {
		return into
	}
	if into == nil {
		into = make(map[string]string, len(kv))
	}
	for k, v := range kv {
		into[k] = v
	}
	return into
}
