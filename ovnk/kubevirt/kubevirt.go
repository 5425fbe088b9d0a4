// Package kubevirt is what udnkit reads of KubeVirt's pods, as upstream's
// pkg/kubevirt: the labels and annotations naming a pod's VM and its live
// migration, and which of a VM's pods is the current one.
package kubevirt

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KubeVirt names the live-migration design reads.
const (
	// LabelVM names the VM a virt-launcher pod runs.
	LabelVM = "kubevirt.io/vm"
	// LabelVMName is the label KubeVirt itself puts on every virt-launcher
	// pod: the VM's name (kubevirtv1.VirtualMachineNameLabel).
	LabelVMName = "vm.kubevirt.io/name"
	// AnnotationAllowLiveMigration marks a VM whose pod-network addresses
	// follow it across live migration.
	AnnotationAllowLiveMigration = "kubevirt.io/allow-pod-bridge-network-live-migration"
	// KeyNodeName is set on the target pod once the VM runs there.
	KeyNodeName = "kubevirt.io/nodeName"
	// AnnotationMigrationTargetStart is set on the target pod when it takes
	// traffic before the migration ends (post-copy).
	AnnotationMigrationTargetStart = "kubevirt.io/migration-target-start-timestamp"
	// AnnotationAddressOwnerNode is written by udnkit's address reconciler on
	// every pod of a live-migratable VM: the node where the VM's addresses
	// were first allocated. The dataplane (possibly another process) reads it
	// to route a VM that runs elsewhere (kubevirt point-to-point routing).
	AnnotationAddressOwnerNode = "k8s.ovn.org/udnkit-address-owner-node"
)

// VMNameOf is the VM a pod runs, from LabelVM or else LabelVMName; "" for
// a pod of no VM. The pods of one VM (its source and target during a live
// migration) share it.
func VMNameOf(pod *corev1.Pod) string {
	if name := pod.Labels[LabelVM]; name != "" {
		return name
	}
	return pod.Labels[LabelVMName]
}

// VMOwnerOf is the VM an object (an IPAMClaim) was made for: its owner
// reference of kind VirtualMachine or VirtualMachineInstance (kubevirt.io),
// as KubeVirt's IPAM controller writes it; "" when it names none.
func VMOwnerOf(refs []metav1.OwnerReference) string {
	for _, ref := range refs {
		if (ref.Kind == "VirtualMachine" || ref.Kind == "VirtualMachineInstance") && strings.HasPrefix(ref.APIVersion, "kubevirt.io/") {
			return ref.Name
		}
	}
	return ""
}

// VMPod is a virt-launcher pod's part in its VM's life.
type VMPod struct {
	VM      string
	Pod     string
	Node    string
	Created time.Time
	// Running says the VM runs in this pod (kubevirt.io/nodeName or the
	// migration-target start timestamp is set).
	Running bool
}

// VMPodOf returns the pod's part when its VM may live-migrate over the pod
// network (the kubevirt.io/vm label and the allow annotation).
func VMPodOf(pod *corev1.Pod) (VMPod, bool) {
	name := pod.Labels[LabelVM]
	if _, ok := pod.Annotations[AnnotationAllowLiveMigration]; !ok || name == "" {
		return VMPod{}, false
	}
	_, l := pod.Labels[KeyNodeName]
	_, a := pod.Annotations[KeyNodeName]
	_, t := pod.Annotations[AnnotationMigrationTargetStart]
	return VMPod{VM: name, Pod: pod.Name, Node: pod.Spec.NodeName, Created: pod.CreationTimestamp.Time, Running: l || a || t}, true
}

// Before orders a VM's pods by creation, then by name.
func (v VMPod) Before(o VMPod) bool {
	return v.Created.Before(o.Created) || v.Created.Equal(o.Created) && v.Pod < o.Pod
}

// CurrentVMPod is the pod the VM runs in when KubeVirt marked one: its
// newest pod marked running (kubevirt.io/nodeName or the migration-target
// start timestamp). Without a mark the VM has not moved: ok is false.
func CurrentVMPod(pods []VMPod) (current VMPod, ok bool) {
	for _, p := range pods {
		if p.Running && (!ok || current.Before(p)) {
			current, ok = p, true
		}
	}
	return current, ok
}

// MigratedVM is a VM that runs on a node other than the one owning its
// addresses.
type MigratedVM struct {
	Namespace, VM string
	// Pod is the pod the VM runs in now (its k8s.ovn.org/pod-networks holds
	// the VM's addresses).
	Pod                    *corev1.Pod
	OwnerNode, CurrentNode string
}

// MigratedVMs computes, from pods alone, the VMs away from their owner node:
// per VM (namespace and kubevirt.io/vm), the owner node its pods carry in
// AnnotationAddressOwnerNode and the node of the pod KubeVirt marked as the
// one it runs in (CurrentVMPod). Pods without the owner annotation (not yet addressed) and
// finished pods do not count.
func MigratedVMs(pods []corev1.Pod) []MigratedVM {
	type vmKey struct{ ns, vm string }
	byVM := map[vmKey][]int{}
	var order []vmKey
	for i := range pods {
		p := &pods[i]
		if p.Annotations[AnnotationAddressOwnerNode] == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		v, ok := VMPodOf(p)
		if !ok {
			continue
		}
		k := vmKey{p.Namespace, v.VM}
		if _, seen := byVM[k]; !seen {
			order = append(order, k)
		}
		byVM[k] = append(byVM[k], i)
	}
	var out []MigratedVM
	for _, k := range order {
		idx := byVM[k]
		vps := make([]VMPod, len(idx))
		for j, i := range idx {
			vps[j], _ = VMPodOf(&pods[i])
		}
		cur, ok := CurrentVMPod(vps)
		if !ok {
			continue
		}
		var pod *corev1.Pod
		for _, i := range idx {
			if pods[i].Name == cur.Pod {
				pod = &pods[i]
			}
		}
		owner := pod.Annotations[AnnotationAddressOwnerNode]
		if owner != cur.Node && cur.Node != "" {
			out = append(out, MigratedVM{Namespace: k.ns, VM: k.vm, Pod: pod, OwnerNode: owner, CurrentNode: cur.Node})
		}
	}
	return out
}
