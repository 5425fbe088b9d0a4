package services

import (
	"fmt"
	"net/netip"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/dataplane/controllers/internal/benchzone"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	svctopo "github.com/udnkit/udnkit/dataplane/topology/services"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/ovnk"
)

// The benchmarks' network: ns bench's Primary Layer2 UDN blue.
const (
	benchNS      = "bench"
	benchNetwork = "bench_blue"
)

// benchZone starts a zone with the network and a services Reconciler
// reading it.
func benchZone(b *testing.B) (*benchzone.Zone, *Reconciler, *nadv1.NetworkAttachmentDefinition) {
	z := benchzone.Start(b, envtest.Options{ServiceClusterIPRange: "10.96.0.0/16"})
	nad := z.Layer2(benchNS, "blue", benchNetwork, "10.128.0.0/16")
	cluster := ovnk.DefaultClusterConfig()
	cluster.ServiceCIDRs = []netip.Prefix{netip.MustParsePrefix("10.96.0.0/16")}
	return z, &Reconciler{Client: z.Client, OVN: z.OVN, Cluster: cluster}, nad
}

// benchService is ClusterIP Service i (10.96.i/256.i%256+10, TCP 80 to
// 8080) and its slice as upstream's mirror controller writes it for the
// network, with endpoints endpoint addresses 10.128.0.0/16 from first on.
func benchService(i, endpoints, first int) (*corev1.Service, *discoveryv1.EndpointSlice) {
	name := fmt.Sprintf("svc%d", i)
	ip := fmt.Sprintf("10.96.%d.%d", i/200, i%200+10)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: benchNS, Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: ip, ClusterIPs: []string{ip},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}}
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: benchNS, Name: name + "-mirrored",
			Labels: map[string]string{ovnk.LabelUserDefinedServiceName: name,
				discoveryv1.LabelManagedBy: ovnk.EndpointSliceMirrorControllerName},
			Annotations: map[string]string{ovnk.AnnotationEndpointSliceNetwork: benchNetwork}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: base.Ptr("http"), Protocol: base.Ptr(corev1.ProtocolTCP), Port: base.Ptr[int32](8080)}},
	}
	for e := first; e < first+endpoints; e++ {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.128.%d.%d", e/250, e%250+2)},
			NodeName: base.Ptr("node-a"), Conditions: discoveryv1.EndpointConditions{Ready: base.Ptr(true)}})
	}
	return svc, s
}

// createServices creates n Services with endpoints endpoints each and
// waits until the cache holds them.
func createServices(z *benchzone.Zone, n, endpoints int) {
	var objs []client.Object
	for i := range n {
		svc, s := benchService(i, endpoints, i*endpoints)
		objs = append(objs, svc, s)
	}
	z.Create(objs...)
	z.Cached(&corev1.ServiceList{}, n, client.InNamespace(benchNS))
	z.Cached(&discoveryv1.EndpointSliceList{}, n, client.InNamespace(benchNS), client.HasLabels{ovnk.LabelUserDefinedServiceName})
}

// desired is what the Reconciler applies for the network: the baseline's
// rows.
func desired(b *testing.B, z *benchzone.Zone, r *Reconciler, nad *nadv1.NetworkAttachmentDefinition) *rows.Desired {
	net, ok, err := r.network(nad)
	if err != nil || !ok {
		b.Fatalf("network: ok=%v err=%v", ok, err)
	}
	svcs, err := r.services(z.Ctx, net.Name)
	if err != nil {
		b.Fatal(err)
	}
	nodes, err := r.nodes(z.Ctx, net)
	if err != nil {
		b.Fatal(err)
	}
	d, err := svctopo.LoadBalancers(net, nodes, svcs)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// programLoadBalancers measures, into an empty services piece each time,
// the Reconciler's reconcile of the network (udnkit) and the same load
// balancers written in one raw transaction (baseline-raw-transaction);
// the two databases then hold the same load balancers.
func programLoadBalancers(b *testing.B, z *benchzone.Zone, r *Reconciler, nad *nadv1.NetworkAttachmentDefinition) {
	d := desired(b, z, r, nad)
	z.ProgramAgainstRaw(b, r, nad, d, nbdb.LoadBalancerTable, len(d.LoadBalancers), func(b *testing.B) {
		b.ReportMetric(float64(len(d.LoadBalancers)), "lbs/op")
	})
	z.SameRows(nbdb.LoadBalancerTable, "name", "protocol", "vips", "options", "external_ids")
	z.SameMembers(nbdb.LoadBalancerGroupTable, "load_balancer", nbdb.LoadBalancerTable)
}

// BenchmarkServiceWith1000Endpoints programs the load balancer of one
// ClusterIP Service whose mirrored slice has 1,000 endpoints, in one
// Primary Layer2 UDN: the services Reconciler driven directly (reading a
// real apiserver through the cache, applying to a real Northbound),
// against the same row written in one raw libovsdb transaction.
func BenchmarkServiceWith1000Endpoints(b *testing.B) {
	z, r, nad := benchZone(b)
	createServices(z, 1, 1000)
	programLoadBalancers(b, z, r, nad)
}

// Benchmark1000Services programs the load balancers of 1,000 ClusterIP
// Services (two endpoints each) in one Primary Layer2 UDN (program), as
// BenchmarkServiceWith1000Endpoints does; one-change then changes one
// Service's mirrored slice (an endpoint goes or comes back) and measures
// the reconcile that follows (the Service's request, which the slice's
// change queues) against the one load balancer update written in one raw
// transaction.
func Benchmark1000Services(b *testing.B) {
	z, r, nad := benchZone(b)
	createServices(z, 1000, 2)
	b.Run("program", func(b *testing.B) { programLoadBalancers(b, z, r, nad) })
	b.Run("one-change", func(b *testing.B) { oneChange(b, z, r, nad) })
}

// oneChange flips Service svc500's slice between two endpoints and one,
// each flip followed by the reconcile it causes (udnkit) or by the raw
// update of the one load balancer's vips (baseline-raw-transaction).
func oneChange(b *testing.B, z *benchzone.Zone, r *Reconciler, nad *nadv1.NetworkAttachmentDefinition) {
	full := desired(b, z, r, nad)
	z.Clear(full.Owner)
	z.ClearRaw(full.Owner)
	z.Reconcile(r, nad)
	z.Transact(z.RawOps(full), nbdb.LoadBalancerTable, len(full.LoadBalancers))
	net, _, err := r.network(nad)
	if err != nil {
		b.Fatal(err)
	}
	svc, two := benchService(500, 2, 1000)
	_, one := benchService(500, 1, 1000)
	lb := ovnk.NamesFor(benchNetwork).ServiceLoadBalancer(benchNS, svc.Name, "TCP", "cluster")
	// flip changes the slice to the other state and returns the load
	// balancer's vips in it.
	flip := func() map[string]string {
		var cur discoveryv1.EndpointSlice
		if err := z.Client.Get(z.Ctx, client.ObjectKeyFromObject(two), &cur); err != nil {
			b.Fatal(err)
		}
		next := two
		if len(cur.Endpoints) == len(two.Endpoints) {
			next = one
		}
		cur.Endpoints = next.Endpoints
		z.Update(&cur)
		z.CachedVersion(&cur)
		d, err := svctopo.LoadBalancers(net, nil, []svctopo.Service{{Service: svc, Slices: []*discoveryv1.EndpointSlice{&cur}}})
		if err != nil || len(d.LoadBalancers) != 1 || d.LoadBalancers[0].Name != lb {
			b.Fatalf("svc500's load balancers: %v", err)
		}
		return d.LoadBalancers[0].Vips
	}
	// The request the slice's change queues: svc500's own.
	reqs := r.serviceRequests(z.Ctx, two)
	if len(reqs) != 1 {
		b.Fatalf("svc500's slice queues %v, want svc500's request", reqs)
	}
	reconcileService := func() {
		if res, err := r.Reconcile(z.Ctx, reqs[0]); err != nil || !res.IsZero() {
			b.Fatalf("reconcile %v: %+v, %v", reqs[0], res, err)
		}
	}
	ran := 0
	b.Run("udnkit", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			flip()
			b.StartTimer()
			reconcileService()
		}
		ran++
	})
	b.Run("baseline-raw-transaction", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			vips, uuid := flip(), z.RawLoadBalancer(lb)
			b.StartTimer()
			z.RawUpdateVips(uuid, vips)
		}
		ran++
	})
	if ran == 2 {
		reconcileService()
		z.SameRows(nbdb.LoadBalancerTable, "name", "protocol", "vips", "options", "external_ids")
	}
}
