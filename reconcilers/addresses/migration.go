package addresses

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/udnkit/udnkit/ovnk/kubevirt"
)

// vmInfo is a virt-launcher pod's part in its VM's life.
type vmInfo struct {
	name    string
	node    string
	created time.Time
	// seq breaks ties between equal creation timestamps (second precision).
	seq uint64
	// running says the VM runs in this pod (kubevirt.io/nodeName or the
	// migration-target start timestamp is set).
	running bool
}

// before orders a VM's pods by creation, then by when the reconciler met them.
func (v vmInfo) before(o vmInfo) bool {
	return v.created.Before(o.created) || v.created.Equal(o.created) && v.seq < o.seq
}

// vmOf returns the pod's VM when the VM may live-migrate over the pod network.
func vmOf(pod *corev1.Pod) vmInfo {
	v, ok := kubevirt.VMPodOf(pod)
	if !ok {
		return vmInfo{}
	}
	return vmInfo{name: v.VM, node: v.Node, created: v.Created, running: v.Running}
}

// vmOrigins rebuilds, after a restart, the node that owns each VM's
// addresses: what its pods say (kubevirt.AnnotationAddressOwnerNode), else the
// node of its oldest pod.
func vmOrigins(pods []corev1.Pod, records map[types.NamespacedName]podRecord) map[string]string {
	out := map[string]string{}
	oldest := map[string]vmInfo{}
	for i := range pods {
		rec, ok := records[types.NamespacedName{Namespace: pods[i].Namespace, Name: pods[i].Name}]
		if !ok || rec.vm.name == "" {
			continue
		}
		if node := pods[i].Annotations[kubevirt.AnnotationAddressOwnerNode]; node != "" {
			out[rec.owner] = node
		} else if o, ok := oldest[rec.owner]; !ok || rec.vm.before(o) {
			oldest[rec.owner] = rec.vm
		}
	}
	for owner, vm := range oldest {
		if _, published := out[owner]; !published {
			out[owner] = vm.node
		}
	}
	return out
}
