package controllers

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers"
)

// A primary dual-stack Layer3 UDN gets its whole topology in node1's zone
// from the Nodes' annotations (as upstream's cluster manager and
// ovnkube-node write them): the local node's switch, router ports, gateway
// router with its join side, routes and (from its l3-gateway-config) its
// external side, the management port, a remote port and routes per other
// node. A node without its chassis is left out until it has one, and one
// with a malformed annotation; a malformed l3-gateway-config takes the
// node's gateway away until it is fixed; rows deleted behind udnkit's back
// come back; a deleted node takes its rows with it, and the deleted network
// all of its rows.
func TestLayer3TopologyFromAPIState(t *testing.T) {
	s := newStack(t)
	cfg := reconcilers.DefaultConfig()
	cfg.Controllers = []string{reconcilers.ControllerUDN}
	if err := reconcilers.SetupWithManager(s.mgr, cfg); err != nil {
		t.Fatal(err)
	}
	o := s.opts()
	o.Local = func(n *corev1.Node) bool { return n.Name == "node1" }
	o.Cluster = ovnk.DefaultClusterConfig()
	o.Cluster.ClusterSubnets = append(o.Cluster.ClusterSubnets, ovnk.DefaultUDNJoinSubnetV6) // dual-stack cluster
	o.Cluster.UDNAllowedDefaultServices = nil
	if _, err := Setup(s.ctx, s.mgr, o); err != nil {
		t.Fatal(err)
	}
	s.start()

	node := func(name, id, v4, v6 string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			ovnk.AnnotationNodeID:      id,
			ovnk.AnnotationNodeSubnets: `{"tenant-green_green":["` + v4 + `","` + v6 + `"]}`,
		}}}
	}
	n3 := node("node3", "4", "10.200.0.0/24", "2001:db8:200:1::/64")
	n3.Annotations[ovnk.AnnotationNodeChassisID] = ""
	delete(n3.Annotations, ovnk.AnnotationNodeChassisID)
	n4 := node("node4", "5", "10.200.4.0/24", "2001:db8:200:5::/64") // a malformed transit address: left out
	n4.Annotations[ovnk.AnnotationNodeTransitSwitchPortIfAddr] = `{"ipv4":"100.88.0.5"}`
	n1 := node("node1", "2", "10.200.1.0/24", "2001:db8:200:2::/64")
	n1.Annotations[ovnk.AnnotationL3GatewayConfig] = node1Gateway
	s.create(n1, node("node2", "3", "10.200.2.0/24", "2001:db8:200:3::/64"), n4)
	if err := s.c.Create(s.ctx, n3); err != nil { // without a chassis
		t.Fatal(err)
	}
	ns := namespace("tenant-green")
	ns.Labels = map[string]string{ovnk.LabelPrimaryUserDefinedNetwork: ""}
	udn := &udnv1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-green", Name: "green"},
		Spec: udnv1.UserDefinedNetworkSpec{Topology: udnv1.NetworkTopologyLayer3, Layer3: &udnv1.Layer3Config{Role: udnv1.NetworkRolePrimary,
			Subnets: []udnv1.Layer3Subnet{{CIDR: "10.200.0.0/16", HostSubnet: 24}, {CIDR: "2001:db8:200::/48", HostSubnet: 64}}}}}
	s.create(ns, udn)

	const cr, gr = "tenant.green_green_ovn_cluster_router", "GR_tenant.green_green_node1"
	routes := func(r string) string {
		if !strings.Contains(s.nbctl("--bare", "--columns=name", "list", "Logical_Router"), r) {
			return ""
		}
		return normalized(s.nbctl("lr-route-list", r))
	}
	wantCR := []string{
		// (no catch-all src-ip route of 10.200.0.0/16: that is EgressIP's,
		// off here; TestPolicyDefaultsFromAPIState has it on)
		"10.200.1.0/24 100.65.0.2 src-ip", "100.65.0.2 100.65.0.2 dst-ip",
		"10.200.2.0/24 100.88.0.3 dst-ip", "100.65.0.3 100.88.0.3 dst-ip",
		"2001:db8:200:2::/64 fd99::2 src-ip", "2001:db8:200:3::/64 fd97::3 dst-ip", "fd99::3 fd97::3 dst-ip",
	}
	hasAll := func(out string, want ...string) bool {
		for _, w := range want {
			if !strings.Contains(out, w) {
				return false
			}
		}
		return true
	}
	s.eventually("node1's switch, node2's remote port, the routes of both", func() bool {
		show := normalized(s.nbctl("show"))
		return hasAll(show, "(tenant.green_green_node1)", "port stor-tenant.green_green_node1",
			"port tenant.green_green_tstor-node2\ntype: remote\naddresses: [\"0a:58:64:58:00:03 100.88.0.3/16 fd97::3/64\"]",
			"("+gr+")", "port rtoj-"+gr, "port jtor-"+gr, "port rtoe-"+gr, "(ext_tenant.green_green_node1)",
			"port breth0_tenant.green_green_node1", "port k8s-tenant.green_green_node1") &&
			hasAll(routes(cr), wantCR...) && hasAll(routes(gr), "10.200.0.0/16 100.65.0.1 dst-ip", "2001:db8:200::/48 fd99::1 dst-ip", "0.0.0.0/0 192.0.2.1 dst-ip") &&
			strings.Contains(s.nbctl("lr-policy-list", cr), "ip4.dst == 192.0.2.2") &&
			len(strings.Fields(s.nbctl("--bare", "--columns=ip", "find", "Static_MAC_Binding", "logical_port=rtoe-"+gr))) == 4
	})
	if got := s.nbctl("--bare", "--columns=chassis_name", "list", "Gateway_Chassis"); got != chassisOf("node1") {
		t.Errorf("Gateway_Chassis chassis = %q, want node1's", got)
	}
	if show := s.nbctl("show"); strings.Contains(show, "tstor-node3") || strings.Contains(show, "tstor-node4") {
		t.Errorf("node3 (no chassis yet) or node4 (malformed transit address) got a transit port:\n%s", show)
	}

	// Heal: the node switch and a route deleted behind udnkit's back come back.
	s.nbctl("ls-del", "tenant.green_green_node1")
	s.nbctl("lr-route-del", cr, "10.200.2.0/24")
	s.eventually("the node switch and node2's route restored", func() bool {
		return strings.Contains(s.nbctl("show"), "port stor-tenant.green_green_node1") && hasAll(routes(cr), wantCR...)
	})

	// node1's l3-gateway-config turns malformed: its gateway router and
	// external side go (upstream syncs no gateway without a usable one),
	// its switch and management port stay; fixed, they come back.
	setGateway := func(v string) {
		var n corev1.Node
		if err := s.c.Get(s.ctx, client.ObjectKey{Name: "node1"}, &n); err != nil {
			t.Fatal(err)
		}
		n.Annotations[ovnk.AnnotationL3GatewayConfig] = v
		if err := s.c.Update(s.ctx, &n); err != nil {
			t.Fatal(err)
		}
	}
	setGateway(`{"default":{"mode":"shared","mac-address":"zz"}}`)
	s.eventually("node1 without its gateway router, external switch and 1004 policies; its switch kept", func() bool {
		show := s.nbctl("show")
		return !strings.Contains(show, "("+gr+")") && !strings.Contains(show, "ext_tenant.green_green_node1") &&
			strings.Contains(show, "port k8s-tenant.green_green_node1") && !strings.Contains(s.nbctl("lr-policy-list", cr), "1004")
	})
	setGateway(node1Gateway)
	s.eventually("node1's gateway router and external side back", func() bool {
		show := s.nbctl("show")
		return strings.Contains(show, "port rtoe-"+gr) && strings.Contains(show, "(ext_tenant.green_green_node1)")
	})

	// node3 publishes its chassis: it joins; node2 goes: its rows go.
	var cur corev1.Node
	if err := s.c.Get(s.ctx, client.ObjectKey{Name: "node3"}, &cur); err != nil {
		t.Fatal(err)
	}
	cur.Annotations[ovnk.AnnotationNodeChassisID] = chassisOf("node3")
	if err := s.c.Update(s.ctx, &cur); err != nil {
		t.Fatal(err)
	}
	if err := s.c.Delete(s.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node2"}}); err != nil {
		t.Fatal(err)
	}
	s.eventually("node3's port and routes, none of node2's", func() bool {
		show, r := s.nbctl("show"), routes(cr)
		return strings.Contains(show, "tenant.green_green_tstor-node3") && !strings.Contains(show, "tstor-node2") &&
			hasAll(r, "10.200.0.0/24 100.88.0.4 dst-ip", "100.65.0.4 100.88.0.4 dst-ip") && !strings.Contains(r, "100.88.0.3")
	})

	// The network goes: every row of it goes.
	if err := s.c.Delete(s.ctx, udn); err != nil {
		t.Fatal(err)
	}
	s.eventually("no router, switch or Gateway_Chassis left", func() bool {
		return s.nbctl("--bare", "--columns=name", "list", "Logical_Router") == "" &&
			s.nbctl("--bare", "--columns=name", "list", "Logical_Switch") == "" &&
			s.nbctl("--bare", "--columns=name", "list", "Gateway_Chassis") == ""
	})
}
