package kubevirt

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func vmPod(name string, age int, ready bool, phase corev1.PodPhase) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelVMName: "vm1"},
		CreationTimestamp: metav1.NewTime(time.Unix(1000+int64(age), 0))}, Status: corev1.PodStatus{Phase: phase}}
	if ready {
		p.Annotations = map[string]string{AnnotationMigrationTargetReady: "2026-01-01T00:00:00Z"}
	}
	return p
}

// The states of upstream's DiscoverLiveMigrationStatus and the enabled
// column each gives the VM's ports.
func TestPortsEnabled(t *testing.T) {
	run := corev1.PodRunning
	for name, c := range map[string]struct {
		pods []corev1.Pod
		want string
	}{
		"one pod, no migration":       {[]corev1.Pod{vmPod("src", 0, false, run)}, "map[]"},
		"in progress":                 {[]corev1.Pod{vmPod("src", 0, false, run), vmPod("dst", 1, false, run)}, "map[dst:false]"},
		"target domain ready":         {[]corev1.Pod{vmPod("src", 0, false, run), vmPod("dst", 1, true, run)}, "map[dst:true src:false]"},
		"source gone, target ready":   {[]corev1.Pod{vmPod("src", 0, false, corev1.PodSucceeded), vmPod("dst", 1, true, run)}, "map[dst:true]"},
		"source gone, target unready": {[]corev1.Pod{vmPod("src", 0, false, corev1.PodSucceeded), vmPod("dst", 1, false, run)}, "map[]"},
		"target failed":               {[]corev1.Pod{vmPod("src", 0, false, run), vmPod("dst", 1, true, corev1.PodFailed)}, "map[src:true]"},
		"too many pods":               {[]corev1.Pod{vmPod("a", 0, false, run), vmPod("b", 1, false, run), vmPod("c", 2, false, run)}, "map[]"},
	} {
		if got := fmt.Sprint(PortsEnabled(c.pods)); got != c.want {
			t.Errorf("%s: %s, want %s", name, got, c.want)
		}
	}
	plain := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	if got := PortsEnabled([]corev1.Pod{plain, plain}); len(got) != 0 {
		t.Errorf("pods of no VM: %v", got)
	}
}
