package services

import (
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// blue is the reference case's Layer2 network (shared/upstream-live
// manifests/udn-l2.yaml).
var blue = Network{Name: "tenant-blue_blue", Topology: base.TopologyLayer2,
	Subnets:           []netip.Prefix{netip.MustParsePrefix("10.100.0.0/16"), netip.MustParsePrefix("2001:db8:100::/60")},
	ServiceCIDRs:      []netip.Prefix{netip.MustParsePrefix("10.96.0.0/16"), netip.MustParsePrefix("fd00:10:96::/112")},
	MasqueradeSubnets: []netip.Prefix{netip.MustParsePrefix("169.254.0.0/17"), netip.MustParsePrefix("fd69::/112")}}

// blueNodeA is the reference case's node-a on blue (manifests/nodes.json:
// host-cidrs and l3-gateway-config 192.0.2.2 and 2001:db8::2, node ports
// enabled).
var blueNodeA = Node{Name: "node-a", Switch: "tenant.blue_blue_ovn_layer2_switch", GatewayRouter: "GR_tenant.blue_blue_node-a",
	HostAddresses:    []netip.Addr{netip.MustParseAddr("2001:db8::2"), netip.MustParseAddr("192.0.2.2")},
	GatewayAddresses: []netip.Addr{netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("2001:db8::2")}, NodePortEnabled: true}

func onNode(e discoveryv1.Endpoint, node string) discoveryv1.Endpoint { e.NodeName = &node; return e }

// svcBuilder builds a valid Service of tenant-blue by default.
type svcBuilder struct{ s corev1.Service }

func makeService(name string) *svcBuilder {
	return &svcBuilder{s: corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-blue", Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.100.10",
			ClusterIPs: []string{"10.96.100.10", "fd00:10:96::10a"},
			Ports:      []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}}}
}

func (b *svcBuilder) with(f func(*corev1.ServiceSpec)) *svcBuilder { f(&b.s.Spec); return b }
func (b *svcBuilder) obj() *corev1.Service                         { return &b.s }

// mirrored is a slice as upstream's mirror controller writes it for the
// network (endpointslice_mirror_controller.go): k8s.ovn.org/service-name,
// the managed-by label and the network annotation.
func mirrored(network, svc, family string, port int32, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	at := discoveryv1.AddressTypeIPv4
	if family == "v6" {
		at = discoveryv1.AddressTypeIPv6
	}
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-blue", Name: svc + "-" + family + "-" + network,
			Labels: map[string]string{ovnk.LabelUserDefinedServiceName: svc,
				discoveryv1.LabelManagedBy: ovnk.EndpointSliceMirrorControllerName},
			Annotations: map[string]string{ovnk.AnnotationEndpointSliceNetwork: network}},
		AddressType: at,
		Ports:       []discoveryv1.EndpointPort{{Name: base.Ptr("http"), Protocol: base.Ptr(corev1.ProtocolTCP), Port: base.Ptr(port)}},
		Endpoints:   eps,
	}
}

func ep(ip string, ready bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: base.Ptr(ready)}}
}

func build(t *testing.T, net Network, svcs ...Service) (map[string]nbdb.LoadBalancer, []string) {
	t.Helper()
	lbs, group, _ := buildOn(t, net, nil, svcs...)
	return lbs, group
}

// buildOn builds the piece for nodes and returns its load balancers by
// name, the cluster-wide group's members and the load balancers each
// switch and router holds, by its name.
func buildOn(t *testing.T, net Network, nodes []Node, svcs ...Service) (map[string]nbdb.LoadBalancer, []string, map[string][]string) {
	t.Helper()
	d, err := LoadBalancers(net, nodes, svcs)
	if err != nil {
		t.Fatal(err)
	}
	if d.Owner.Piece != base.PieceServices || d.Owner.Network != net.Name || d.Owner.Topology != net.Topology {
		t.Errorf("owner %+v", d.Owner)
	}
	out := map[string]nbdb.LoadBalancer{}
	for _, lb := range d.LoadBalancers {
		out[lb.Name] = lb
	}
	var group []string
	if len(d.LoadBalancerGroups) > 0 {
		g := d.LoadBalancerGroups[0]
		if len(d.LoadBalancerGroups) != 1 || !g.Ref || g.Row.Name != ovnk.NamesFor(net.Name).ClusterLBGroup() {
			t.Errorf("groups %+v: want the network's cluster-wide group, referenced", d.LoadBalancerGroups)
		}
		group = g.LoadBalancers
	}
	on := map[string][]string{}
	for _, sw := range d.Switches {
		if !sw.Ref {
			t.Errorf("switch %s not referenced", sw.Row.Name)
		}
		on[sw.Row.Name] = sw.LoadBalancers
	}
	for _, r := range d.Routers {
		if !r.Ref {
			t.Errorf("router %s not referenced", r.Row.Name)
		}
		on[r.Row.Name] = r.LoadBalancers
	}
	return out, group, on
}

const blueWeb = "tenant.blue_blue_Service_tenant-blue/web_TCP_cluster"

// The reference case's Service without endpoints: every column as upstream
// wrote it (upstream-live out/up-nb.json, Load_Balancer
// tenant.blue_blue_Service_tenant-blue/web_TCP_cluster), held by
// tenant.blue_blue_clusterLBGroup.
func TestReferenceServiceWithoutEndpoints(t *testing.T) {
	lbs, group := build(t, blue, Service{Service: makeService("web").obj()})
	lb, ok := lbs[blueWeb]
	if !ok || len(lbs) != 1 {
		t.Fatalf("load balancers %v: want %s only", slices.Collect(maps.Keys(lbs)), blueWeb)
	}
	// lb_config.go: buildClusterLBs (protocol lower-cased by buildLB),
	// buildVipMap (no endpoints: an empty target list).
	if *lb.Protocol != "tcp" || !maps.Equal(lb.Vips, map[string]string{"10.96.100.10:80": "", "[fd00:10:96::10a]:80": ""}) {
		t.Errorf("protocol %q vips %v", *lb.Protocol, lb.Vips)
	}
	// loadbalancer.go: buildLB.
	want := map[string]string{"event": "false", "hairpin_snat_ip": "169.254.0.5 fd69::5", "neighbor_responder": "none",
		"reject": "true", "skip_snat": "false"}
	if !maps.Equal(lb.Options, want) || len(lb.SelectionFields) != 0 {
		t.Errorf("options %v selection fields %v, want %v and none", lb.Options, lb.SelectionFields, want)
	}
	// utils.go: getExternalIDsForLoadBalancer.
	ids := map[string]string{"k8s.ovn.org/kind": "Service", "k8s.ovn.org/owner": "tenant-blue/web",
		"k8s.ovn.org/network": "tenant-blue_blue", "k8s.ovn.org/role": "primary"}
	if !maps.Equal(lb.ExternalIDs, ids) {
		t.Errorf("external_ids %v, want %v", lb.ExternalIDs, ids)
	}
	if !slices.Equal(group, []string{blueWeb}) {
		t.Errorf("group %v", group)
	}
}

// Endpoints of both families on two nodes: each ClusterIP maps to its
// family's targets on the target port, addresses sorted as text
// (util.getEligibleEndpointAddresses: sets.List), IPv6 in brackets
// (util.JoinHostPortInt32); not-ready endpoints are left out.
func TestDualStackEndpoints(t *testing.T) {
	svc := makeService("web").obj()
	lbs, _ := build(t, blue, Service{Service: svc, Slices: []*discoveryv1.EndpointSlice{
		mirrored(blue.Name, "web", "v4", 8080, ep("10.100.0.9", true), ep("10.100.0.10", true), ep("10.100.0.11", false)),
		mirrored(blue.Name, "web", "v6", 8080, ep("2001:db8:100::9", true)),
	}})
	want := map[string]string{"10.96.100.10:80": "10.100.0.10:8080,10.100.0.9:8080", "[fd00:10:96::10a]:80": "[2001:db8:100::9]:8080"}
	if got := lbs[blueWeb].Vips; !maps.Equal(got, want) {
		t.Errorf("vips %v, want %v", got, want)
	}
}

// Without a ready endpoint the serving and terminating ones are the
// targets (util.getSelectedEligibleEndpoints, KEP-1669); with
// publishNotReadyAddresses every endpoint is.
func TestEligibleEndpoints(t *testing.T) {
	term := discoveryv1.Endpoint{Addresses: []string{"10.100.0.7"},
		Conditions: discoveryv1.EndpointConditions{Ready: base.Ptr(false), Serving: base.Ptr(true), Terminating: base.Ptr(true)}}
	slice := mirrored(blue.Name, "web", "v4", 8080, term, ep("10.100.0.8", false))
	lbs, _ := build(t, blue, Service{Service: makeService("web").obj(), Slices: []*discoveryv1.EndpointSlice{slice}})
	if got := lbs[blueWeb].Vips["10.96.100.10:80"]; got != "10.100.0.7:8080" {
		t.Errorf("targets %q, want the serving terminating endpoint only", got)
	}
	svc := makeService("web").with(func(s *corev1.ServiceSpec) { s.PublishNotReadyAddresses = true }).obj()
	lbs, _ = build(t, blue, Service{Service: svc, Slices: []*discoveryv1.EndpointSlice{slice}})
	if got := lbs[blueWeb].Vips["10.96.100.10:80"]; got != "10.100.0.7:8080,10.100.0.8:8080" {
		t.Errorf("targets %q with publishNotReadyAddresses, want both", got)
	}
}

// Only the network's mirrored slices count: a default slice of the
// Service, a slice mirrored for another network (a forged one too) and a
// slice of another Service feed nothing (util.GetServiceEndpointSlices).
func TestOnlyTheNetworksMirroredSlices(t *testing.T) {
	other := mirrored("tenant-green_green", "web", "v4", 8080, ep("10.100.0.66", true))
	unannotated := mirrored(blue.Name, "web", "v4", 8080, ep("10.100.0.67", true))
	delete(unannotated.Annotations, ovnk.AnnotationEndpointSliceNetwork)
	def := mirrored(blue.Name, "web", "v4", 8080, ep("10.244.0.5", true))
	def.Labels = map[string]string{discoveryv1.LabelServiceName: "web"}
	otherSvc := mirrored(blue.Name, "db", "v4", 8080, ep("10.100.0.68", true))
	otherNS := mirrored(blue.Name, "web", "v4", 8080, ep("10.100.0.69", true))
	otherNS.Namespace = "tenant-red"
	lbs, _ := build(t, blue, Service{Service: makeService("web").obj(),
		Slices: []*discoveryv1.EndpointSlice{other, unannotated, def, otherSvc, otherNS}})
	if got := lbs[blueWeb].Vips["10.96.100.10:80"]; got != "" {
		t.Errorf("targets %q from slices that are not the network's mirrored slices of the Service", got)
	}
}

// Headless and ExternalName Services have no load balancers (upstream's
// syncService deletes them: ServiceTypeHasClusterIP, IsClusterIPSet);
// with no load balancer the piece is empty.
func TestNoClusterIPNoLoadBalancer(t *testing.T) {
	headless := makeService("headless").with(func(s *corev1.ServiceSpec) { s.ClusterIP, s.ClusterIPs = corev1.ClusterIPNone, []string{"None"} }).obj()
	external := makeService("ext").with(func(s *corev1.ServiceSpec) {
		s.Type, s.ClusterIP, s.ClusterIPs, s.ExternalName = corev1.ServiceTypeExternalName, "", nil, "example.com"
	}).obj()
	d, err := LoadBalancers(blue, []Node{blueNodeA}, []Service{{Service: headless}, {Service: external}})
	if err != nil || !d.Empty() {
		t.Errorf("desired %+v err %v: want an empty piece", d, err)
	}
}

// One load balancer per protocol, TCP first (lb_config.go: protos).
func TestOneLoadBalancerPerProtocol(t *testing.T) {
	svc := makeService("dns").with(func(s *corev1.ServiceSpec) {
		s.Ports = []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}, {Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP},
			{Name: "sctp", Port: 9, Protocol: corev1.ProtocolSCTP}}
	}).obj()
	lbs, group := build(t, blue, Service{Service: svc})
	want := []string{"tenant.blue_blue_Service_tenant-blue/dns_SCTP_cluster", "tenant.blue_blue_Service_tenant-blue/dns_TCP_cluster",
		"tenant.blue_blue_Service_tenant-blue/dns_UDP_cluster"}
	if got := slices.Sorted(maps.Keys(lbs)); !slices.Equal(got, want) || !slices.Equal(group, want) {
		t.Errorf("load balancers %v group %v, want %v", got, group, want)
	}
	if p := lbs[want[2]].Protocol; *p != "udp" {
		t.Errorf("protocol %q", *p)
	}
}

// ClientIP affinity: its timeout in affinity_timeout, or, at the maximum
// (86400 s), ip_src and ip_dst selection fields instead (loadbalancer.go:
// buildLB); the default timeout is 10800 s (lb_config.go:
// getSessionAffinityTimeOut).
func TestSessionAffinity(t *testing.T) {
	for _, c := range []struct {
		timeout *int32
		option  string
		fields  []string
	}{{nil, "10800", nil}, {base.Ptr[int32](600), "600", nil}, {base.Ptr[int32](86400), "", []string{"ip_src", "ip_dst"}}} {
		svc := makeService("web").with(func(s *corev1.ServiceSpec) {
			s.SessionAffinity = corev1.ServiceAffinityClientIP
			s.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: c.timeout}}
		}).obj()
		lbs, _ := build(t, blue, Service{Service: svc})
		lb := lbs[blueWeb]
		if lb.Options["affinity_timeout"] != c.option || !slices.Equal(lb.SelectionFields, c.fields) {
			t.Errorf("timeout %v: affinity_timeout %q selection fields %v, want %q and %v",
				c.timeout, lb.Options["affinity_timeout"], lb.SelectionFields, c.option, c.fields)
		}
	}
}

// ExternalIPs and LoadBalancer ingress IPs join the ClusterIPs in the
// cluster-wide load balancer; with externalTrafficPolicy Local they go to
// per-node load balancers instead (buildServiceLBConfigs).
func TestExternalIPs(t *testing.T) {
	lb := func(etp corev1.ServiceExternalTrafficPolicy) *corev1.Service {
		return makeService("web").with(func(s *corev1.ServiceSpec) {
			s.Type, s.ExternalTrafficPolicy, s.AllocateLoadBalancerNodePorts = corev1.ServiceTypeLoadBalancer, etp, base.Ptr(false)
			s.ExternalIPs = []string{"192.0.2.10"}
		}).obj()
	}
	svc := lb(corev1.ServiceExternalTrafficPolicyCluster)
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.51.100.7"}, {Hostname: "lb.example.com"}}
	lbs, _, _ := buildOn(t, blue, []Node{blueNodeA}, Service{Service: svc})
	want := []string{"10.96.100.10:80", "192.0.2.10:80", "198.51.100.7:80", "[fd00:10:96::10a]:80"}
	if got := slices.Sorted(maps.Keys(lbs[blueWeb].Vips)); !slices.Equal(got, want) || len(lbs) != 1 {
		t.Errorf("vips %v of %d load balancers, want %v in one", got, len(lbs), want)
	}
	svc = lb(corev1.ServiceExternalTrafficPolicyLocal)
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.51.100.7"}}
	lbs, _, _ = buildOn(t, blue, []Node{blueNodeA}, Service{Service: svc,
		Slices: []*discoveryv1.EndpointSlice{mirrored(blue.Name, "web", "v4", 8080, onNode(ep("10.100.0.5", true), "node-a"))}})
	want = []string{"10.96.100.10:80", "[fd00:10:96::10a]:80"}
	if got := slices.Sorted(maps.Keys(lbs[blueWeb].Vips)); !slices.Equal(got, want) {
		t.Errorf("externalTrafficPolicy Local: cluster vips %v, want %v", got, want)
	}
	local := lbs["tenant.blue_blue_Service_tenant-blue/web_TCP_node_local_router_node-a"]
	if !maps.Equal(local.Vips, map[string]string{"192.0.2.10:80": "10.100.0.5:8080", "198.51.100.7:80": "10.100.0.5:8080"}) ||
		local.Options["skip_snat"] != "true" {
		t.Errorf("externalTrafficPolicy Local: the node's local router load balancer %+v", local)
	}
}

// A Layer3 network's names take its prefix; an unknown topology and a
// masquerade subnet too small for the hairpin address are refused.
func TestLayer3AndRefusals(t *testing.T) {
	green := blue
	green.Name, green.Topology = "tenant-green_green", base.TopologyLayer3
	svc := makeService("web").obj()
	svc.Namespace = "tenant-green"
	lbs, _ := build(t, green, Service{Service: svc})
	if _, ok := lbs["tenant.green_green_Service_tenant-green/web_TCP_cluster"]; !ok {
		t.Errorf("load balancers %v", slices.Collect(maps.Keys(lbs)))
	}
	bad := blue
	bad.Topology = "localnet"
	if _, err := LoadBalancers(bad, nil, nil); err == nil || !strings.Contains(err.Error(), "topology") {
		t.Errorf("localnet topology: %v", err)
	}
	bad = blue
	bad.MasqueradeSubnets = []netip.Prefix{netip.MustParsePrefix("169.254.0.0/30")}
	if _, err := LoadBalancers(bad, nil, nil); err == nil {
		t.Error("a /30 masquerade subnet: no error")
	}
	v4only := blue
	v4only.MasqueradeSubnets = v4only.MasqueradeSubnets[:1]
	lbs, _ = build(t, v4only, Service{Service: makeService("web").obj()})
	if got := lbs[blueWeb].Options["hairpin_snat_ip"]; got != "169.254.0.5 fd69::5" {
		t.Errorf("hairpin_snat_ip %q without an IPv6 masquerade subnet: want upstream's default fd69::5", got)
	}
}
