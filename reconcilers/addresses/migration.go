package addresses

import (
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// KubeVirt names the live-migration design reads.
const (
	// LabelVM names the VM a virt-launcher pod runs.
	LabelVM = "kubevirt.io/vm"
	// AnnotationAllowLiveMigration marks a VM whose pod-network addresses
	// follow it across live migration.
	AnnotationAllowLiveMigration = "kubevirt.io/allow-pod-bridge-network-live-migration"
	// KeyNodeName is set on the target pod once the VM runs there.
	KeyNodeName = "kubevirt.io/nodeName"
	// AnnotationMigrationTargetStart is set on the target pod when it takes
	// traffic before the migration ends (post-copy).
	AnnotationMigrationTargetStart = "kubevirt.io/migration-target-start-timestamp"
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
	name := pod.Labels[LabelVM]
	if _, ok := pod.Annotations[AnnotationAllowLiveMigration]; !ok || name == "" {
		return vmInfo{}
	}
	_, l := pod.Labels[KeyNodeName]
	_, a := pod.Annotations[KeyNodeName]
	_, t := pod.Annotations[AnnotationMigrationTargetStart]
	return vmInfo{name: name, node: pod.Spec.NodeName, created: pod.CreationTimestamp.Time, running: l || a || t}
}

// vmOrigins takes, after a restart, the node of each VM's oldest pod as the
// node that owns its addresses.
func vmOrigins(pods []corev1.Pod, records map[types.NamespacedName]podRecord) map[string]string {
	out := map[string]string{}
	oldest := map[string]vmInfo{}
	for _, rec := range records {
		if rec.vm.name == "" {
			continue
		}
		if o, ok := oldest[rec.owner]; !ok || rec.vm.before(o) {
			oldest[rec.owner], out[rec.owner] = rec.vm, rec.vm.node
		}
	}
	return out
}

// MigratedVM is a VM whose addresses run on a node that does not own them,
// for the dataplane's point-to-point routes.
type MigratedVM struct {
	// Network is the network's ID: udn/<namespace>/<name> or cudn/<name>.
	Network   string
	Namespace string
	VM        string
	IPs       []netip.Prefix
	// OwnerNode is where the addresses were allocated; CurrentNode is where
	// the VM runs now.
	OwnerNode   string
	CurrentNode string
}

// MigratedVMs lists the VMs now running away from the node that owns their
// addresses. The VM runs in its newest pod that kubevirt marked running
// (kubevirt.io/nodeName or kubevirt.io/migration-target-start-timestamp),
// otherwise in its oldest pod.
func (r *Reconciler) MigratedVMs() []MigratedVM {
	r.mu.Lock()
	defer r.mu.Unlock()
	type where struct {
		network, owner string
		current        vmInfo
		oldest         vmInfo
	}
	vms := map[string]*where{}
	for _, rec := range r.pods {
		if rec.vm.name == "" {
			continue
		}
		k := rec.network + "|" + rec.owner
		w := vms[k]
		if w == nil {
			w = &where{network: rec.network, owner: rec.owner, oldest: rec.vm}
			vms[k] = w
		}
		if rec.vm.before(w.oldest) {
			w.oldest = rec.vm
		}
		if rec.vm.running && (w.current.name == "" || w.current.before(rec.vm)) {
			w.current = rec.vm
		}
	}
	var out []MigratedVM
	for _, w := range vms {
		st := r.networks[w.network]
		if st == nil {
			continue
		}
		current := w.current
		if current.name == "" {
			current = w.oldest
		}
		origin := st.vmOrigin[w.owner]
		alloc, ok := st.pool.Lookup(w.owner)
		if !ok || origin == "" || origin == current.node {
			continue
		}
		ns := strings.SplitN(w.owner, "/", 3)[1]
		out = append(out, MigratedVM{Network: w.network, Namespace: ns, VM: current.name, IPs: alloc.IPs, OwnerNode: origin, CurrentNode: current.node})
	}
	slices.SortFunc(out, func(a, b MigratedVM) int { return compare(a.Network+a.Namespace+a.VM, b.Network+b.Namespace+b.VM) })
	return out
}
