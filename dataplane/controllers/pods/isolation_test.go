package pods

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

// withDefaultRole is a pod on node whose k8s.ovn.org/pod-networks has the
// default network's entry with role.
func withDefaultRole(name, node, role string) *testobj.PodWrapper {
	return testobj.MakePod("ns", name).Node(node).Annotation(ovnk.AnnotationPodNetworks,
		`{"default":{"ip_addresses":["10.244.2.9/24"],"mac_address":"0a:58:0a:f4:02:09","role":"`+role+`"}}`)
}

// The isolation members are the default-network ports (<namespace>_<pod>)
// of the zone's pods with role infrastructure-locked, sorted; a pod of
// another zone's node, a host-network or finished pod, a pod on the
// default network and one whose annotation cannot be read are not.
func TestIsolationPorts(t *testing.T) {
	infra := podannotation.RoleInfrastructureLocked
	hostNet := withDefaultRole("host", "node-a", infra).Obj()
	hostNet.Spec.HostNetwork = true
	done := withDefaultRole("done", "node-a", infra).Obj()
	done.Status.Phase = corev1.PodSucceeded
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithIndex(&corev1.Pod{}, zone.PodNodeField, zone.PodNode).WithObjects(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}},
		withDefaultRole("pod-z", "node-a", infra).Obj(), withDefaultRole("pod-a", "node-a", infra).Obj(),
		withDefaultRole("remote", "node-b", infra).Obj(), withDefaultRole("plain", "node-a", podannotation.RolePrimary).Obj(),
		testobj.MakePod("ns", "unscheduled").Annotation(ovnk.AnnotationPodNetworks, `{"default":{"role":"`+infra+`"}}`).Obj(),
		testobj.MakePod("ns", "bad").Node("node-a").Annotation(ovnk.AnnotationPodNetworks, `{"default":`).Obj(),
		hostNet, done).Build()
	r := &Reconciler{Client: c, Local: func(n *corev1.Node) bool { return n.Name == "node-a" }}
	got, err := r.IsolationPorts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ns_pod-a", "ns_pod-z"}; !slices.Equal(got, want) {
		t.Errorf("isolation ports %v, want %v", got, want)
	}
}
