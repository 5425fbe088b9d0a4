package kubevirt

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// AnnotationMigrationTargetReady is set on a live migration's target pod
// once its domain is ready to take the VM's traffic
// (kubevirtv1.MigrationTargetReadyTimestamp).
const AnnotationMigrationTargetReady = "kubevirt.io/migration-target-ready-timestamp"

// PortsEnabled is the enabled column upstream gives the logical switch
// ports of a namespace's VM pods during a live migration
// (pkg/kubevirt/pod.go DiscoverLiveMigrationStatus and
// base_network_controller_user_defined.go addLogicalPortToNetworkForNAD),
// by pod name; pods of no migration are absent (enabled stays unset).
// Per VM (LabelVMName), its pods ordered by creation (then name, where
// upstream's order is the lister's), the newest is the
// target: with a living source, the target is enabled once its domain is
// ready (AnnotationMigrationTargetReady) and disabled before, and the source
// is disabled once the target is ready; a lone target that is ready is
// enabled; a source whose target finished is enabled again (the migration
// failed).
func PortsEnabled(pods []corev1.Pod) map[string]bool {
	byVM := map[string][]*corev1.Pod{}
	for i := range pods {
		if vm := pods[i].Labels[LabelVMName]; vm != "" {
			byVM[vm] = append(byVM[vm], &pods[i])
		}
	}
	out := map[string]bool{}
	for _, vmPods := range byVM {
		slices.SortFunc(vmPods, func(a, b *corev1.Pod) int {
			if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
				return c
			}
			return strings.Compare(a.Name, b.Name)
		})
		target := vmPods[len(vmPods)-1]
		var living []*corev1.Pod
		for _, p := range vmPods {
			if !finished(p) {
				living = append(living, p)
			}
		}
		ready := target.Annotations[AnnotationMigrationTargetReady] != ""
		switch {
		case len(living) == 0 || len(living) > 2:
			// No migration, or more pods than upstream accepts (it errors).
		case finished(target):
			out[living[0].Name] = true
		case len(living) == 1:
			if ready {
				out[target.Name] = true
			}
		default:
			out[target.Name] = ready
			if ready {
				out[living[0].Name] = false
			}
		}
	}
	return out
}

func finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}
