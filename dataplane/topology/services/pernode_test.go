package services

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/udnkit/udnkit/dataplane/topology/base"
)

const (
	blueSwitch = "tenant.blue_blue_ovn_layer2_switch"
	blueGR     = "GR_tenant.blue_blue_node-a"
)

// twoNodeSlice: one endpoint on node-a, one on node-b.
func twoNodeSlice(svc string) []*discoveryv1.EndpointSlice {
	return []*discoveryv1.EndpointSlice{mirrored(blue.Name, svc, "v4", 8080,
		onNode(ep("10.100.0.5", true), "node-a"), onNode(ep("10.100.0.6", true), "node-b"))}
}

func lbName(svc, scope string) string {
	return "tenant.blue_blue_Service_tenant-blue/" + svc + "_TCP_" + scope
}

// A NodePort Service keeps its cluster-wide ClusterIP load balancer and
// gets, on the zone's node, one load balancer for its switch and gateway
// router: the node's host addresses (sorted as text) on the node port to
// every endpoint (lb_config.go: buildPerNodeLBs, switch and router rules
// equal: "node_router+switch_<node>").
func TestNodePort(t *testing.T) {
	svc := makeService("np").with(func(s *corev1.ServiceSpec) { s.Type, s.Ports[0].NodePort = corev1.ServiceTypeNodePort, 30080 }).obj()
	lbs, group, on := buildOn(t, blue, []Node{blueNodeA}, Service{Service: svc, Slices: twoNodeSlice("np")})
	both := lbName("np", "node_router+switch_node-a")
	if !maps.Equal(lbs[both].Vips, map[string]string{"192.0.2.2:30080": "10.100.0.5:8080,10.100.0.6:8080", "[2001:db8::2]:30080": ""}) {
		t.Errorf("%s vips %v", both, lbs[both].Vips)
	}
	if !slices.Equal(group, []string{lbName("np", "cluster")}) || len(lbs) != 2 {
		t.Errorf("load balancers %v, group %v: want the cluster-wide one in the group and the node's", slices.Collect(maps.Keys(lbs)), group)
	}
	if !slices.Equal(on[blueSwitch], []string{both}) || !slices.Equal(on[blueGR], []string{both}) {
		t.Errorf("attached %v", on)
	}
	// Node ports disabled on the node: no vip, no load balancer.
	off := blueNodeA
	off.NodePortEnabled = false
	lbs, _, on = buildOn(t, blue, []Node{off}, Service{Service: svc, Slices: twoNodeSlice("np")})
	if len(lbs) != 1 || len(on) != 0 {
		t.Errorf("node ports disabled: load balancers %v attached %v, want the cluster-wide one only", slices.Collect(maps.Keys(lbs)), on)
	}
}

// externalTrafficPolicy Local on a NodePort: the router sends the node
// port to the local endpoints without SNAT ("node_local_router_<node>",
// skip_snat), a family without local endpoints stays on the SNATing
// router load balancer, and the switch adds the ETP-local masquerade vip
// (169.254.0.3, fd69::3) to the local endpoints (buildPerNodeLBs).
func TestNodePortExternalTrafficPolicyLocal(t *testing.T) {
	svc := makeService("npl").with(func(s *corev1.ServiceSpec) {
		s.Type, s.Ports[0].NodePort, s.ExternalTrafficPolicy = corev1.ServiceTypeNodePort, 30080, corev1.ServiceExternalTrafficPolicyLocal
	}).obj()
	lbs, _, on := buildOn(t, blue, []Node{blueNodeA}, Service{Service: svc, Slices: twoNodeSlice("npl")})
	want := map[string]map[string]string{
		lbName("npl", "node_router_node-a"):       {"[2001:db8::2]:30080": ""},
		lbName("npl", "node_local_router_node-a"): {"192.0.2.2:30080": "10.100.0.5:8080"},
		lbName("npl", "node_switch_node-a"): {"169.254.0.3:30080": "10.100.0.5:8080", "192.0.2.2:30080": "10.100.0.5:8080,10.100.0.6:8080",
			"[fd69::3]:30080": "", "[2001:db8::2]:30080": ""},
	}
	for name, vips := range want {
		if !maps.Equal(lbs[name].Vips, vips) {
			t.Errorf("%s vips %v, want %v", name, lbs[name].Vips, vips)
		}
	}
	if lbs[lbName("npl", "node_local_router_node-a")].Options["skip_snat"] != "true" || lbs[lbName("npl", "node_router_node-a")].Options["skip_snat"] != "false" {
		t.Error("skip_snat: want true on the local router load balancer only")
	}
	if !slices.Equal(on[blueGR], []string{lbName("npl", "node_local_router_node-a"), lbName("npl", "node_router_node-a")}) ||
		!slices.Equal(on[blueSwitch], []string{lbName("npl", "node_switch_node-a")}) {
		t.Errorf("attached %v", on)
	}
}

// internalTrafficPolicy Local: the ClusterIP leaves the cluster-wide load
// balancer; the node's switch sends it to the node's endpoints, its router
// to every endpoint (makeNodeSwitchTargetIPs, makeNodeRouterTargetIPs).
// Two nodes of the zone without local endpoints get one merged switch load
// balancer (mergeLBs: "_merged", named after the first node).
func TestInternalTrafficPolicyLocal(t *testing.T) {
	svc := makeService("itp").with(func(s *corev1.ServiceSpec) {
		s.InternalTrafficPolicy = base.Ptr(corev1.ServiceInternalTrafficPolicyLocal)
	}).obj()
	lbs, group, _ := buildOn(t, blue, []Node{blueNodeA}, Service{Service: svc, Slices: twoNodeSlice("itp")})
	if len(group) != 0 {
		t.Errorf("group %v: want no cluster-wide load balancer", group)
	}
	if got := lbs[lbName("itp", "node_switch_node-a")].Vips; !maps.Equal(got, map[string]string{"10.96.100.10:80": "10.100.0.5:8080", "[fd00:10:96::10a]:80": ""}) {
		t.Errorf("switch vips %v", got)
	}
	if got := lbs[lbName("itp", "node_router_node-a")].Vips; !maps.Equal(got,
		map[string]string{"10.96.100.10:80": "10.100.0.5:8080,10.100.0.6:8080", "[fd00:10:96::10a]:80": ""}) {
		t.Errorf("router vips %v", got)
	}
	c, d := blueNodeA, blueNodeA
	c.Name, c.GatewayRouter = "node-c", "GR_tenant.blue_blue_node-c"
	d.Name, d.GatewayRouter = "node-d", "GR_tenant.blue_blue_node-d"
	lbs, _, on := buildOn(t, blue, []Node{d, c}, Service{Service: svc, Slices: twoNodeSlice("itp")})
	merged := lbName("itp", "node_switch_node-c_merged")
	if got := lbs[merged].Vips; !maps.Equal(got, map[string]string{"10.96.100.10:80": "", "[fd00:10:96::10a]:80": ""}) {
		t.Errorf("%s vips %v (load balancers %v)", merged, got, slices.Sorted(maps.Keys(lbs)))
	}
	if !slices.Equal(on[blueSwitch], []string{merged}) {
		t.Errorf("switch holds %v, want %s once", on[blueSwitch], merged)
	}
}

// A host-network endpoint (outside the network's subnets) moves the
// ClusterIP to per-node load balancers, and on the node's own router the
// node's address is swapped for the host masquerade address 169.254.0.2:
// as upstream writes the default network's kubernetes Service
// (upstream-live out/up-nb.json: Service_default/kubernetes_TCP_node_router_node-a
// 10.96.0.1:443 -> 169.254.0.2:34233, _node_switch_node-a -> 192.0.2.2:34233).
func TestHostNetworkEndpoint(t *testing.T) {
	svc := makeService("host").with(func(s *corev1.ServiceSpec) { s.ClusterIPs = s.ClusterIPs[:1] }).obj()
	lbs, group, _ := buildOn(t, blue, []Node{blueNodeA}, Service{Service: svc,
		Slices: []*discoveryv1.EndpointSlice{mirrored(blue.Name, "host", "v4", 8080, onNode(ep("192.0.2.2", true), "node-a"))}})
	if len(group) != 0 {
		t.Errorf("group %v", group)
	}
	if got := lbs[lbName("host", "node_router_node-a")].Vips; !maps.Equal(got, map[string]string{"10.96.100.10:80": "169.254.0.2:8080"}) {
		t.Errorf("router vips %v", got)
	}
	if got := lbs[lbName("host", "node_switch_node-a")].Vips; !maps.Equal(got, map[string]string{"10.96.100.10:80": "192.0.2.2:8080"}) {
		t.Errorf("switch vips %v", got)
	}
	// Without a gateway router, the switch's only.
	noGR := blueNodeA
	noGR.GatewayRouter = ""
	_, _, on := buildOn(t, blue, []Node{noGR}, Service{Service: svc,
		Slices: []*discoveryv1.EndpointSlice{mirrored(blue.Name, "host", "v4", 8080, onNode(ep("192.0.2.2", true), "node-a"))}})
	if len(on) != 1 || !slices.Equal(on[blueSwitch], []string{lbName("host", "node_switch_node-a")}) {
		t.Errorf("attached %v without a gateway router", on)
	}
}
