package datapath_test

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lbservices "github.com/udnkit/udnkit/dataplane/controllers/services"
	"github.com/udnkit/udnkit/envtest/datapath"
	"github.com/udnkit/udnkit/envtest/datapath/netns"
	"github.com/udnkit/udnkit/ovnk"
)

// The Services' ports: clients connect to svcPort, backends answer on
// svcTargetPort (netns ServeName, TCP and UDP).
const (
	svcPort       = 80
	svcTargetPort = 8090
)

// protocols are the Services' protocols, as a Service names them and as
// a dialer does.
var protocols = []struct {
	proto corev1.Protocol
	dial  string
}{{corev1.ProtocolTCP, "tcp"}, {corev1.ProtocolUDP, "udp"}}

// service is a ClusterIP Service of a network's namespace, TCP and UDP
// on svcPort, whose endpoints are backends: dual-stack, or IPv4 only
// without v6.
type service struct {
	net      *network
	name     string
	v4, v6   netip.Addr
	backends []*pod
	// nodePort, when set, makes the Service a NodePort one, every port on
	// it, with externalTrafficPolicy etp.
	nodePort int32
	etp      corev1.ServiceExternalTrafficPolicy
}

func (s *service) clusterIP(v6 bool) netip.Addr {
	if v6 {
		return s.v6
	}
	return s.v4
}

// families are the Service's IP families (false: IPv4, true: IPv6).
func (s *service) families() []bool {
	if s.v6.IsValid() {
		return []bool{false, true}
	}
	return []bool{false}
}

// object is the Service as the API server holds it once its ClusterIPs
// are allocated.
func (s *service) object() *corev1.Service {
	policy := corev1.IPFamilyPolicySingleStack
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: s.net.namespace, Name: s.name}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeClusterIP, ClusterIP: s.v4.String(), IPFamilyPolicy: &policy,
	}}
	for _, v6 := range s.families() {
		family := map[bool]corev1.IPFamily{false: corev1.IPv4Protocol, true: corev1.IPv6Protocol}[v6]
		svc.Spec.ClusterIPs = append(svc.Spec.ClusterIPs, s.clusterIP(v6).String())
		svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, family)
	}
	if len(svc.Spec.IPFamilies) == 2 {
		policy = corev1.IPFamilyPolicyRequireDualStack
	}
	for _, p := range protocols {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: strings.ToLower(string(p.proto)), Protocol: p.proto,
			Port: svcPort, TargetPort: intstr.FromInt32(svcTargetPort), NodePort: s.nodePort})
	}
	if s.nodePort != 0 {
		svc.Spec.Type, svc.Spec.ExternalTrafficPolicy = corev1.ServiceTypeNodePort, s.etp
	}
	return svc
}

// mirrored are the Service's EndpointSlices on its network as udnkit's
// endpointslicemirror controller writes them from the default slices
// (one per address family): managed by the mirror controller, labelled
// with the Service, annotated with the source slice and the network, each
// ready endpoint at its pod's address on the network, on the pod's node.
func (s *service) mirrored() []*discoveryv1.EndpointSlice {
	var out []*discoveryv1.EndpointSlice
	for _, v6 := range s.families() {
		family, addrType := "ipv4", discoveryv1.AddressTypeIPv4
		if v6 {
			family, addrType = "ipv6", discoveryv1.AddressTypeIPv6
		}
		source := s.name + "-" + family
		m := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: s.net.namespace, Name: source + "-mirror",
			Labels: map[string]string{
				discoveryv1.LabelManagedBy:       ovnk.EndpointSliceMirrorControllerName,
				ovnk.LabelUserDefinedServiceName: s.name,
			},
			Annotations: map[string]string{
				ovnk.AnnotationSourceEndpointSlice:   source,
				ovnk.LabelSourceEndpointSliceVersion: "1",
				ovnk.AnnotationEndpointSliceNetwork:  s.net.ovnName(),
			},
		}, AddressType: addrType}
		for _, p := range protocols {
			name, proto, port := strings.ToLower(string(p.proto)), p.proto, int32(svcTargetPort)
			m.Ports = append(m.Ports, discoveryv1.EndpointPort{Name: &name, Protocol: &proto, Port: &port})
		}
		for _, b := range s.backends {
			ready, node := true, b.node.Name
			m.Endpoints = append(m.Endpoints, discoveryv1.Endpoint{Addresses: []string{b.addr(v6).String()},
				Conditions: discoveryv1.EndpointConditions{Ready: &ready}, NodeName: &node,
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: b.net.namespace, Name: b.name}})
		}
		out = append(out, m)
	}
	return out
}

// addr is the pod's address of a family on its network: on a Layer3
// network its interface's (in its node's host subnet), else the
// subnet's address at the pod's index.
func (p *pod) addr(v6 bool) netip.Addr {
	if p.net.layer3 {
		return p.ip(v6)
	}
	subnet, _ := ovnk.FamilyOf(p.net.subnets, v6)
	return ovnk.MustAddrAt(subnet, p.index)
}

// lb is the name of the Service's cluster-wide load balancer of a protocol.
func (s *service) lb(proto corev1.Protocol) string {
	return s.net.names().ServiceLoadBalancer(s.net.namespace, s.name, string(proto), "cluster")
}

// serviceObjects are the Services and, with endpoints, their mirrored
// EndpointSlices.
func serviceObjects(endpoints bool, svcs ...*service) []client.Object {
	var out []client.Object
	for _, s := range svcs {
		out = append(out, s.object())
		if endpoints {
			for _, m := range s.mirrored() {
				out = append(out, m)
			}
		}
	}
	return out
}

// programServices runs udnkit's services reconciler in every zone, each
// zone local to its own node, on the API state with objs (Services and
// mirrored EndpointSlices) added, and waits for the zones to settle.
func programServices(t *testing.T, c *datapath.Cluster, objs []client.Object, nets ...*network) {
	t.Helper()
	for _, zone := range c.Nodes {
		state := apiState(t, c, nets...)
		for _, o := range objs {
			if err := state.Create(context.Background(), o.DeepCopyObject().(client.Object)); err != nil {
				t.Fatal(err)
			}
		}
		reconcileAll(t, zone, &lbservices.Reconciler{Client: state, OVN: ovnClient(t, zone), Local: localTo(zone), Cluster: cfg}, nets...)
	}
	settle(t, c)
}

// serveNames starts ServeName on svcTargetPort in every pod until the
// test ends.
func serveNames(t *testing.T, ps ...*pod) {
	t.Helper()
	serveOnTarget(t, (*netns.Endpoint).ServeName, ps...)
}

// serveOnTarget starts serve on svcTargetPort in every pod until the test
// ends.
func serveOnTarget(t *testing.T, serve func(*netns.Endpoint, int) (func(), error), ps ...*pod) {
	t.Helper()
	for _, p := range ps {
		stop, err := serve(&p.datapath.Endpoint, svcTargetPort)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
	}
}

// askNames connects n times from from to dst on svcPort over dial (a
// new connection each time) and counts the answers by label. The first
// connection is retried until reachTimeout (the flows of a new path are
// being installed); an unanswered later one fails the test.
func askNames(t *testing.T, from *pod, dial string, dst netip.Addr, n int) map[string]int {
	t.Helper()
	return askNamesAt(t, &from.datapath.Endpoint, dial, dst, svcPort, n)
}

// askNamesAt is askNames from any endpoint to any port.
func askNamesAt(t *testing.T, from *netns.Endpoint, dial string, dst netip.Addr, port, n int) map[string]int {
	t.Helper()
	seen := map[string]int{}
	deadline := time.Now().Add(reachTimeout)
	for i := 0; i < n; i++ {
		name, err := from.AskName(dial, dst, port, time.Second)
		for i == 0 && err != nil && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
			name, err = from.AskName(dial, dst, port, time.Second)
		}
		if err != nil {
			t.Fatalf("connection %d of %d: %v", i+1, n, err)
		}
		seen[name]++
	}
	return seen
}

// tryNames connects n times from from to dst on svcPort over dial and
// counts the answers by label, the unanswered connections under "".
func tryNames(from *pod, dial string, dst netip.Addr, n int) map[string]int {
	return tryNamesAt(&from.datapath.Endpoint, dial, dst, svcPort, n)
}

// tryNamesAt is tryNames from any endpoint to any port.
func tryNamesAt(from *netns.Endpoint, dial string, dst netip.Addr, port, n int) map[string]int {
	seen := map[string]int{}
	for range n {
		name, _ := from.AskName(dial, dst, port, time.Second)
		seen[name]++
	}
	return seen
}

// unanswered fails the test if any of three connections from from to dst
// on svcPort over dial gets an answer.
func unanswered(t *testing.T, from *pod, dial string, dst netip.Addr) {
	t.Helper()
	for range 3 {
		if name, err := from.datapath.AskName(dial, dst, svcPort, time.Second); err == nil {
			t.Fatalf("%s/%s got an answer from %q over %s to %s, which it must not", from.net.namespace, from.name, name, dial, dst)
		}
	}
}

// labels are the pods' endpoint labels (what ServeName answers).
func labels(ps ...*pod) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.datapath.Label)
	}
	return out
}

// answeredBy fails the test unless every answer in seen came from one of
// want and each of want answered at least once.
func answeredBy(t *testing.T, seen map[string]int, want ...*pod) {
	t.Helper()
	names := labels(want...)
	for name := range seen {
		if !slices.Contains(names, name) {
			t.Fatalf("answers %v: %q is not one of the Service's backends %q", seen, name, names)
		}
	}
	for _, name := range names {
		if seen[name] == 0 {
			t.Fatalf("answers %v: backend %q never answered", seen, name)
		}
	}
}

// TestServiceClusterIP sends TCP and UDP, IPv4 and IPv6, through the load
// balancers udnkit's services controller writes in three zones for a
// dual-stack ClusterIP Service of a Primary Layer2 UDN, read from the
// Service and its mirrored EndpointSlices: a pod on node-a reaches the
// Service, and connection after connection both backends, on node-b and
// node-c, answer. The Service's load balancer removed from node-a's zone,
// or its endpoints removed from the API state, the connections fail, and
// the reconciler's next pass brings them back.
//
// A second network in another namespace, with the same subnets (and so
// pods at the backends' addresses), does not reach the first network's
// backends through the first Service's ClusterIP, and its own Service at
// the same ClusterIP reaches only its own backends.
func TestServiceClusterIP(t *testing.T) {
	c := needCluster(t)
	a, b, cc := c.Node("node-a"), c.Node("node-b"), c.Node("node-c")
	subnets := []string{"10.150.0.0/16", "fd00:150::/64"}
	red := newNetwork(t, "tenant-svc-red", "red", 11, subnets...)
	gold := newNetwork(t, "tenant-svc-gold", "gold", 12, subnets...)
	program(t, c, red, gold)
	redA := &pod{net: red, name: "client", node: a, index: 5, tunnelID: 10}
	redB := &pod{net: red, name: "web-b", node: b, index: 6, tunnelID: 11}
	redC := &pod{net: red, name: "web-c", node: cc, index: 9, tunnelID: 12}
	goldA := &pod{net: gold, name: "client", node: a, index: 5, tunnelID: 10}
	// goldDecoy has red's backend redB's address on gold.
	goldDecoy := &pod{net: gold, name: "decoy", node: b, index: 6, tunnelID: 11}
	goldB := &pod{net: gold, name: "web-b", node: b, index: 12, tunnelID: 12}
	goldC := &pod{net: gold, name: "web-c", node: cc, index: 13, tunnelID: 13}
	all := []*pod{redA, redB, redC, goldA, goldDecoy, goldB, goldC}
	podPorts(t, c, all...)
	startOwnPods(t, c, all...)
	serveNames(t, redB, redC, goldDecoy, goldB, goldC)
	web := &service{net: red, name: "web", v4: netip.MustParseAddr("10.96.150.10"), v6: netip.MustParseAddr("fd00:10:96::150:10"),
		backends: []*pod{redB, redC}}
	programServices(t, c, serviceObjects(true, web), red, gold)
	// Afterwards the networks have no Services: their load balancers go.
	t.Cleanup(func() { programServices(t, c, nil, red, gold) })
	families := []bool{false, true}

	t.Run("a pod reaches both backends on other nodes through the ClusterIP (TCP and UDP, IPv4 and IPv6)", func(t *testing.T) {
		for _, v6 := range families {
			for _, p := range protocols {
				// Each connection picks a backend by a hash of its
				// 5-tuple, less evenly than a coin here: 8 connections
				// left one backend unpicked twice in one CI run, so
				// every check makes 32.
				answeredBy(t, askNames(t, redA, p.dial, web.clusterIP(v6), 32), redB, redC)
			}
		}
	})

	// Mutation: the TCP load balancer deleted in node-a's zone: the client's
	// switch no longer DNATs TCP to the ClusterIP; UDP, on its own load
	// balancer, keeps working.
	t.Run("mutation: the Service's TCP load balancer removed from node-a's zone stops its TCP connections", func(t *testing.T) {
		a.NB().Must(t, "lb-del", web.lb(corev1.ProtocolTCP))
		settle(t, c)
		for _, v6 := range families {
			unanswered(t, redA, "tcp", web.clusterIP(v6))
			answeredBy(t, askNames(t, redA, "udp", web.clusterIP(v6), 32), redB, redC)
		}
		programServices(t, c, serviceObjects(true, web), red, gold)
		for _, v6 := range families {
			answeredBy(t, askNames(t, redA, "tcp", web.clusterIP(v6), 32), redB, redC)
		}
	})

	// Mutation: the Service's mirrored EndpointSlices gone, its load
	// balancers keep the vips without backends (and reject).
	t.Run("mutation: the Service's endpoints removed stop its connections", func(t *testing.T) {
		programServices(t, c, serviceObjects(false, web), red, gold)
		for _, v6 := range families {
			for _, p := range protocols {
				unanswered(t, redA, p.dial, web.clusterIP(v6))
			}
		}
		programServices(t, c, serviceObjects(true, web), red, gold)
		for _, v6 := range families {
			for _, p := range protocols {
				answeredBy(t, askNames(t, redA, p.dial, web.clusterIP(v6), 32), redB, redC)
			}
		}
	})

	t.Run("another network's pod gets no answer at the Service's ClusterIP", func(t *testing.T) {
		for _, v6 := range families {
			for _, p := range protocols {
				unanswered(t, goldA, p.dial, web.clusterIP(v6))
			}
		}
	})

	// Mutation: red's TCP load balancer on gold's switch in node-a's zone
	// DNATs gold's client to red's backend addresses, where gold's decoy
	// answers (nothing on gold answers at red's other backend's address):
	// the check above must then fail. The services controller does not
	// take a load balancer off a switch it does not write to, so the
	// mutation is undone by hand.
	t.Run("mutation: the Service's load balancer on the other network's switch answers there", func(t *testing.T) {
		a.NB().Must(t, "ls-lb-add", gold.names().Switch(), web.lb(corev1.ProtocolTCP))
		undone := false
		undo := func() {
			if !undone {
				undone = true
				a.NB().Must(t, "ls-lb-del", gold.names().Switch(), web.lb(corev1.ProtocolTCP))
				settle(t, c)
			}
		}
		t.Cleanup(undo)
		settle(t, c)
		seen := tryNames(goldA, "tcp", web.clusterIP(false), 16)
		if seen[goldDecoy.datapath.Label] == 0 {
			t.Fatalf("with red's load balancer on gold's switch gold's client got answers %v, none from gold's decoy at red's backend's address", seen)
		}
		undo()
		unanswered(t, goldA, "tcp", web.clusterIP(false))
	})

	t.Run("another network's Service at the same ClusterIP reaches only its own backends", func(t *testing.T) {
		mirror := &service{net: gold, name: "web", v4: web.v4, v6: web.v6, backends: []*pod{goldB, goldC}}
		programServices(t, c, serviceObjects(true, web, mirror), red, gold)
		for _, v6 := range families {
			for _, p := range protocols {
				answeredBy(t, askNames(t, goldA, p.dial, web.clusterIP(v6), 32), goldB, goldC)
				answeredBy(t, askNames(t, redA, p.dial, web.clusterIP(v6), 32), redB, redC)
			}
		}
		// Mutation: gold's TCP load balancer's IPv4 vip pointed at red's
		// backends' addresses in node-a's zone: gold's decoy answers there.
		// The reconciler's next pass writes the vip back.
		at := func(ip netip.Addr, port int) string { return netip.AddrPortFrom(ip, uint16(port)).String() }
		vip := `vips:"` + at(web.v4, svcPort) + `"="` + at(redB.ip(false), svcTargetPort) + "," + at(redC.ip(false), svcTargetPort) + `"`
		a.NB().Must(t, "set", "Load_Balancer", mirror.lb(corev1.ProtocolTCP), vip)
		settle(t, c)
		if seen := tryNames(goldA, "tcp", web.v4, 16); seen[goldDecoy.datapath.Label] == 0 {
			t.Fatalf("with gold's vip pointed at red's backends' addresses gold's client got answers %v, none from gold's decoy", seen)
		}
		programServices(t, c, serviceObjects(true, web, mirror), red, gold)
		answeredBy(t, askNames(t, goldA, "tcp", web.v4, 32), goldB, goldC)
	})
}

// tcpEchoUntil retries e's TCP echo to dst on svcPort until it succeeds
// or reachTimeout passes (the flows of a new path are being installed).
func tcpEchoUntil(t *testing.T, e *netns.Endpoint, dst netip.Addr) {
	t.Helper()
	deadline := time.Now().Add(reachTimeout)
	err := e.TCPEcho(dst, svcPort, time.Second)
	for err != nil && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		err = e.TCPEcho(dst, svcPort, time.Second)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestServiceKubeVirtLiveMigration live-migrates a VM on a Primary Layer2
// UDN from node-a to node-b, as TestKubeVirtLiveMigration does, while it
// holds a TCP connection to a ClusterIP Service of its network (its
// backend a pod on node-c) and a pod on node-c holds one to a Service
// whose backend is the VM: udnkit's load balancers in every zone keep
// both connections through the switch-over, and new connections work
// afterwards. The Service the VM connects to has one backend: the VM's
// packets enter node-b's zone, whose conntrack never saw the connection,
// and its load balancer picks the backend again (OVS's conntrack picks the
// connection up mid-stream); with two it could pick the other one.
// Mutation (tried once): the first Service's load balancer deleted from
// node-b's zone and the second's from node-c's just before the
// switch-over (and not written again), both connections break.
func TestServiceKubeVirtLiveMigration(t *testing.T) {
	c := needCluster(t)
	x, y, z := c.Node("node-a"), c.Node("node-b"), c.Node("node-c")
	kv := newNetwork(t, "tenant-svc-kv", "kv", 13, "10.160.0.0/16")
	program(t, c, kv)
	src := &pod{net: kv, name: "virt-launcher-vm1-src", node: x, index: 10, tunnelID: 20}
	dst := &pod{net: kv, name: "virt-launcher-vm1-dst", node: y, index: 10, tunnelID: 21}
	client := &pod{net: kv, name: "client", node: z, index: 5, tunnelID: 10}
	backend := &pod{net: kv, name: "db", node: z, index: 6, tunnelID: 11}
	podPorts(t, c, client, backend)
	startOwnPods(t, c, client, backend)
	stopBackend, err := backend.datapath.ServeTCP(svcTargetPort)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopBackend)
	toPod := &service{net: kv, name: "db", v4: netip.MustParseAddr("10.96.160.10"), backends: []*pod{backend}}
	toVM := &service{net: kv, name: "vm", v4: netip.MustParseAddr("10.96.160.20"), backends: []*pod{src}}
	m := startVM(t, c, kv, "vm1", src, dst)
	vm := m.vm
	// Afterwards the network has no Services: their load balancers go.
	t.Cleanup(func() { programServices(t, c, nil, kv) })
	stopVM, err := vm.ServeTCP(svcTargetPort)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopVM)
	programServices(t, c, serviceObjects(true, toPod, toVM), kv)
	tcpEchoUntil(t, &vm.Endpoint, toPod.v4)
	tcpEchoUntil(t, &client.datapath.Endpoint, toVM.v4)
	fromVM, err := vm.OpenStream(toPod.v4, svcPort, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	toVMStream, err := client.datapath.OpenStream(toVM.v4, svcPort, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)

	// The target pod comes up on node-b (its port disabled), the domain
	// switches over (every zone enables the target's port and disables the
	// source's), the source pod goes and the VM's endpoint moves to node-b.
	m.addTarget(t)
	time.Sleep(500 * time.Millisecond)
	m.switchOver(t)
	time.Sleep(500 * time.Millisecond)
	m.dropSource(t)
	toVM.backends = []*pod{dst}
	programServices(t, c, serviceObjects(true, toPod, toVM), kv)
	time.Sleep(time.Second)
	out, in := fromVM.Stop(), toVMStream.Stop()
	t.Logf("VM to the Service: %d exchanges, longest stall %d ms; node-c's pod to the VM's Service: %d exchanges, longest stall %d ms",
		out.Exchanges, out.LongestStall.Milliseconds(), in.Exchanges, in.LongestStall.Milliseconds())

	t.Run("the VM's TCP connection to a Service survives the migration", func(t *testing.T) {
		if out.Err != nil {
			t.Fatalf("the VM's connection to %s broke: %v (after %d exchanges)", toPod.v4, out.Err, out.Exchanges)
		}
		tcpEchoUntil(t, &vm.Endpoint, toPod.v4)
	})
	t.Run("a TCP connection to a Service whose backend is the VM survives the migration", func(t *testing.T) {
		if in.Err != nil {
			t.Fatalf("node-c's pod's connection to %s broke: %v (after %d exchanges)", toVM.v4, in.Err, in.Exchanges)
		}
		tcpEchoUntil(t, &client.datapath.Endpoint, toVM.v4)
	})
	// Mutation: the Service's load balancer removed from node-b's zone, the
	// migrated VM's connections to it fail until the next pass.
	t.Run("mutation: the Service's load balancer removed from node-b's zone cuts the migrated VM off it", func(t *testing.T) {
		y.NB().Must(t, "lb-del", toPod.lb(corev1.ProtocolTCP))
		settle(t, c)
		if err := vm.TCPEcho(toPod.v4, svcPort, 2*time.Second); err == nil {
			t.Fatalf("the VM on node-b reached %s with its load balancer removed from node-b's zone", toPod.v4)
		}
		programServices(t, c, serviceObjects(true, toPod, toVM), kv)
		tcpEchoUntil(t, &vm.Endpoint, toPod.v4)
	})
}
