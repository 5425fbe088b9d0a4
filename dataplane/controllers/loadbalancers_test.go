package controllers

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// The load balancers of the policy world's networks (policyStack): ns1's
// Layer2 network ns1_tenant-blue, ns2's Layer3 network ns2_tenant-green.
const (
	blueWebLB  = "ns1_tenant.blue_Service_ns1/web_TCP_cluster"
	greenWebLB = "ns2_tenant.green_Service_ns2/web_TCP_cluster"
	blueGroup  = "ns1_tenant.blue_clusterLBGroup"
)

// lbService is a dual-stack ClusterIP Service of one TCP port 80 named
// http, with the given ClusterIPs.
func lbService(ns, name string, ips ...string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: ips[0], ClusterIPs: ips,
			IPFamilyPolicy: base.Ptr(corev1.IPFamilyPolicyPreferDualStack),
			Ports:          []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}}
}

// mirroredSlice is a slice as upstream's mirror controller writes it for
// network, of the Service svc, target port 8080, one endpoint per address
// (ready), on node.
func mirroredSlice(ns, name, svc, network string, at discoveryv1.AddressType, node string, addrs ...string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{ovnk.LabelUserDefinedServiceName: svc,
				discoveryv1.LabelManagedBy: ovnk.EndpointSliceMirrorControllerName},
			Annotations: map[string]string{ovnk.AnnotationEndpointSliceNetwork: network}},
		AddressType: at,
		Ports:       []discoveryv1.EndpointPort{{Name: base.Ptr("http"), Protocol: base.Ptr(corev1.ProtocolTCP), Port: base.Ptr[int32](8080)}},
	}
	for _, a := range addrs {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}, NodeName: base.Ptr(node),
			Conditions: discoveryv1.EndpointConditions{Ready: base.Ptr(true)}})
	}
	return s
}

// lbList is what ovn-nbctl lb-list shows of one load balancer ("" when
// there is none): "<proto> <vip> <targets>" lines, sorted.
func (s *stack) lbList(name string) string {
	s.t.Helper()
	if len(s.column("Load_Balancer", "name", "name=\""+name+"\"")) == 0 {
		return ""
	}
	var lines []string
	for _, l := range strings.Split(normalized(s.nbctl("lb-list", name)), "\n")[1:] {
		lines = append(lines, strings.Join(vipFields(strings.Fields(l)), " "))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// vipFields drops lb-list's UUID and name columns from a line.
func vipFields(f []string) []string {
	for i, w := range f {
		if w == "tcp" || w == "udp" || w == "sctp" {
			return f[i:]
		}
	}
	return f
}

// A network's Services get their load balancers in its cluster-wide
// group, from the slices mirrored for the network only, against a real
// apiserver and ovsdb-server: headless and ExternalName Services get none;
// a slice forged for another network feeds nothing; endpoints and Services
// followed; a deleted load balancer comes back; the network's rows go with
// its NAD.
func TestServiceLoadBalancersFromAPIState(t *testing.T) {
	s, greenNAD := policyStack(t, false)
	s.create(lbService("ns1", "web", "10.0.0.100", "fd00:10:96::100"),
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "headless"},
			Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Port: 80}}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "ext"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}},
		lbService("ns2", "web", "10.0.0.200", "fd00:10:96::200"),
		mirroredSlice("ns1", "web-v4", "web", blueNet, discoveryv1.AddressTypeIPv4, "node-a", "203.203.0.5", "203.203.0.6"),
		mirroredSlice("ns1", "web-v6", "web", blueNet, discoveryv1.AddressTypeIPv6, "node-b", "2010:100:200::5"),
		// A slice in ns1 that claims the green network: never blue's.
		mirroredSlice("ns1", "web-forged", "web", greenNet, discoveryv1.AddressTypeIPv4, "node-a", "10.200.1.9"),
	)
	blueWant := "tcp 10.0.0.100:80 203.203.0.5:8080,203.203.0.6:8080\ntcp [fd00:10:96::100]:80 [2010:100:200::5]:8080"
	s.eventually("ns1/web's and ns2/web's load balancers", func() bool {
		return s.lbList(blueWebLB) == blueWant && s.lbList(greenWebLB) != ""
	})
	if got := s.lbList(greenWebLB); got != "tcp 10.0.0.200:80\ntcp [fd00:10:96::200]:80" {
		t.Errorf("ns2/web without endpoints:\n%s", got)
	}
	all := s.column("Load_Balancer", "name")
	if !slices.Equal(all, []string{blueWebLB, greenWebLB}) {
		t.Errorf("load balancers %v: want the two ClusterIP Services' only (no headless or ExternalName one)", all)
	}
	lb := s.nbctl("--bare", "--columns=_uuid", "find", "Load_Balancer", "name=\""+blueWebLB+"\"")
	if got := s.column("Load_Balancer_Group", "load_balancer", "name="+blueGroup); !slices.Equal(got, []string{strings.TrimSpace(lb)}) {
		t.Errorf("%s holds %v, want %s", blueGroup, got, lb)
	}
	if got := s.nbctl("get", "Load_Balancer", lb, "options:hairpin_snat_ip", "external_ids:k8s.ovn.org/owner", "external_ids:k8s.ovn.org/role"); normalized(got) != "\"169.254.0.5 fd69::5\"\n\"ns1/web\"\nprimary" {
		t.Errorf("hairpin_snat_ip, owner and role:\n%s", got)
	}
	for sw, want := range map[string][]string{blueSwitch: {blueGroup, "ns1_tenant.blue_clusterSwitchLBGroup"},
		greenSwitch: {"ns2_tenant.green_clusterLBGroup", "ns2_tenant.green_clusterSwitchLBGroup"}} {
		if got := s.groupsOf("Logical_Switch", sw); !slices.Equal(got, want) {
			t.Errorf("%s load balancer groups %v, want %v", sw, got, want)
		}
	}
	if got := s.groupsOf("Logical_Router", "GR_ns1_tenant.blue_node-a"); !slices.Equal(got, []string{blueGroup, "ns1_tenant.blue_clusterRouterLBGroup"}) {
		t.Errorf("blue GR load balancer groups %v", got)
	}

	// Endpoints followed: one address gone.
	var v4 discoveryv1.EndpointSlice
	if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: "ns1", Name: "web-v4"}, &v4); err != nil {
		t.Fatal(err)
	}
	v4.Endpoints = v4.Endpoints[:1]
	if err := s.c.Update(s.ctx, &v4); err != nil {
		t.Fatal(err)
	}
	s.eventually("the removed endpoint gone", func() bool {
		return s.lbList(blueWebLB) == "tcp 10.0.0.100:80 203.203.0.5:8080\ntcp [fd00:10:96::100]:80 [2010:100:200::5]:8080"
	})
	// A foreign delete heals.
	s.nbctl("lb-del", blueWebLB)
	s.eventually("the deleted load balancer back", func() bool { return s.lbList(blueWebLB) != "" })

	// The Service deleted: its load balancer goes.
	if err := s.c.Delete(s.ctx, lbService("ns1", "web", "10.0.0.100")); err != nil {
		t.Fatal(err)
	}
	s.eventually("ns1/web's load balancer gone", func() bool { return s.lbList(blueWebLB) == "" })
	// The green network's NAD deleted: its load balancers go.
	if err := s.c.Delete(s.ctx, greenNAD); err != nil {
		t.Fatal(err)
	}
	s.eventually("ns2/web's load balancer gone", func() bool { return len(s.column("Load_Balancer", "name")) == 0 })
	// And the network's three load balancer groups with its topology
	// (upstream's Cleanup: cleanupLoadBalancerGroups); ns1's stay.
	s.eventually("the green network's load balancer groups gone", func() bool {
		return !slices.ContainsFunc(s.column("Load_Balancer_Group", "name"), func(n string) bool { return strings.HasPrefix(n, "ns2_") })
	})
	if got := s.column("Load_Balancer_Group", "name"); len(got) != 3 || !slices.Contains(got, blueGroup) {
		t.Errorf("load balancer groups once green is gone: %v, want blue's three", got)
	}
}

// groupsOf names a router's or switch's load balancer groups, sorted.
func (s *stack) groupsOf(table, name string) []string {
	s.t.Helper()
	var out []string
	for _, u := range strings.Fields(s.nbctl("--bare", "--columns=load_balancer_group", "find", table, "name=\""+name+"\"")) {
		out = append(out, strings.TrimSpace(s.nbctl("get", "Load_Balancer_Group", u, "name")))
	}
	for i := range out {
		out[i] = strings.Trim(out[i], "\"")
	}
	slices.Sort(out)
	return out
}

// A NodePort Service of the Layer2 network gets, besides its cluster-wide
// load balancer, node-a's per-node one on the network's switch and node-a's
// gateway router (ovn-nbctl ls-lb-list, lr-lb-list), with node-a's host
// addresses on the node port (taken off the switch by another client, it
// comes back); with externalTrafficPolicy Local the router
// gets a load balancer without SNAT; the Service deleted, both go.
func TestNodePortLoadBalancersOnTheNode(t *testing.T) {
	s, _ := policyStack(t, false)
	np := lbService("ns1", "np", "10.0.0.101", "fd00:10:96::101")
	np.Spec.Type, np.Spec.Ports[0].NodePort = corev1.ServiceTypeNodePort, 30080
	s.create(np, mirroredSlice("ns1", "np-v4", "np", blueNet, discoveryv1.AddressTypeIPv4, "node-a", "203.203.0.5"))
	blueGR := "GR_ns1_tenant.blue_node-a"
	both := "ns1_tenant.blue_Service_ns1/np_TCP_node_router+switch_node-a"
	want := "tcp 192.0.2.2:30080 203.203.0.5:8080\ntcp [2001:db8::2]:30080"
	s.eventually("the node's NodePort load balancer", func() bool { return s.lbList(both) == want })
	if sw, gr := s.lbsOn("Logical_Switch", blueSwitch), s.lbsOn("Logical_Router", blueGR); !slices.Equal(sw, []string{both}) || !slices.Equal(gr, []string{both}) {
		t.Errorf("the switch's load balancers %v, the router's %v: want %s on both", sw, gr, both)
	}
	if got := s.lbList("ns1_tenant.blue_Service_ns1/np_TCP_cluster"); got != "tcp 10.0.0.101:80 203.203.0.5:8080\ntcp [fd00:10:96::101]:80" {
		t.Errorf("the NodePort Service's cluster-wide load balancer:\n%s", got)
	}
	// Another client takes it off the switch: it comes back.
	s.nbctl("ls-lb-del", blueSwitch, both)
	s.eventually("the load balancer back on the switch", func() bool { return slices.Equal(s.lbsOn("Logical_Switch", blueSwitch), []string{both}) })

	var cur corev1.Service
	if err := s.c.Get(s.ctx, client.ObjectKeyFromObject(np), &cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	if err := s.c.Update(s.ctx, &cur); err != nil {
		t.Fatal(err)
	}
	local := "ns1_tenant.blue_Service_ns1/np_TCP_node_local_router_node-a"
	sw, router := "ns1_tenant.blue_Service_ns1/np_TCP_node_switch_node-a", "ns1_tenant.blue_Service_ns1/np_TCP_node_router_node-a"
	s.eventually("externalTrafficPolicy Local's router load balancer without SNAT", func() bool {
		return s.lbList(local) == "tcp 192.0.2.2:30080 203.203.0.5:8080" && s.lbList(both) == "" &&
			slices.Equal(s.lbsOn("Logical_Router", blueGR), []string{local, router}) && slices.Equal(s.lbsOn("Logical_Switch", blueSwitch), []string{sw})
	})
	if got := s.lbList(sw); got != "tcp 169.254.0.3:30080 203.203.0.5:8080\ntcp 192.0.2.2:30080 203.203.0.5:8080\ntcp [2001:db8::2]:30080\ntcp [fd69::3]:30080" {
		t.Errorf("the node's switch load balancer with externalTrafficPolicy Local:\n%s", got)
	}
	if got := strings.TrimSpace(s.nbctl("get", "Load_Balancer", local, "options:skip_snat")); got != "\"true\"" {
		t.Errorf("skip_snat %s", got)
	}
	if err := s.c.Delete(s.ctx, &cur); err != nil {
		t.Fatal(err)
	}
	s.eventually("the Service's load balancers gone from the switch and the router", func() bool {
		return len(s.column("Load_Balancer", "name")) == 0 && len(s.lbsOn("Logical_Switch", blueSwitch)) == 0 &&
			len(s.lbsOn("Logical_Router", blueGR)) == 0
	})
}

// lbsOn names the load balancers in a router's or switch's own
// load_balancer column (not those of its groups), sorted.
func (s *stack) lbsOn(table, name string) []string {
	s.t.Helper()
	var out []string
	for _, u := range strings.Fields(s.nbctl("--bare", "--columns=load_balancer", "find", table, "name=\""+name+"\"")) {
		out = append(out, strings.Trim(strings.TrimSpace(s.nbctl("get", "Load_Balancer", u, "name")), "\""))
	}
	slices.Sort(out)
	return out
}
