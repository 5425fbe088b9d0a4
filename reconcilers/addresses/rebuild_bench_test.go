package addresses

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
	"github.com/udnkit/udnkit/reconcilers/addresses/ipalloc"
	"github.com/udnkit/udnkit/reconcilers/idalloc"
)

// rebuildFixture is a dual-stack network and n pods annotated with
// distinct addresses, as a restart finds them.
func rebuildFixture(tb testing.TB, n int) (*primaryLayer2, []corev1.Pod) {
	tb.Helper()
	l2 := &udnv1.Layer2Config{Role: udnv1.NetworkRolePrimary, Subnets: udnv1.DualStackCIDRs{"10.60.0.0/16", "fd00:60::/64"}}
	net := &primaryLayer2{ref: networkRef{Namespace: "bench", Name: "tenant"}, spec: udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2, Layer2: l2}}
	cfg, err := poolConfig(net.spec, true)
	if err != nil {
		tb.Fatal(err)
	}
	src, err := ipalloc.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	pods := make([]corev1.Pod, n)
	for i := range pods {
		p := &pods[i]
		p.ObjectMeta = metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("p%d", i), UID: types.UID(fmt.Sprint(i))}
		p.Spec.NodeName = "node-a"
		a, err := src.Allocate(podOwner(p), ipalloc.Request{})
		if err != nil {
			tb.Fatal(err)
		}
		cluster := ovnk.DefaultClusterConfig()
		pn, err := podannotation.Layer2PrimaryPodNetwork(a.IPs, a.MAC, src.Gateways(), cluster.ServiceCIDRs, cluster.UDNJoinSubnets, podannotation.FirstPodTunnelID+i, "")
		if err != nil {
			tb.Fatal(err)
		}
		v, err := podannotation.WithPodNetwork(p.Annotations, net.ref.Key("bench"), pn)
		if err != nil {
			tb.Fatal(err)
		}
		p.Annotations = map[string]string{ovnk.AnnotationPodNetworks: v}
	}
	return net, pods
}

func rebuildOnce(tb testing.TB, net *primaryLayer2, pods []corev1.Pod) *netState {
	cfg, _ := poolConfig(net.spec, true)
	pool, err := ipalloc.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	st := &netState{ref: net.ref, cfg: cfg, pool: pool, tunnels: idalloc.NewIDAllocator("pod tunnel ID", podannotation.FirstPodTunnelID, podannotation.MaxPodTunnelID)}
	r := newReconciler(nil, nil, ovnk.DefaultClusterConfig())
	records, errs := r.rebuild(st, net, pods, nil)
	if len(errs) > 0 || len(records) != len(pods) {
		tb.Fatalf("rebuild: %d records, errors %v", len(records), errs)
	}
	return st
}

func TestRebuildRestoresEveryAnnotation(t *testing.T) {
	net, pods := rebuildFixture(t, 500)
	st := rebuildOnce(t, net, pods)
	if st.pool.Len() != 500 {
		t.Fatalf("restored %d owners, want 500", st.pool.Len())
	}
	// The next dynamic allocation is a fresh address.
	a, err := st.pool.Allocate("new", ipalloc.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if o := st.pool.OwnerOfIP(a.IPs[0].Addr()); o != "new" {
		t.Fatalf("owner %q", o)
	}
	for i := range pods {
		pn, _ := podNetwork(&pods[i], net.ref.Key("bench"))
		if pn.IPAddresses[0] == a.IPs[0].String() {
			t.Fatalf("after rebuild, %v was handed out again (held by %s)", a.IPs[0], pods[i].Name)
		}
	}
	// A duplicated annotation is refused, not double-counted.
	dup := pods[0].DeepCopy()
	dup.Name, dup.UID = "copy", "copy"
	_, errs := newReconciler(nil, nil, ovnk.DefaultClusterConfig()).rebuild(st, net, []corev1.Pod{*dup}, nil)
	if len(errs) != 1 || ipalloc.ReasonOf(errs[0]) != ipalloc.ReasonIPAddressConflict {
		t.Fatalf("duplicate annotation: %v", errs)
	}
}

// BenchmarkRebuild10000: start-up rebuild of a dual-stack pool from 10,000
// pod annotations. The baseline only decodes the same annotations, the
// floor any rebuild pays; compare ns/op of the two sub-benchmarks.
func BenchmarkRebuild10000(b *testing.B) {
	net, pods := rebuildFixture(b, 10000)
	b.Run("udnkit", func(b *testing.B) {
		for b.Loop() {
			rebuildOnce(b, net, pods)
		}
	})
	b.Run("baseline-decode-only", func(b *testing.B) {
		for b.Loop() {
			for i := range pods {
				if _, err := podannotation.DecodePodNetworks(pods[i].Annotations); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
