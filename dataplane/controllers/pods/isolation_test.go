package pods

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/udnkit/udnkit/dataplane/controllers/internal/ctrltest"
	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/dataplane/topology/policy"
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
	if want := []string{"ns_pod-a", "ns_pod-z"}; !slices.Equal(portsOf(got), want) {
		t.Errorf("isolation ports %v, want %v", got, want)
	}
}

// portsOf are the members' ports.
func portsOf(ms []policy.IsolationMember) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Port
	}
	return out
}

// Each member carries its pod's k8s.ovn.org/open-default-ports; a pod
// whose annotation is malformed stays a member with none open and gets a
// Warning Event naming the annotation and the broken rule.
func TestIsolationPortsOpenPorts(t *testing.T) {
	infra := podannotation.RoleInfrastructureLocked
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithIndex(&corev1.Pod{}, zone.PodNodeField, zone.PodNode).WithObjects(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}},
		withDefaultRole("web", "node-a", infra).Annotation(ovnk.AnnotationOpenDefaultPorts, `[{"protocol":"tcp","port":80},{"protocol":"icmp"}]`).Obj(),
		withDefaultRole("bad", "node-a", infra).Annotation(ovnk.AnnotationOpenDefaultPorts, `[{"protocol":"tcp"}]`).Obj(),
		withDefaultRole("closed", "node-a", infra).Obj()).Build()
	rec := events.NewFakeRecorder(10)
	r := &Reconciler{Client: c, Recorder: rec}
	got, err := r.IsolationPorts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	eighty := 80
	want := []policy.IsolationMember{{Port: "ns_bad", Pod: "ns/bad"}, {Port: "ns_closed", Pod: "ns/closed"},
		{Port: "ns_web", Pod: "ns/web", OpenPorts: []ovnk.OpenPort{{Protocol: "tcp", Port: &eighty}, {Protocol: "icmp"}}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("members %+v, want %+v", got, want)
	}
	select {
	case e := <-rec.Events:
		for _, w := range []string{corev1.EventTypeWarning, ReasonOpenPortsInvalid, ovnk.AnnotationOpenDefaultPorts, "port is required for tcp protocol", "stays closed"} {
			if !strings.Contains(e, w) {
				t.Errorf("event %q lacks %q", e, w)
			}
		}
	default:
		t.Fatal("no Event for the malformed annotation")
	}
	if len(rec.Events) != 0 {
		t.Errorf("%d more Events: only the malformed pod gets one", len(rec.Events))
	}

	// Listed again (another network's reconcile), the same malformed
	// value is not warned of again; a different one is.
	if _, err := r.IsolationPorts(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(rec.Events) != 0 {
		t.Errorf("the same malformed annotation warned of twice: %q", <-rec.Events)
	}
	bad := &corev1.Pod{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "bad"}, bad); err != nil {
		t.Fatal(err)
	}
	bad.Annotations[ovnk.AnnotationOpenDefaultPorts] = `[{"protocol":"gre"}]`
	if err := c.Update(context.Background(), bad); err != nil {
		t.Fatal(err)
	}
	if _, err := r.IsolationPorts(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(rec.Events) != 1 || !strings.Contains(<-rec.Events, "invalid protocol gre") {
		t.Error("a changed malformed annotation: no new Event")
	}
}

// The ports' sweep reads a network's NADs through zone.AnyNetworkField:
// NetworkName must name each NAD as the index keys it.
func TestNetworkNameAgreesWithTheIndex(t *testing.T) {
	ctrltest.AgreesWithIndex(t, "NetworkName", NetworkName, zone.AnyNetwork)
}
