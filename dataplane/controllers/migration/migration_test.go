package migration

import (
	"context"
	"slices"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/udnkit/udnkit/dataplane/controllers/internal/ctrltest"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/kubevirt"
)

// A pod event reaches the live-migration reconciler only for KubeVirt's VM
// pods, as requests for udnkit's NADs of the pod's namespace alone: its
// network's routes, not every network's.
func TestLiveMigrationRequestsFollowVMPods(t *testing.T) {
	scheme := ctrltest.NADScheme(t)
	nad := func(ns, name string, udn bool) *nadv1.NetworkAttachmentDefinition {
		n := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if udn {
			n.Labels = map[string]string{ovnk.LabelUserDefinedNetwork: ""}
		}
		return n
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		nad("a", "net1", true), nad("a", "cudn", true), nad("a", "macvlan", false), nad("b", "net1", true)).Build()
	r := &Reconciler{Client: c}
	pod := func(ns string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p", Labels: labels}}
	}
	if got := r.vmPodRequests(context.Background(), pod("a", map[string]string{"app": "web"})); len(got) != 0 {
		t.Errorf("a pod that is no VM queued %v", got)
	}
	got := r.vmPodRequests(context.Background(), pod("a", map[string]string{kubevirt.LabelVM: "vm1"}))
	var keys []string
	for _, req := range got {
		keys = append(keys, req.String())
	}
	slices.Sort(keys)
	if want := []string{"a/cudn", "a/net1"}; !slices.Equal(keys, want) {
		t.Errorf("a VM pod in a queued %v, want %v", keys, want)
	}
}
