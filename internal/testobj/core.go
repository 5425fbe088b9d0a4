package testobj

import (
	"net/netip"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/kubevirt"
)

// PodImage is the image of MakePod's one container: nothing pulls it (no
// kubelet runs in the suites).
const PodImage = "registry.example/app:1"

// PodWrapper builds a Pod.
type PodWrapper struct{ corev1.Pod }

// MakePod is an unscheduled pod with one container, the smallest pod the
// apiserver admits.
func MakePod(namespace, name string) *PodWrapper {
	return &PodWrapper{corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: PodImage}}}}}
}

// Node schedules the pod on node (spec.nodeName).
func (w *PodWrapper) Node(node string) *PodWrapper {
	w.Spec.NodeName = node
	return w
}

// Running sets status.phase Running, as a kubelet would.
func (w *PodWrapper) Running() *PodWrapper {
	w.Status.Phase = corev1.PodRunning
	return w
}

// Labels adds labels.
func (w *PodWrapper) Labels(kv map[string]string) *PodWrapper {
	w.ObjectMeta.Labels = merge(w.ObjectMeta.Labels, kv)
	return w
}

// Annotations adds annotations.
func (w *PodWrapper) Annotations(kv map[string]string) *PodWrapper {
	w.ObjectMeta.Annotations = merge(w.ObjectMeta.Annotations, kv)
	return w
}

// Annotation adds one annotation.
func (w *PodWrapper) Annotation(key, value string) *PodWrapper {
	return w.Annotations(map[string]string{key: value})
}

// VM makes the pod a virt-launcher pod of KubeVirt VM vm (its
// vm.kubevirt.io/name label); "" leaves the pod as it is.
func (w *PodWrapper) VM(vm string) *PodWrapper {
	if vm == "" {
		return w
	}
	return w.Labels(map[string]string{kubevirt.LabelVMName: vm})
}

// Created sets the creation timestamp (the apiserver overwrites it on create).
func (w *PodWrapper) Created(t time.Time) *PodWrapper {
	w.CreationTimestamp = metav1.NewTime(t)
	return w
}

// Obj returns the object.
func (w *PodWrapper) Obj() *corev1.Pod { return &w.Pod }

// NADWrapper builds a NetworkAttachmentDefinition.
type NADWrapper struct {
	nadv1.NetworkAttachmentDefinition
}

// MakeNAD is a NAD with no config.
func MakeNAD(namespace, name string) *NADWrapper {
	return &NADWrapper{nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}}
}

// Config sets the CNI config (spec.config).
func (w *NADWrapper) Config(config string) *NADWrapper {
	w.Spec.Config = config
	return w
}

// Labels adds labels.
func (w *NADWrapper) Labels(kv map[string]string) *NADWrapper {
	w.ObjectMeta.Labels = merge(w.ObjectMeta.Labels, kv)
	return w
}

// Annotations adds annotations.
func (w *NADWrapper) Annotations(kv map[string]string) *NADWrapper {
	w.ObjectMeta.Annotations = merge(w.ObjectMeta.Annotations, kv)
	return w
}

// Obj returns the object.
func (w *NADWrapper) Obj() *nadv1.NetworkAttachmentDefinition { return &w.NetworkAttachmentDefinition }

// NodeWrapper builds a Node.
type NodeWrapper struct{ corev1.Node }

// MakeNode is a node with no annotations and no addresses.
func MakeNode(name string) *NodeWrapper {
	return &NodeWrapper{corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

// Annotations adds annotations.
func (w *NodeWrapper) Annotations(kv map[string]string) *NodeWrapper {
	w.ObjectMeta.Annotations = merge(w.ObjectMeta.Annotations, kv)
	return w
}

// Annotation adds one annotation.
func (w *NodeWrapper) Annotation(key, value string) *NodeWrapper {
	return w.Annotations(map[string]string{key: value})
}

// InternalIPs appends status addresses of type InternalIP.
func (w *NodeWrapper) InternalIPs(ips ...netip.Addr) *NodeWrapper {
	for _, ip := range ips {
		w.Status.Addresses = append(w.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip.String()})
	}
	return w
}

// Obj returns the object.
func (w *NodeWrapper) Obj() *corev1.Node { return &w.Node }

// Managed adds the label udnkit puts on the NADs it writes
// (k8s.ovn.org/user-defined-network).
func (w *NADWrapper) Managed() *NADWrapper {
	return w.Labels(map[string]string{ovnk.LabelUserDefinedNetwork: ""})
}
