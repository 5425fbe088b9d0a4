package topology

import (
	"net/netip"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/dataplane/topology/services"
	"github.com/udnkit/udnkit/ovnk"
)

// A primary network's load balancer groups and the load balancers of its
// Services, against upstream's ovnkube-controller's Northbound of the
// reference case (upstream-live out/up-nb.json: tenant-blue/web and
// tenant-green/web, ClusterIP Services without endpoints).

// lbGroupParity are the network's three groups (created empty by
// base_network_controller_user_defined.go: initLoadBalancerGroups, names
// from types.ClusterLBGroupName & co. under
// GetNetworkScopedLoadBalancerGroupName) and their attachment: the
// cluster-wide and switch groups on the network's switch, the cluster-wide
// group (and the router group when node ports are enabled) on the gateway
// router.
func lbGroupParity(network, sw, gr string, nodePort bool) []parity {
	n := ovnk.NamesFor(network)
	grGroups := n.ClusterLBGroup()
	if nodePort {
		grGroups += "," + n.ClusterRouterLBGroup()
	}
	const init = "base_network_controller_user_defined.go: initLoadBalancerGroups"
	return []parity{
		{"Load_Balancer_Group", n.ClusterLBGroup(), "name", n.ClusterLBGroup(), init + " (types.ClusterLBGroupName)"},
		{"Load_Balancer_Group", n.ClusterSwitchLBGroup(), "name", n.ClusterSwitchLBGroup(), init + " (types.ClusterSwitchLBGroupName)"},
		{"Load_Balancer_Group", n.ClusterRouterLBGroup(), "name", n.ClusterRouterLBGroup(), init + " (types.ClusterRouterLBGroupName)"},
		{"Load_Balancer_Group", n.ClusterSwitchLBGroup(), "load_balancer", "", init + " (no template load balancers on a UDN: services_controller.go UseTemplates)"},
		{"Logical_Switch", sw, "load_balancer_group", n.ClusterLBGroup() + "," + n.ClusterSwitchLBGroup(),
			"layer2_user_defined_network_controller.go: initializeLogicalSwitch / base_network_controller.go: createNodeLogicalSwitch"},
		{"Logical_Router", gr, "load_balancer_group", grGroups,
			"gateway.go: createGWRouter (routerLoadBalancerGroupUUID only with the l3-gateway-config's node-port-enable)"},
	}
}

// lbGroupCases are the topology cases whose plans hold the groups, with
// the group entries each gets (init adds them to the case).
var lbGroupCases = map[string][]parity{
	"layer2 steady":       lbGroupParity("tenant_blue", pSW, pGR1, false),
	"layer2 upgrade":      lbGroupParity("tenant_blue", pSW, pGR1, false),
	"layer2 node gateway": lbGroupParity("tenant_blue", pSW, pGR1, true),
	"layer2 single-stack on a dual-stack cluster":          lbGroupParity("tenant_blue", pSW, pGR1, false),
	"layer2 single-stack on a dual-stack cluster, upgrade": lbGroupParity("tenant_blue", pSW, pGR1, false),
	"layer3 topology":                lbGroupParity("tenant-green_green", pNSg, pGRg, true),
	"layer3 topology, local gateway": lbGroupParity("tenant-green_green", pNSg, pGRg, true),
}

// init runs once every file's cases are registered.
func init() {
	for i := range parityCases {
		if extra, ok := lbGroupCases[parityCases[i].name]; ok {
			parityCases[i].same = append(slices.Clone(parityCases[i].same), extra...)
		}
	}
}

// Every case lbGroupCases names exists: a renamed case fails here instead
// of losing its group entries.
func TestLBGroupCasesExist(t *testing.T) {
	for name := range lbGroupCases {
		if !slices.ContainsFunc(parityCases, func(c parityCase) bool { return c.name == name }) {
			t.Errorf("lbGroupCases names %q, which is no parity case", name)
		}
	}
}

const pBlueWebLB = "tenant.blue_blue_Service_tenant-blue/web_TCP_cluster"

// servicesPlan is the reference case's tenant-blue/web (manifests/udn-l2.yaml)
// on the blue network.
func servicesPlan(t *testing.T) *rows.Desired {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-blue", Name: "web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.100.10",
			ClusterIPs: []string{"10.96.100.10", "fd00:10:96::10a"},
			Ports:      []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}}
	d, err := services.LoadBalancers(services.Network{Name: "tenant-blue_blue", Topology: base.TopologyLayer2,
		Subnets:           []netip.Prefix{pfx("10.100.0.0/16"), pfx("2001:db8:100::/60")},
		MasqueradeSubnets: ovnk.DefaultClusterConfig().MasqueradeSubnets}, nil, []services.Service{{Service: svc}})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var servicesParity = []parity{
	{"Load_Balancer", pBlueWebLB, "name", pBlueWebLB,
		"controller/services/lb_config.go: makeLBNameForNetwork (makeLBName under GetNetworkScopedLoadBalancerName)"},
	{"Load_Balancer", pBlueWebLB, "protocol", "tcp", "controller/services/loadbalancer.go: buildLB (strings.ToLower(lb.Protocol))"},
	{"Load_Balancer", pBlueWebLB, "vips", "10.96.100.10:80=,[fd00:10:96::10a]:80=",
		"controller/services/lb_config.go: buildClusterLBs (each ClusterIP, no endpoints: empty targets); loadbalancer.go: buildVipMap"},
	{"Load_Balancer", pBlueWebLB, "options",
		"event=false,hairpin_snat_ip=169.254.0.5 fd69::5,neighbor_responder=none,reject=true,skip_snat=false",
		"controller/services/loadbalancer.go: buildLB (config.Gateway.MasqueradeIPs.V4/V6OVNServiceHairpinMasqueradeIP); lb_config.go: lbOpts"},
	{"Load_Balancer", pBlueWebLB, "selection_fields", "", "controller/services/loadbalancer.go: buildLB (no ClientIP affinity)"},
	{"Load_Balancer", pBlueWebLB, "external_ids:k8s.ovn.org/kind", "Service",
		"controller/services/utils.go: getExternalIDsForLoadBalancer (types.LoadBalancerKindExternalID)"},
	{"Load_Balancer", pBlueWebLB, "external_ids:k8s.ovn.org/owner", "tenant-blue/web",
		"controller/services/utils.go: getExternalIDsForLoadBalancer (types.LoadBalancerOwnerExternalID)"},
	{"Load_Balancer", pBlueWebLB, "external_ids:k8s.ovn.org/network", "tenant-blue_blue",
		"controller/services/utils.go: getExternalIDsForLoadBalancer (types.NetworkExternalID)"},
	{"Load_Balancer", pBlueWebLB, "external_ids:k8s.ovn.org/role", "primary",
		"controller/services/utils.go: getExternalIDsForLoadBalancer (GetUserDefinedNetworkRole)"},
	{"Load_Balancer_Group", "tenant.blue_blue_clusterLBGroup", "load_balancer", pBlueWebLB,
		"controller/services/lb_config.go: buildClusterLBs (Groups: the network's ClusterLBGroupName)"},
}

var _ = addParityCase(parityCase{name: "services", plan: servicesPlan, same: servicesParity})

const (
	pBlueNPBoth = "tenant.blue_blue_Service_tenant-blue/np_TCP_node_router+switch_node-a"
	pBlueSW     = "tenant.blue_blue_ovn_layer2_switch"
	pBlueGR     = "GR_tenant.blue_blue_node-a"
)

// nodePortPlan is a NodePort Service tenant-blue/np (port 80, node port
// 30080, one endpoint 10.100.0.5:8080) on the blue network in node-a's
// zone (manifests/nodes.json: host-cidrs and l3-gateway-config 192.0.2.2
// and 2001:db8::2, node ports enabled).
func nodePortPlan(t *testing.T) *rows.Desired {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-blue", Name: "np"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: "10.96.100.11", ClusterIPs: []string{"10.96.100.11"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP}}}}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-blue", Name: "np-mirror",
		Labels: map[string]string{ovnk.LabelUserDefinedServiceName: "np"}, Annotations: map[string]string{ovnk.AnnotationEndpointSliceNetwork: "tenant-blue_blue"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: base.Ptr("http"), Protocol: base.Ptr(corev1.ProtocolTCP), Port: base.Ptr[int32](8080)}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.100.0.5"}, NodeName: base.Ptr("node-a")}}}
	node := services.Node{Name: "node-a", Switch: pBlueSW, GatewayRouter: pBlueGR, NodePortEnabled: true,
		HostAddresses: []netip.Addr{addr("192.0.2.2"), addr("2001:db8::2")}, GatewayAddresses: []netip.Addr{addr("192.0.2.2"), addr("2001:db8::2")}}
	d, err := services.LoadBalancers(services.Network{Name: "tenant-blue_blue", Topology: base.TopologyLayer2,
		Subnets:           []netip.Prefix{pfx("10.100.0.0/16"), pfx("2001:db8:100::/60")},
		MasqueradeSubnets: ovnk.DefaultClusterConfig().MasqueradeSubnets}, []services.Node{node},
		[]services.Service{{Service: svc, Slices: []*discoveryv1.EndpointSlice{slice}}})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var nodePortParity = []parity{
	{"Load_Balancer", pBlueNPBoth, "name", pBlueNPBoth,
		"controller/services/lb_config.go: buildPerNodeLBs (switch and router rules equal: \"node_router+switch_\"+node.name)"},
	{"Load_Balancer", pBlueNPBoth, "vips", "192.0.2.2:30080=10.100.0.5:8080,[2001:db8::2]:30080=",
		"controller/services/lb_config.go: buildPerNodeLBs (the \"node\" vip: node.hostAddressesStr(), each family's endpoints)"},
	{"Load_Balancer", pBlueNPBoth, "external_ids:k8s.ovn.org/owner", "tenant-blue/np",
		"controller/services/utils.go: getExternalIDsForLoadBalancer"},
	{"Load_Balancer", "tenant.blue_blue_Service_tenant-blue/np_TCP_cluster", "vips", "10.96.100.11:80=10.100.0.5:8080",
		"controller/services/lb_config.go: buildServiceLBConfigs (a NodePort's ClusterIP stays cluster-wide)"},
	{"Load_Balancer_Group", "tenant.blue_blue_clusterLBGroup", "load_balancer", "tenant.blue_blue_Service_tenant-blue/np_TCP_cluster",
		"controller/services/lb_config.go: buildClusterLBs"},
	{"Logical_Switch", pBlueSW, "load_balancer", pBlueNPBoth, "controller/services/lb_config.go: buildPerNodeLBs (Switches: node.switchName)"},
	{"Logical_Router", pBlueGR, "load_balancer", pBlueNPBoth, "controller/services/lb_config.go: buildPerNodeLBs (Routers: node.gatewayRouterName)"},
}

var _ = addParityCase(parityCase{name: "services, NodePort", plan: nodePortPlan, same: nodePortParity})
