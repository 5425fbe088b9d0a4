package topology

import (
	"net"
	"net/netip"
	"slices"
	"testing"

	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/ovnk"
)

// The Layer2 plan's rows beyond ports and keys: the management-port SNAT,
// the transit router's policies and routes, the gateway router udnkit
// creates when OVN-Kubernetes is absent, and what differs or is udnkit's own.

var (
	pSNAT4   = natKey(pTR, "snat", "10.100.0.0/16")
	pSNAT6   = natKey(pTR, "snat", "fd00:100::/64")
	pNodeIP4 = policyKey(pTR, PolicyPriorityNodeIP, `inport == "`+pRTOS+`" && ip4.dst == 172.18.0.2 /* `+pSW+` */`)
	pNodeIP6 = policyKey(pTR, PolicyPriorityNodeIP, `inport == "`+pRTOS+`" && ip6.dst == fc00:f853::2 /* `+pSW+` */`)
	pPodPod4 = policyKey(pTR, PolicyPriorityAllow, "ip4.src == 10.100.0.0/16 && ip4.dst == 10.100.0.0/16")
	pPodPod6 = policyKey(pTR, PolicyPriorityAllow, "ip6.src == fd00:100::/64 && ip6.dst == fd00:100::/64")
	pReply   = policyKey(pTR, PolicyPriorityAllow, "pkt.mark == 42")
)

// layer2RoutingParity: the same network as layer2Parity, node1 with node
// IPs 172.18.0.2 and fc00:f853::2, service IPs 10.96.0.1 and fd96::1 (only
// spec.clusterIP, the first, is routed).
var layer2RoutingParity = []parity{
	// The management-port SNAT (base_network_controller_user_defined.go:
	// buildUDNEgressSNAT via layer2_user_defined_network_controller.go:
	// addOrUpdateUDNClusterSubnetEgressSNAT, on the transit router with the
	// trtos- port; libovsdb/ops/router.go: buildNAT).
	{"NAT", pSNAT4, "type", "snat", "base_network_controller_user_defined.go: buildUDNEgressSNAT (BuildSNATWithMatch)"},
	{"NAT", pSNAT4, "logical_ip", "10.100.0.0/16", "base_network_controller_user_defined.go: buildUDNEgressSNAT (the network's subnet, mask kept)"},
	{"NAT", pSNAT4, "external_ip", "169.254.0.12", "base_network_controller_user_defined.go: buildUDNEgressSNAT (udn.AllocateV4MasqueradeIPs(networkID).ManagementPort)"},
	{"NAT", pSNAT6, "external_ip", "fd69::c", "base_network_controller_user_defined.go: buildUDNEgressSNAT (udn.AllocateV6MasqueradeIPs(networkID).ManagementPort)"},
	{"NAT", pSNAT4, "logical_port", pRTOS, "layer2_user_defined_network_controller.go: addOrUpdateUDNClusterSubnetEgressSNAT (GetNetworkScopedRouterToSwitchPortName)"},
	{"NAT", pSNAT4, "match", "eth.dst == 0a:58:0a:64:00:02", "base_network_controller_user_defined.go: getMasqueradeManagementIPSNATMatch (IPAddrToHWAddr of the first subnet's management IP)"},
	{"NAT", pSNAT6, "match", "eth.dst == 0a:58:0a:64:00:02", "base_network_controller_user_defined.go: buildUDNEgressSNAT (one MAC, from localPodSubnets[0], for every family)"},
	{"NAT", pSNAT4, "options", "stateless=false", "libovsdb/ops/router.go: buildNAT"},
	{"NAT", pSNAT4, "external_port_range", "32768-60999",
		"libovsdb/ops/router.go: buildNAT (config.Gateway.EphemeralPortRange: --ephemeral-port-range, else the host's net.ipv4.ip_local_port_range, whose kernel default this is; udnkit's --external-port-range)"},
	{"NAT", pSNAT4, "external_ids:k8s.ovn.org/network", "tenant_blue", "base_network_controller_user_defined.go: buildUDNEgressSNAT (types.NetworkExternalID)"},
	{"NAT", pSNAT4, "external_ids:k8s.ovn.org/topology", "layer2", "base_network_controller_user_defined.go: buildUDNEgressSNAT (types.TopologyExternalID)"},

	// Traffic to the node's own IPs goes to the management port.
	{"Logical_Router_Policy", pNodeIP4, "action", "reroute", "gatewayrouter/policybasedroutes.go: createPolicyBasedRoutes (from AddSameNodeIPPolicy, gateway.go: SyncGateway)"},
	{"Logical_Router_Policy", pNodeIP4, "priority", "1004", "gatewayrouter/policybasedroutes.go: AddSameNodeIPPolicy (types.NodeSubnetPolicyPriority)"},
	{"Logical_Router_Policy", pNodeIP4, "match", `inport == "` + pRTOS + `" && ip4.dst == 172.18.0.2 /* ` + pSW + ` */`,
		"gatewayrouter/policybasedroutes.go: generateNodeIPMatch"},
	{"Logical_Router_Policy", pNodeIP4, "nexthops", "10.100.0.2", "gateway.go: SyncGateway (GetNodeManagementIP of the subnet)"},
	{"Logical_Router_Policy", pNodeIP6, "nexthops", "fd00:100::2", "gateway.go: SyncGateway (GetNodeManagementIP of the subnet)"},
	{"Logical_Router_Policy", pNodeIP4, "external_ids:k8s.ovn.org/network", "tenant_blue", "gatewayrouter/policybasedroutes.go: createPolicyBasedRoutes"},
	{"Logical_Router_Policy", pNodeIP4, "external_ids:k8s.ovn.org/topology", "layer2", "gatewayrouter/policybasedroutes.go: createPolicyBasedRoutes"},
	// EgressIP's no-reroute policies, which udnkit writes so that pod-to-pod
	// and reply traffic is never rerouted.
	{"Logical_Router_Policy", pPodPod4, "action", "allow", "egressip.go: createEgressIPLogicalRouterPolicy"},
	{"Logical_Router_Policy", pPodPod4, "priority", "102", "egressip.go: createDefaultNoReroutePodPolicies (types.DefaultNoRereoutePriority)"},
	{"Logical_Router_Policy", pPodPod6, "match", "ip6.src == fd00:100::/64 && ip6.dst == fd00:100::/64", "egressip.go: createDefaultNoReroutePodPolicies"},
	{"Logical_Router_Policy", pReply, "action", "allow", "egressip.go: createDefaultNoRerouteReplyTrafficPolicy"},
	{"Logical_Router_Policy", pReply, "match", "pkt.mark == 42", "egressip.go: createDefaultNoRerouteReplyTrafficPolicy (types.EgressIPReplyTrafficConnectionMark)"},

	// Routes of the local node and the service routes.
	{"Logical_Router_Static_Route", pTR + " 10.100.0.0/16", "policy", "src-ip", "gateway.go: updateClusterRouterStaticRoutes (shared gateway mode)"},
	{"Logical_Router_Static_Route", pTR + " 10.100.0.0/16", "nexthop", "100.88.0.5", "gateway.go: updateClusterRouterStaticRoutes (transitRouterInfo.gatewayRouterNets)"},
	{"Logical_Router_Static_Route", pTR + " fd00:100::/64", "nexthop", "fd97::5", "gateway.go: updateClusterRouterStaticRoutes"},
	{"Logical_Router_Static_Route", pTR + " 100.65.0.2", "nexthop", "100.88.0.5", "gateway.go: updateClusterRouterStaticRoutes (the GR's join IP via its transit IP)"},
	{"Logical_Router_Static_Route", pTR + " 100.65.0.2", "policy", "", "gateway.go: updateClusterRouterStaticRoutes (policy left empty: OVN's dst-ip)"},
	{"Logical_Router_Static_Route", pTR + " 100.65.0.2", "external_ids:k8s.ovn.org/topology", "layer2", "gateway.go: updateClusterRouterStaticRoutes"},
	{"Logical_Router_Static_Route", pTR + " 100.65.0.4", "external_ids:k8s.ovn.org/node", "node3", "layer2_user_defined_network_controller.go: addTransitRouterRoutes (types.NodeExternalID)"},
	{"Logical_Router_Static_Route", pTR + " fd99::4", "policy", "", "layer2_user_defined_network_controller.go: addTransitRouterRoutes"},
	{"Logical_Router_Port", "trtor-" + pGR3, "external_ids:k8s.ovn.org/node", "node3", "layer2_user_defined_network_controller.go: addRouterSetupForRemoteNodeGR (types.NodeExternalID)"},
	{"Logical_Router_Port", "trtor-" + pGR3, "external_ids:k8s.ovn.org/network", "tenant_blue", "layer2_user_defined_network_controller.go: addRouterSetupForRemoteNodeGR"},
	{"Logical_Router_Static_Route", pGR1 + " 10.100.0.0/16", "nexthop", "100.88.0.4", "gateway.go: updateGWRouterStaticRoutes (transitRouterInfo.transitRouterNets)"},
	{"Logical_Router_Static_Route", pGR1 + " fd00:100::/64", "output_port", "rtotr-" + pGR1, "gateway.go: updateGWRouterStaticRoutes (getGWRouterPortName)"},
	{"Logical_Router_Static_Route", pGR1 + " 10.100.0.0/16", "policy", "", "gateway.go: updateGWRouterStaticRoutes (policy left empty)"},
	{"Logical_Router_Static_Route", pTR + " 10.96.0.1", "nexthop", "10.100.0.2", "controller/services/services_controller.go: configureUDNEnabledServiceRoute (the management IP)"},
	{"Logical_Router_Static_Route", pTR + " 10.96.0.1", "policy", "dst-ip", "controller/services/services_controller.go: configureUDNEnabledServiceRoute"},

	// The switch's router port.
	{"Logical_Switch_Port", "stotr-" + pSW, "type", "router", "layer2_user_defined_network_controller.go: syncClusterRouterPorts"},
	{"Logical_Switch_Port", "stotr-" + pSW, "addresses", "router", "layer2_user_defined_network_controller.go: syncClusterRouterPorts"},
	{"Logical_Switch_Port", "stotr-" + pSW, "options", "router-port=" + pRTOS, "layer2_user_defined_network_controller.go: syncClusterRouterPorts"},
	{"Logical_Switch_Port", "stotr-" + pSW, "external_ids:k8s.ovn.org/topology", "layer2", "layer2_user_defined_network_controller.go: syncClusterRouterPorts"},

	// The gateway router udnkit creates when OVN-Kubernetes has not: every
	// option upstream sets on a Layer2 user-defined network's GR.
	{"Logical_Router", pGR1, "options",
		"always_learn_from_arp_request=false,chassis=" + chassisOf("node1") + ",disable_garp_rarp=true,dynamic_neigh_routers=false," +
			"lb_force_snat_ip=100.65.0.2 fd99::2,mac_binding_age_threshold=300",
		"gateway.go: createGWRouter (no snat-ct-zone on a user-defined network; lb_force_snat_ip: the GR's join IPs on Layer2)"},
	{"Logical_Router", pGR1, "external_ids:k8s.ovn.org/network", "tenant_blue", "gateway.go: createGWRouter (util.GenerateExternalIDsForSwitchOrRouter)"},
}

// layer2UpgradeRowsParity: the upgrade pair's router port.
var layer2UpgradeRowsParity = []parity{
	{"Logical_Router_Port", pRTOS + "-upgrade", "mac", "0a:58:64:41:00:02",
		"layer2_user_defined_network_controller.go: ensureUpgradeTopology (IPAddrToHWAddr of the local GR's first join IP)"},
	{"Logical_Router_Port", pRTOS + "-upgrade", "networks", "100.65.255.254/16,fd99::ffff:ffff:ffff:fffe/64",
		"layer2_user_defined_network_controller.go: ensureUpgradeTopology (getLastJoinIPs)"},
	{"Logical_Switch_Port", "stotr-" + pSW + "-upgrade", "options:router-port", pRTOS + "-upgrade",
		"layer2_user_defined_network_controller.go: ensureUpgradeTopology"},
	{"Logical_Switch_Port", pSTOR2, "external_ids:k8s.ovn.org/node", "node2",
		"layer2_user_defined_network_controller.go: addSwitchPortForRemoteNodeGR (types.NodeExternalID)"},
	{"Logical_Router_Static_Route", pTR + " 100.65.0.3", "external_ids:k8s.ovn.org/node", "node2",
		"layer2_user_defined_network_controller.go: addTransitRouterRoutes (from addRouterSetupForRemoteNodeGR, the old topology's joinIP via joinIP)"},
	{"Logical_Router_Policy", pPodPod4, "external_ids:k8s.ovn.org/id", "default-network-controller:EgressIP:102:EIP-No-Reroute-Pod-To-Pod:ip4:tenant_blue",
		"egressip.go: getEgressIPLRPNoReRoutePodToPodDbIDs (the policy is EgressIP's Pod-To-Pod no-reroute policy)"},
	{"Logical_Router_Policy", pPodPod4, "external_ids:ip-family", "ip4", "egressip.go: getEgressIPLRPNoReRoutePodToPodDbIDs"},
	{"Logical_Router_Policy", pPodPod4, "external_ids:network", "tenant_blue", "egressip.go: getEgressIPLRPNoReRoutePodToPodDbIDs"},
	{"Logical_Router_Policy", pReply, "external_ids:k8s.ovn.org/id", "default-network-controller:EgressIP:102:EIP-No-Reroute-reply-traffic:ip:tenant_blue",
		"egressip.go: getEgressIPLRPNoReRouteDbIDs (EgressIP's reply-traffic no-reroute policy, both families)"},
	{"Logical_Router_Policy", pReply, "external_ids:k8s.ovn.org/owner-type", "EgressIP", "egressip.go: getEgressIPLRPNoReRouteDbIDs"},
}

// layer2OnlyUdnkit is what udnkit writes on the Layer2 rows that upstream does not.
var layer2OnlyUdnkit = []udnkitOnly{
	{"NAT", pSNAT4, "external_ids:" + ovnk.ExternalIDPiece,
		"every row udnkit owns names its piece, so pieces sharing a router (topology, live migration) never remove each other's rows"},
	{"Logical_Router", pTR, "external_ids:" + ovnk.ExternalIDPiece, "the same, on every router, port, route, policy and switch"},
}

// layer2Differs is where udnkit's Layer2 value is not upstream's.
var layer2Differs = []differs{
	{"Gateway_Chassis", pRTOS, "external_ids",
		"k8s.ovn.org/network=tenant_blue,k8s.ovn.org/topology=layer2,k8s.ovn.org/udnkit-piece=transit-router", "",
		"base_network_controller.go: syncNodeClusterRouterPort writes none (its row goes with its port); udnkit owns every row it writes by these keys, so a changed chassis or a removed node or network removes it"},
	{"Logical_Router", pGR1, "external_ids",
		"k8s.ovn.org/network=tenant_blue,k8s.ovn.org/role=primary,k8s.ovn.org/topology=layer2,k8s.ovn.org/udnkit-piece=transit-router",
		"k8s.ovn.org/network=tenant_blue,k8s.ovn.org/role=primary,k8s.ovn.org/topology=layer2,physical_ip=<node IP>,physical_ips=<node IPs and masquerade IPs>",
		"gateway.go: createGWRouter takes physical_ip(s) from the node's l3-gateway-config; this node has none yet (its ovnkube-node has not set its gateway up), so its GR has no external side (the gateway case below has)"},
}

var _ = addParityCase(parityCase{
	name: "layer2 steady", plan: func(t *testing.T) *rows.Desired { return parityPlan(t, false) },
	same: append(append([]parity{}, layer2Parity...), layer2RoutingParity...), only: layer2OnlyUdnkit, differs: layer2Differs,
})

var _ = addParityCase(parityCase{
	name: "layer2 upgrade", plan: func(t *testing.T) *rows.Desired { return parityPlan(t, true) },
	same: append(append(append(append(layer2SteadyRows(pGR1, "trtor-"+pGR1, "trtor-"+pGR3, "rtotr-"+pGR1, pSW), zoneCoppParity()...),
		layer2UpgradeParity...), layer2RoutingParity...), layer2UpgradeRowsParity...),
	only: layer2OnlyUdnkit, differs: layer2Differs,
})

// layer2SteadyRows are layer2Parity's entries of these rows, which the
// upgrade leaves as they are.
func layer2SteadyRows(rows ...string) []parity {
	var out []parity
	for _, p := range layer2Parity {
		if slices.Contains(rows, p.row) {
			out = append(out, p)
		}
	}
	return out
}

// zoneCoppParity are layer2Parity's entries of the zone's default COPP, its
// meters and bands: every router that names it names the same rows.
func zoneCoppParity() []parity {
	var out []parity
	for _, p := range layer2Parity {
		if slices.Contains([]string{"Copp", "Meter", "Meter_Band"}, p.table) {
			out = append(out, p)
		}
	}
	return out
}

// The gateway case: parityPlan's network and nodes, node1 with the
// l3-gateway-config the reference cluster's node-a carries
// (../shared/upstream-live/manifests/nodes.json) and the network's gateway
// masquerade IPs (network ID 1).
const (
	pRTOE1 = "rtoe-" + pGR1
	pETOR1 = "etor-" + pGR1
	pEXT1  = "ext_tenant_blue_node1"
	pLN1   = "breth0_tenant_blue_node1"
	pMGMT1 = "k8s-tenant_blue_node1"
)

func gatewayParityPlan(t *testing.T) *rows.Desired {
	t.Helper()
	net := parityNetwork()
	net.GatewayMasqueradeIPs = []netip.Addr{addr("169.254.0.11"), addr("fd69::b")}
	net.MasqueradeSubnets = []netip.Prefix{pfx("169.254.0.0/17"), pfx("fd69::/112")}
	nodes := parityNodes(false)
	nodes[0].Gateway = referenceGateway("node1")
	return mustLayer2(t, net, nodes)
}

// referenceGateway is node-a's l3-gateway-config of the reference cluster,
// for node.
func referenceGateway(node string) *ovnk.L3GatewayConfig {
	mac, _ := net.ParseMAC("0a:58:c0:00:02:02")
	return &ovnk.L3GatewayConfig{
		Mode: ovnk.GatewayModeShared, BridgeID: "breth0", InterfaceID: "breth0_" + node, MAC: mac,
		IPAddresses: []netip.Prefix{pfx("192.0.2.2/24"), pfx("2001:db8::2/64")},
		NextHops:    []netip.Addr{addr("192.0.2.1"), addr("2001:db8::1")}, NodePortEnable: true,
	}
}

// layer2GatewayParity: the external side of node1's GR and its management
// port.
var layer2GatewayParity = []parity{
	{"Logical_Router", pGR1, "external_ids:physical_ip", "192.0.2.2", "gateway.go: createGWRouter (the first of the l3-gateway-config's ip-addresses)"},
	{"Logical_Router", pGR1, "external_ids:physical_ips", "192.0.2.2,2001:db8::2,169.254.0.11,fd69::b",
		"gateway.go: createGWRouter (every address, with the gateway masquerade IPs layer2_user_defined_network_controller.go: nodeGatewayConfig appends)"},
	{"Logical_Router", pGR1, "external_ids:k8s.ovn.org/role", "primary", "util/util.go: GenerateExternalIDsForSwitchOrRouter"},
	{"Logical_Router_Port", pRTOE1, "mac", "0a:58:c0:00:02:02", "gateway.go: addExternalSwitch (the l3-gateway-config's mac-address)"},
	{"Logical_Router_Port", pRTOE1, "networks", "169.254.0.11/32,192.0.2.2/24,2001:db8::2/64,fd69::b/128",
		"gateway.go: addExternalSwitch (ip-addresses and, from nodeGatewayConfig, the masquerade IPs with a host mask)"},
	{"Logical_Router_Port", pRTOE1, "external_ids:k8s.ovn.org/network", "tenant_blue", "gateway.go: addExternalSwitch"},
	{"Logical_Router_Static_Route", pGR1 + " 169.254.0.0/17", "nexthop", "169.254.0.4", "gateway.go: updateGWRouterStaticRoutes (node.DummyNextHopIPs)"},
	{"Logical_Router_Static_Route", pGR1 + " 169.254.0.0/17", "output_port", pRTOE1, "gateway.go: updateGWRouterStaticRoutes"},
	{"Logical_Router_Static_Route", pGR1 + " fd69::/112", "nexthop", "fd69::4", "gateway.go: updateGWRouterStaticRoutes (V6DummyNextHopMasqueradeIP)"},
	{"Logical_Router_Static_Route", pGR1 + " 0.0.0.0/0", "nexthop", "192.0.2.1", "gateway.go: updateGWRouterStaticRoutes (the l3-gateway-config's next-hops)"},
	{"Logical_Router_Static_Route", pGR1 + " 0.0.0.0/0", "output_port", pRTOE1, "gateway.go: updateGWRouterStaticRoutes"},
	{"Logical_Router_Static_Route", pGR1 + " ::/0", "nexthop", "2001:db8::1", "gateway.go: updateGWRouterStaticRoutes"},
	{"Logical_Router_Static_Route", pGR1 + " ::/0", "policy", "", "gateway.go: updateGWRouterStaticRoutes (policy left empty)"},
	{"NAT", natKey(pGR1, "snat", "100.65.0.2"), "external_ip", "169.254.0.11", "gateway.go: updateGWRouterNAT (the join IP to the gateway masquerade IP)"},
	{"NAT", natKey(pGR1, "snat", "fd99::2"), "external_ip", "fd69::b", "gateway.go: updateGWRouterNAT"},
	{"NAT", natKey(pGR1, "snat", "100.65.0.2"), "external_port_range", "32768-60999", "libovsdb/ops/router.go: buildNAT"},
	{"NAT", natKey(pGR1, "snat", "10.100.0.0/16"), "external_ip", "169.254.0.11", "gateway.go: updateGWRouterNAT (clusterSubnets: the network's subnets)"},
	{"NAT", natKey(pGR1, "snat", "fd00:100::/64"), "external_ip", "fd69::b", "gateway.go: updateGWRouterNAT"},
	{"NAT", natKey(pGR1, "snat", "10.100.0.0/16"), "match", "", "gateway.go: GetNetworkScopedClusterSubnetSNATMatch (transit-router topology, not advertised)"},
	{"NAT", natKey(pGR1, "snat", "10.100.0.0/16"), "options", "stateless=false", "libovsdb/ops/router.go: buildNAT"},
	{"Logical_Switch", pEXT1, "external_ids:k8s.ovn.org/role", "primary", "gateway.go: addExternalSwitch (GenerateExternalIDsForSwitchOrRouter)"},
	{"Logical_Switch", "tenant_blue_ovn_layer2_switch", "external_ids:k8s.ovn.org/role", "primary",
		"base_secondary_layer2_network_controller.go: initializeLogicalSwitch (GenerateExternalIDsForSwitchOrRouter)"},
	{"Logical_Switch", pEXT1, "external_ids:k8s.ovn.org/network", "tenant_blue", "gateway.go: addExternalSwitch"},
	{"Logical_Switch_Port", pLN1, "type", "localnet", "gateway.go: addExternalSwitch (GetNetworkScopedExtPortName(bridge-id, node))"},
	{"Logical_Switch_Port", pLN1, "addresses", "unknown", "gateway.go: addExternalSwitch"},
	{"Logical_Switch_Port", pLN1, "options", "network_name=physnet", "gateway.go: physNetName (a Primary network without uplink)"},
	{"Logical_Switch_Port", pETOR1, "type", "router", "gateway.go: addExternalSwitch"},
	{"Logical_Switch_Port", pETOR1, "addresses", "0a:58:c0:00:02:02", "gateway.go: addExternalSwitch (no nat-addresses on a user-defined network)"},
	{"Logical_Switch_Port", pETOR1, "options", "router-port=" + pRTOE1, "gateway.go: addExternalSwitch"},
	{"Static_MAC_Binding", pRTOE1 + " 169.254.0.4", "mac", "0a:58:a9:fe:00:04", "gateway/gateway.go: CreateDummyGWMacBindings (the dummy next hop, util.IPAddrToHWAddr)"},
	{"Static_MAC_Binding", pRTOE1 + " fd69::4", "mac", "0a:58:1b:ac:71:41", "gateway/gateway.go: CreateDummyGWMacBindings (util.IPAddrToHWAddr of an IPv6 address)"},
	{"Static_MAC_Binding", pRTOE1 + " 169.254.0.2", "mac", "0a:58:a9:fe:00:02", "gateway/gateway.go: CreateDummyGWMacBindings (the host's masquerade IP)"},
	{"Static_MAC_Binding", pRTOE1 + " fd69::2", "mac", "0a:58:e0:ff:1d:9b", "gateway/gateway.go: CreateDummyGWMacBindings"},
	{"Static_MAC_Binding", pRTOE1 + " fd69::2", "override_dynamic_mac", "true", "gateway/gateway.go: CreateDummyGWMacBindings"},
	{"Logical_Switch_Port", pMGMT1, "addresses", "0a:58:0a:64:00:02 10.100.0.2 fd00:100::2",
		"base_network_controller.go: syncNodeManagementPort (GetNetworkScopedK8sMgmtIntfName; the MAC of the first management IP)"},
	{"Logical_Switch_Port", pMGMT1, "type", "", "base_network_controller.go: syncNodeManagementPort"},
}

// layer2GatewayDiffers are layer2Differs but the GR's external_ids, which
// now hold upstream's keys (checked one by one above).
func layer2GatewayDiffers() []differs {
	var out []differs
	for _, d := range layer2Differs {
		if d.table != "Logical_Router" || d.row != pGR1 {
			out = append(out, d)
		}
	}
	return out
}

var _ = addParityCase(parityCase{
	name: "layer2 node gateway", plan: gatewayParityPlan,
	same: append(append(append([]parity{}, layer2Parity...), layer2RoutingParity...), layer2GatewayParity...),
	only: layer2OnlyUdnkit, differs: layer2GatewayDiffers(),
})
