package app

import (
	"context"
	"flag"
	"io"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/kubevirt"
)

func parse(t *testing.T, args ...string) (*Options, error) {
	t.Helper()
	o := NewOptions()
	fs := flag.NewFlagSet("udnkit", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.BindFlags(fs)
	return o, fs.Parse(args)
}

func TestSelected(t *testing.T) {
	o, err := parse(t, "--controllers=admission, ipam,admission")
	if err != nil {
		t.Fatal(err)
	}
	got, err := o.Selected()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "admission" || got[1].Name != "ipam" {
		t.Errorf("selected %v, want admission and ipam once each", got)
	}
	o, _ = parse(t, "--controllers=admission,magic")
	if _, err := o.Selected(); err == nil || !strings.Contains(err.Error(), `unknown component "magic"`) || !strings.Contains(err.Error(), "admission") {
		t.Errorf("an unknown component should be named with the known ones: %v", err)
	}
	if o := NewOptions(); o.Controllers != strings.Join(o.Names(), ",") {
		t.Errorf("default --controllers %q is not every component", o.Controllers)
	}
}

// The cluster's facts are one set of flags, parsed into the one
// ClusterConfig every component is handed.
func TestClusterFlagsParsedOnce(t *testing.T) {
	o := NewOptions()
	fs := flag.NewFlagSet("udnkit", flag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse([]string{"--preconfigured-udn-addresses-enable", "--service-cidrs=10.43.0.0/16"}); err != nil {
		t.Fatal(err)
	}
	if !o.Cluster.PreconfiguredUDNAddresses || len(o.Cluster.ServiceCIDRs) != 1 || o.Cluster.ServiceCIDRs[0].String() != "10.43.0.0/16" {
		t.Errorf("cluster config = %+v", o.Cluster)
	}
	for _, gone := range []string{"k8s-service-cidrs", "udn-transit-subnets"} {
		if fs.Lookup(gone) != nil {
			t.Errorf("--%s is an alias of a cluster fact; there must be one flag per fact", gone)
		}
	}
	if err := fs.Set("cluster-subnets", "not-a-cidr"); err == nil {
		t.Error("a bad CIDR flag value was accepted")
	}
}

// Half an OVN configuration is a mistake the manager refuses at start-up;
// none at all leaves the dataplane idle (checked against an apiserver in the
// chart's install test).
func TestDataplaneNeedsBothOVNAddresses(t *testing.T) {
	o, err := parse(t, "--controllers=dataplane", "--ovn-nb-address=unix:/run/ovn/ovnnb_db.sock",
		"--metrics-bind-address=0", "--health-probe-bind-address=0")
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(context.Background(), &rest.Config{Host: "http://127.0.0.1:1"}, o)
	if err == nil || !strings.Contains(err.Error(), "needs both --ovn-nb-address and --ovn-sb-address") {
		t.Errorf("only --ovn-nb-address: err = %v", err)
	}
	o, _ = parse(t, "--controllers=dataplane", "--ovn-nb-address=ssl:10.0.0.1:6641", "--ovn-sb-address=ssl:10.0.0.1:6642",
		"--metrics-bind-address=0", "--health-probe-bind-address=0")
	if _, err := New(context.Background(), &rest.Config{Host: "http://127.0.0.1:1"}, o); err == nil ||
		!strings.Contains(err.Error(), "--ovn-client-cert") {
		t.Errorf("ssl: without a client certificate: err = %v", err)
	}
	o, _ = parse(t, "--controllers=dataplane", "--ovn-nb-address=unix:/nb.sock", "--ovn-sb-address=unix:/sb.sock", "--dataplane-workers=0",
		"--metrics-bind-address=0", "--health-probe-bind-address=0")
	if _, err := New(context.Background(), &rest.Config{Host: "http://127.0.0.1:1"}, o); err == nil ||
		!strings.Contains(err.Error(), "--dataplane-workers=0: the dataplane needs at least 1 worker") {
		t.Errorf("--dataplane-workers=0: err = %v", err)
	}
}

// The informers keep of a pod and a node exactly what udnkit reads, and
// pass on what is no pod or node (a deletion tombstone) with only its
// managedFields stripped.
func TestCacheTrimsPodsAndNodes(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "n", Labels: map[string]string{kubevirt.LabelVM: "vm1"},
			Annotations:   map[string]string{ovnk.AnnotationPodNetworks: "{}"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec: corev1.PodSpec{NodeName: "node-a", HostNetwork: true, Containers: []corev1.Container{{Name: "c", Image: "i"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	got, err := trimPod(pod.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	want := pod.DeepCopy()
	want.ManagedFields = nil
	want.Spec = corev1.PodSpec{NodeName: "node-a", HostNetwork: true}
	want.Status = corev1.PodStatus{Phase: corev1.PodRunning}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("trimmed pod = %+v, want %+v", got, want)
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a", Annotations: map[string]string{ovnk.AnnotationNodeID: "4"}},
		Spec:       corev1.NodeSpec{PodCIDR: "10.244.1.0/24", Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "172.18.0.2"}},
			Images: []corev1.ContainerImage{{Names: []string{"big"}, SizeBytes: 1 << 30}}},
	}
	gotNode, err := trimNode(node.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	wantNode := &corev1.Node{ObjectMeta: node.ObjectMeta, Status: corev1.NodeStatus{Addresses: node.Status.Addresses}}
	if !equality.Semantic.DeepEqual(gotNode, wantNode) {
		t.Errorf("trimmed node = %+v, want %+v", gotNode, wantNode)
	}
	tombstone := toolscache.DeletedFinalStateUnknown{Key: "n/p", Obj: pod}
	if out, err := trimPod(tombstone); err != nil || out.(toolscache.DeletedFinalStateUnknown).Key != "n/p" {
		t.Errorf("tombstone: %v, %v", out, err)
	}
}

// The legacy Layer2 takeover is --adopt-legacy-layer2 ("migration" means
// KubeVirt live migration only); the earlier name still parses, so existing
// deployments keep starting.
func TestAdoptLegacyLayer2KeepsItsEarlierName(t *testing.T) {
	for _, arg := range []string{"--adopt-legacy-layer2", "--migrate-legacy-layer2"} {
		if _, err := parse(t, arg); err != nil {
			t.Errorf("%s: %v", arg, err)
		}
	}
	fs := flag.NewFlagSet("udnkit", flag.ContinueOnError)
	NewOptions().BindFlags(fs)
	if f := fs.Lookup("migrate-legacy-layer2"); f == nil || !strings.Contains(f.Usage, "deprecated") {
		t.Errorf("--migrate-legacy-layer2 should be marked deprecated: %+v", f)
	}
}
