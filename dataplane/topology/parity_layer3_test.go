package topology

import (
	"net/netip"
	"testing"

	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/ovnk"
)

// The OKEP-5377 rows of a Layer3 network with several subnets: on its
// cluster router, the priority-102 no-reroute policies that let traffic
// between any two of its subnets of a family through.

const pCR3 = "tenant_red_ovn_cluster_router"

// layer3Subnets are two IPv4 subnets and one IPv6 subnet.
var layer3Subnets = []netip.Prefix{pfx("10.128.0.0/16"), pfx("10.129.0.0/16"), pfx("fd00:128::/64")}

func layer3Plan(form Layer3PolicyForm) func(t *testing.T) *rows.Desired {
	return func(t *testing.T) *rows.Desired {
		t.Helper()
		d, err := Layer3SubnetPoliciesForm("tenant_red", layer3Subnets, form)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
}

var (
	pReply3 = policyKey(pCR3, PolicyPriorityAllow, "pkt.mark == 42")
	pPair4  = policyKey(pCR3, PolicyPriorityAllow, "ip4.src == 10.128.0.0/16 && ip4.dst == 10.129.0.0/16")
	pSelf6  = policyKey(pCR3, PolicyPriorityAllow, "ip6.src == fd00:128::/64 && ip6.dst == fd00:128::/64")
	pSet4   = ovnk.NamesFor("tenant_red").SubnetsAddressSet("ip4")
	pSetPol = policyKey(pCR3, PolicyPriorityAllow, "ip4.src == $"+pSet4+" && ip4.dst == $"+pSet4)
)

// layer3RouterParity is the cluster router udnkit creates when the Layer3
// topology's is missing (an existing one is only referenced).
var layer3RouterParity = []parity{
	{"Logical_Router", pCR3, "name", pCR3, "util/multi_network.go: GetNetworkScopedClusterRouterName"},
	{"Logical_Router", pCR3, "external_ids:k8s-cluster-router", "yes", "topology/topologyfactory.go: newClusterRouter"},
	{"Logical_Router", pCR3, "external_ids:k8s.ovn.org/topology", "layer3", "topology/topologyfactory.go: newClusterRouter (types.TopologyExternalID)"},
	{"Logical_Router", pCR3, "copp", "ovnkube-default", "topology/topologyfactory.go: newClusterRouter (Copp: the default COPP)"},
	{"Logical_Router", pCR3, "options:always_learn_from_arp_request", "false", "topology/topologyfactory.go: NewClusterRouter (layer3_user_defined_network_controller.go: newClusterRouter without multicast)"},
}

// layer3NoRerouteParity: the reply-traffic policy and the EgressIP
// external IDs upstream gives every no-reroute policy, in both forms.
var layer3NoRerouteParity = []parity{
	{"Logical_Router_Policy", pReply3, "action", "allow", "egressip.go: createDefaultNoRerouteReplyTrafficPolicy"},
	{"Logical_Router_Policy", pReply3, "match", "pkt.mark == 42", "egressip.go: createDefaultNoRerouteReplyTrafficPolicy (types.EgressIPReplyTrafficConnectionMark)"},
	{"Logical_Router_Policy", pReply3, "external_ids:k8s.ovn.org/id", "default-network-controller:EgressIP:102:EIP-No-Reroute-reply-traffic:ip:tenant_red",
		"egressip.go: getEgressIPLRPNoReRouteDbIDs (ReplyTrafficNoReroute, IPFamilyValue; libovsdb/ops/db_object_ids.go: GetExternalIDs)"},
	{"Logical_Router_Policy", pReply3, "external_ids:ip-family", "ip", "egressip.go: createDefaultNoRerouteReplyTrafficPolicy (IPFamilyValue)"},
	{"Logical_Router_Policy", pSelf6, "external_ids:k8s.ovn.org/id", "default-network-controller:EgressIP:102:EIP-No-Reroute-Pod-To-Pod:ip6:tenant_red",
		"egressip.go: getEgressIPLRPNoReRoutePodToPodDbIDs (IPFamilyValueV6)"},
	{"Logical_Router_Policy", pSelf6, "external_ids:k8s.ovn.org/name", "EIP-No-Reroute-Pod-To-Pod", "egressip.go: NoReRoutePodToPod"},
	{"Logical_Router_Policy", pSelf6, "external_ids:k8s.ovn.org/owner-type", "EgressIP", "libovsdb/ops/db_object_types.go: LogicalRouterPolicyEgressIP"},
	{"Logical_Router_Policy", pSelf6, "external_ids:k8s.ovn.org/owner-controller", "default-network-controller",
		"egressip.go: the EgressIP controller runs in the default network's controller (e.controllerName)"},
	{"Logical_Router_Policy", pSelf6, "external_ids:priority", "102", "egressip.go: getEgressIPLRPNoReRoutePodToPodDbIDs (PriorityKey)"},
	{"Logical_Router_Policy", pSelf6, "external_ids:network", "tenant_red", "egressip.go: getEgressIPLRPNoReRoutePodToPodDbIDs (NetworkKey)"},
}

// layer3PairParity: the pair form is upstream's rows.
var layer3PairParity = append([]parity{
	{"Logical_Router_Policy", pPair4, "external_ids:k8s.ovn.org/id", "default-network-controller:EgressIP:102:EIP-No-Reroute-Pod-To-Pod:ip4:tenant_red",
		"egressip.go: getEgressIPLRPNoReRoutePodToPodDbIDs (every pair of a family shares them)"},
	{"Logical_Router_Policy", pPair4, "external_ids:ip-family", "ip4", "egressip.go: getEgressIPLRPNoReRoutePodToPodDbIDs (IPFamilyValueV4)"},
	{"Logical_Router_Policy", pPair4, "action", "allow", "egressip.go: createEgressIPLogicalRouterPolicy"},
	{"Logical_Router_Policy", pPair4, "priority", "102", "egressip.go: createDefaultNoReroutePodPolicies (types.DefaultNoRereoutePriority)"},
	{"Logical_Router_Policy", pPair4, "match", "ip4.src == 10.128.0.0/16 && ip4.dst == 10.129.0.0/16",
		"egressip.go: createDefaultNoReroutePodPolicies (every ordered pair of the network's cluster subnets of a family)"},
	{"Logical_Router_Policy", pSelf6, "match", "ip6.src == fd00:128::/64 && ip6.dst == fd00:128::/64", "egressip.go: createDefaultNoReroutePodPolicies"},
}, append(layer3NoRerouteParity, layer3RouterParity...)...)

// layer3SetParity: in the default form a family with one subnet keeps
// upstream's single policy.
var layer3SetParity = append([]parity{
	{"Logical_Router_Policy", pSelf6, "action", "allow", "egressip.go: createDefaultNoReroutePodPolicies"},
	{"Logical_Router_Policy", pSelf6, "priority", "102", "egressip.go: createDefaultNoReroutePodPolicies"},
}, append(layer3NoRerouteParity, layer3RouterParity...)...)

var layer3SetOnly = []udnkitOnly{
	{"Address_Set", pSet4, "addresses",
		"the default form (--layer3-subnet-policies=address-set) holds a family's subnets in one set: O(subnets) rows where upstream writes O(subnets²) policies (200 subnets: 40,000); --layer3-subnet-policies=pairs writes upstream's rows"},
	{"Logical_Router_Policy", pSetPol, "match", "the one policy over that set, with the same verdict as the pairs for every packet; it carries the EgressIP external IDs of its family's pair policies"},
}

var layer3Differs = []differs{
	{"Logical_Router", pCR3, "options", "always_learn_from_arp_request=false",
		"always_learn_from_arp_request=false; local gateway mode adds ct-commit-all=true, --enable-multicast mcast_relay=true",
		"topology/topologyfactory.go: newClusterRouter, NewClusterRouterWithMulticastSupport; udnkit creates the router only where OVN-Kubernetes' Layer3 topology is missing, and then has no gateway mode nor multicast; COPP: the copp piece"},
}

var _ = addParityCase(parityCase{
	name: "layer3 pairs", plan: layer3Plan(PolicyFormPairs), same: append(zoneCoppParity(), layer3PairParity...), differs: layer3Differs,
})

var _ = addParityCase(parityCase{
	name: "layer3 address-set", plan: layer3Plan(PolicyFormAddressSet), same: append(zoneCoppParity(), layer3SetParity...), only: layer3SetOnly,
	differs: layer3Differs,
})

// The whole Layer3 topology of the reference case (layer3RefNetwork in
// node1's zone): every value was read from upstream's ovnkube-controller's
// Northbound for tenant-green/green in zone node-a (node1 here: node ID 2,
// host subnets 10.200.1.0/24 and 2001:db8:200:2::/64).
const (
	pCRg   = "tenant.green_green_ovn_cluster_router"
	pGRg   = "GR_tenant.green_green_node1"
	pJoing = "tenant.green_green_join"
	pTSg   = "tenant.green_green_transit_switch"
	pNSg   = "tenant.green_green_node1"
	pRTOSg = "rtos-" + pNSg
)

var (
	pNodeIPg4 = policyKey(pCRg, PolicyPriorityNodeIP, `inport == "`+pRTOSg+`" && ip4.dst == 192.0.2.2 /* `+pNSg+` */`)
	pMasqIPg6 = policyKey(pCRg, PolicyPriorityNodeIP, `inport == "`+pRTOSg+`" && ip6.dst == fd69::d /* `+pNSg+` */`)
	pSNATg4   = natKey(pCRg, "snat", "10.200.1.0/24")
	pSNATg6   = natKey(pCRg, "snat", "2001:db8:200:2::/64")
)

var layer3TopologyParity = []parity{
	// The cluster router and its join port.
	{"Logical_Router", pCRg, "options", "always_learn_from_arp_request=false", "topology/topologyfactory.go: NewClusterRouter"},
	{"Logical_Router", pCRg, "external_ids:k8s-cluster-router", "yes", "topology/topologyfactory.go: newClusterRouter"},
	{"Logical_Router", pCRg, "copp", "ovnkube-default", "layer3_user_defined_network_controller.go: init (EnsureDefaultCOPP)"},
	{"Logical_Router_Port", "rtoj-" + pCRg, "mac", "0a:58:64:41:00:01", "topology/topologyfactory.go: NewJoinSwitch (IPAddrToHWAddr of the first reserved IP)"},
	{"Logical_Router_Port", "rtoj-" + pCRg, "networks", "100.65.0.1/16,fd99::1/64",
		"base_network_controller.go: getOVNClusterRouterPortToJoinSwitchIfAddrs (the join subnets' first IPs, per cluster family)"},
	{"Logical_Switch", pJoing, "name", pJoing, "util/multi_network.go: GetNetworkScopedJoinSwitchName"},
	{"Logical_Switch", pJoing, "external_ids:k8s.ovn.org/topology", "layer3", "topology/topologyfactory.go: NewJoinSwitch"},
	{"Logical_Switch_Port", "jtor-" + pCRg, "options", "router-port=rtoj-" + pCRg, "topology/topologyfactory.go: NewJoinSwitch"},
	{"Logical_Switch_Port", "jtor-" + pCRg, "type", "router", "topology/topologyfactory.go: NewJoinSwitch"},
	{"Logical_Switch_Port", "jtor-" + pCRg, "addresses", "router", "topology/topologyfactory.go: NewJoinSwitch"},

	// The transit switch and its ports.
	{"Logical_Switch", pTSg, "other_config",
		"interconn-ts=" + pTSg + ",mcast_flood_unregistered=true,mcast_querier=false,mcast_snoop=true,requested-tnl-key=16711685",
		"zone_interconnect/zone_ic_handler.go: createOrUpdateTransitSwitch, addTransitSwitchConfig (BaseTransitSwitchTunnelKey + network ID 2)"},
	{"Logical_Switch", pTSg, "external_ids:k8s.ovn.org/role", "primary", "zone_interconnect/zone_ic_handler.go: getUserDefinedNetTransitSwitchExtIDs"},
	{"Logical_Switch_Port", "tenant.green_green_tstor-node1", "type", "router", "zone_interconnect/zone_ic_handler.go: createLocalZoneNodeResources"},
	{"Logical_Switch_Port", "tenant.green_green_tstor-node1", "options", "requested-tnl-key=2,router-port=tenant.green_green_rtots-node1",
		"zone_interconnect/zone_ic_handler.go: createLocalZoneNodeResources (the node ID)"},
	{"Logical_Switch_Port", "tenant.green_green_tstor-node1", "external_ids:node", "node1", "zone_interconnect/zone_ic_handler.go: createLocalZoneNodeResources"},
	{"Logical_Switch_Port", "tenant.green_green_tstor-node2", "type", "remote", "zone_interconnect/zone_ic_handler.go: createRemoteZoneNodeResources"},
	{"Logical_Switch_Port", "tenant.green_green_tstor-node2", "addresses", "0a:58:64:58:00:03 100.88.0.3/16 fd97::3/64",
		"zone_interconnect/zone_ic_handler.go: createRemoteZoneNodeResources (the node's transit switch port addresses)"},
	{"Logical_Switch_Port", "tenant.green_green_tstor-node2", "options", "requested-chassis=" + chassisOf("node2") + ",requested-tnl-key=3",
		"zone_interconnect/zone_ic_handler.go: createRemoteZoneNodeResources"},
	{"Logical_Switch_Port", "tenant.green_green_tstor-node3", "addresses", "0a:58:64:58:00:04 100.88.0.4/16 fd97::4/64",
		"clustermanager: the transit switch port address at the node ID's offset (node3 has no annotation here)"},
	{"Logical_Router_Port", "tenant.green_green_rtots-node1", "mac", "0a:58:64:58:00:02", "zone_interconnect/zone_ic_handler.go: createLocalZoneNodeResources"},
	{"Logical_Router_Port", "tenant.green_green_rtots-node1", "networks", "100.88.0.2/16,fd97::2/64", "zone_interconnect/zone_ic_handler.go: createLocalZoneNodeResources"},
	{"Logical_Router_Port", "tenant.green_green_rtots-node1", "options", "mcast_flood=true", "zone_interconnect/zone_ic_handler.go: createLocalZoneNodeResources"},

	// The local node's switch, its router port and Gateway_Chassis.
	{"Logical_Switch", pNSg, "other_config", "ipv6_prefix=2001:db8:200:2::,subnet=10.200.1.0/24",
		"base_network_controller.go: createNodeLogicalSwitch (exclude_ips dropped once the management port exists: libovsdb/util UpdateNodeSwitchExcludeIPs)"},
	{"Logical_Switch", pNSg, "external_ids:k8s.ovn.org/role", "primary", "util/multi_network.go: GenerateExternalIDsForSwitchOrRouter"},
	{"Logical_Switch_Port", "stor-" + pNSg, "options", "router-port=" + pRTOSg, "base_network_controller.go: createNodeLogicalSwitch"},
	{"Logical_Switch_Port", "stor-" + pNSg, "type", "router", "base_network_controller.go: createNodeLogicalSwitch"},
	{"Logical_Router_Port", pRTOSg, "mac", "0a:58:0a:c8:01:01", "base_network_controller.go: syncNodeClusterRouterPort (the IPv4 gateway IP's MAC)"},
	{"Logical_Router_Port", pRTOSg, "networks", "10.200.1.1/24,2001:db8:200:2::1/64", "base_network_controller.go: syncNodeClusterRouterPort (GetNodeGatewayIP)"},
	{"Logical_Router_Port", pRTOSg, "options", "gateway_mtu=1400", "base_network_controller.go: syncNodeClusterRouterPort"},
	{"Gateway_Chassis", pRTOSg, "name", pRTOSg + "-" + chassisOf("node1"), "base_network_controller.go: syncNodeClusterRouterPort"},
	{"Gateway_Chassis", pRTOSg, "priority", "1", "base_network_controller.go: syncNodeClusterRouterPort"},

	// The gateway router's join side.
	{"Logical_Router", pGRg, "options", "always_learn_from_arp_request=false,chassis=" + chassisOf("node1") +
		",disable_garp_rarp=true,dynamic_neigh_routers=false,lb_force_snat_ip=router_ip,mac_binding_age_threshold=300",
		"gateway.go: createGWRouter (a Layer3 GR keeps lb_force_snat_ip=router_ip)"},
	{"Logical_Router", pGRg, "external_ids:k8s.ovn.org/role", "primary", "gateway.go: createGWRouter (GenerateExternalIDsForSwitchOrRouter)"},
	{"Logical_Router", pGRg, "copp", "ovnkube-default", "gateway.go: createGWRouter"},
	{"Logical_Router_Port", "rtoj-" + pGRg, "mac", "0a:58:64:41:00:02", "gateway.go: createGWRouterPort"},
	{"Logical_Router_Port", "rtoj-" + pGRg, "networks", "100.65.0.2/16,fd99::2/64", "gateway.go: createGWRouterPort (generator/udn/join_ips.go: GetGWRouterIPs)"},
	{"Logical_Router_Port", "rtoj-" + pGRg, "options", "gateway_mtu=1400", "gateway.go: createGWRouterPort"},
	{"Logical_Switch_Port", "jtor-" + pGRg, "options", "router-port=rtoj-" + pGRg, "gateway.go: createGWRouterPeerSwitchPort"},
	{"Logical_Router_Static_Route", pGRg + " 10.200.0.0/16", "nexthop", "100.65.0.1", "gateway.go: updateGWRouterStaticRoutes (the cluster subnets via the cluster router)"},
	{"Logical_Router_Static_Route", pGRg + " 2001:db8:200::/48", "policy", "", "gateway.go: updateGWRouterStaticRoutes"},

	// The cluster router's routes.
	{"Logical_Router_Static_Route", pCRg + " 100.65.0.2", "nexthop", "100.65.0.2", "gateway.go: updateClusterRouterStaticRoutes (the GR's join IP via itself)"},
	{"Logical_Router_Static_Route", pCRg + " 10.200.1.0/24", "policy", "src-ip", "gateway.go: updateClusterRouterStaticRoutes (shared gateway mode)"},
	{"Logical_Router_Static_Route", pCRg + " 2001:db8:200:2::/64", "nexthop", "fd99::2", "gateway.go: updateClusterRouterStaticRoutes"},
	{"Logical_Router_Static_Route", pCRg + " 10.200.0.0/16", "policy", "src-ip", "libovsdb/util/router.go: CreateDefaultRouteToExternal (egressip.go)"},
	{"Logical_Router_Static_Route", pCRg + " 2001:db8:200::/48", "nexthop", "fd99::2", "libovsdb/util/router.go: CreateDefaultRouteToExternal"},
	{"Logical_Router_Static_Route", pCRg + " 10.96.0.10", "nexthop", "10.200.1.2", "controller/services/services_controller.go: configureUDNEnabledServiceRoute"},
	{"Logical_Router_Static_Route", pCRg + " 10.96.0.10", "external_ids:k8s.ovn.org/udn-enabled-default-service", "kube-system/kube-dns",
		"controller/services/services_controller.go: configureUDNEnabledServiceRoute"},
	{"Logical_Router_Static_Route", pCRg + " 10.200.2.0/24", "nexthop", "100.88.0.3", "zone_interconnect/zone_ic_handler.go: addRemoteNodeStaticRoutes"},
	{"Logical_Router_Static_Route", pCRg + " 10.200.2.0/24", "external_ids:ic-node", "node2", "zone_interconnect/zone_ic_handler.go: addRemoteNodeStaticRoutes"},
	{"Logical_Router_Static_Route", pCRg + " 2001:db8:200:1::/64", "nexthop", "fd97::4", "zone_interconnect/zone_ic_handler.go: addRemoteNodeStaticRoutes"},
	{"Logical_Router_Static_Route", pCRg + " 100.65.0.3/32", "nexthop", "100.88.0.3", "zone_interconnect/zone_ic_handler.go: addRemoteNodeStaticRoutes (getStaticRoutes fullMask)"},
	{"Logical_Router_Static_Route", pCRg + " fd99::4/128", "policy", "", "zone_interconnect/zone_ic_handler.go: addRemoteNodeStaticRoutes"},

	// The 1004 policies and the management port's SNAT.
	{"Logical_Router_Policy", pNodeIPg4, "nexthops", "10.200.1.2", "gatewayrouter/policybasedroutes.go: AddSameNodeIPPolicy (gateway.go: SyncGateway)"},
	{"Logical_Router_Policy", pNodeIPg4, "action", "reroute", "gatewayrouter/policybasedroutes.go: createPolicyBasedRoutes"},
	{"Logical_Router_Policy", pMasqIPg6, "nexthops", "2001:db8:200:2::2",
		"gatewayrouter/policybasedroutes.go: AddSameNodeIPPolicy (otherHostAddrs: layer3_user_defined_network_controller.go: nodeGatewayConfig hostAddrs, the GR masquerade IPs)"},
	{"NAT", pSNATg4, "external_ip", "169.254.0.14", "base_network_controller_user_defined.go: buildUDNEgressSNAT (AllocateV4MasqueradeIPs(2).ManagementPort)"},
	{"NAT", pSNATg4, "logical_port", pRTOSg, "layer3_user_defined_network_controller.go: addOrUpdateUDNNodeSubnetEgressSNAT"},
	{"NAT", pSNATg4, "match", "eth.dst == 0a:58:0a:c8:01:02", "base_network_controller_user_defined.go: getMasqueradeManagementIPSNATMatch"},
	{"NAT", pSNATg6, "external_ip", "fd69::e", "base_network_controller_user_defined.go: buildUDNEgressSNAT"},
	{"NAT", pSNATg6, "options", "stateless=false", "libovsdb/ops/router.go: buildNAT"},
}

// layer3GatewayParity: node1's management port, its GR's external side
// from its l3-gateway-config and the static MAC bindings, as upstream
// wrote them for tenant-green on node-a.
const (
	pRTOEg = "rtoe-" + pGRg
	pEXTg  = "ext_tenant.green_green_node1"
)

var layer3GatewayParity = []parity{
	{"NAT", pSNATg4, "external_port_range", "32768-60999", "libovsdb/ops/router.go: buildNAT (config.Default.EphemeralPortRange)"},
	{"Logical_Switch_Port", "k8s-" + pNSg, "addresses", "0a:58:0a:c8:01:02 10.200.1.2 2001:db8:200:2::2",
		"base_network_controller.go: syncNodeManagementPort (the host subnets' management IPs, the first one's MAC)"},
	{"Logical_Switch_Port", "k8s-" + pNSg, "type", "", "base_network_controller.go: syncNodeManagementPort"},
	{"Logical_Router", pGRg, "external_ids:physical_ip", "192.0.2.2", "gateway.go: createGWRouter (the first of the l3-gateway-config's ip-addresses)"},
	{"Logical_Router", pGRg, "external_ids:physical_ips", "192.0.2.2,2001:db8::2,169.254.0.13,fd69::d",
		"gateway.go: createGWRouter (layer3_user_defined_network_controller.go: nodeGatewayConfig appends the GR masquerade IPs)"},
	{"Logical_Router_Port", pRTOEg, "mac", "0a:58:c0:00:02:02", "gateway.go: addExternalSwitch (the l3-gateway-config's mac-address)"},
	{"Logical_Router_Port", pRTOEg, "networks", "169.254.0.13/32,192.0.2.2/24,2001:db8::2/64,fd69::d/128", "gateway.go: addExternalSwitch"},
	{"Logical_Router_Static_Route", pGRg + " 0.0.0.0/0", "nexthop", "192.0.2.1", "gateway.go: updateGWRouterStaticRoutes (the l3-gateway-config's next-hops)"},
	{"Logical_Router_Static_Route", pGRg + " ::/0", "output_port", pRTOEg, "gateway.go: updateGWRouterStaticRoutes"},
	{"Logical_Router_Static_Route", pGRg + " 169.254.0.0/17", "nexthop", "169.254.0.4", "gateway.go: updateGWRouterStaticRoutes (DummyNextHopIPs)"},
	{"Logical_Router_Static_Route", pGRg + " fd69::/112", "output_port", pRTOEg, "gateway.go: updateGWRouterStaticRoutes"},
	{"NAT", natKey(pGRg, "snat", "100.65.0.2"), "external_ip", "169.254.0.13", "gateway.go: updateGWRouterNAT (the join IP to the GR masquerade IP)"},
	{"NAT", natKey(pGRg, "snat", "fd99::2"), "external_port_range", "32768-60999", "gateway.go: updateGWRouterNAT (libovsdb/ops/router.go: buildNAT)"},
	{"NAT", natKey(pGRg, "snat", "10.200.0.0/16"), "external_ip", "169.254.0.13",
		"gateway.go: updateGWRouterNAT (nodeGatewayConfig clusterSubnets: the network's cluster subnets)"},
	{"NAT", natKey(pGRg, "snat", "2001:db8:200::/48"), "options", "stateless=false", "libovsdb/ops/router.go: buildNAT"},
	{"Logical_Switch", pEXTg, "external_ids:k8s.ovn.org/role", "primary", "gateway.go: addExternalSwitch"},
	{"Logical_Switch_Port", "breth0_tenant.green_green_node1", "options", "network_name=physnet",
		"gateway.go: addExternalSwitch (GetNetworkScopedExtPortName; physNetName)"},
	{"Logical_Switch_Port", "breth0_tenant.green_green_node1", "type", "localnet", "gateway.go: addExternalSwitch"},
	{"Logical_Switch_Port", "etor-" + pGRg, "addresses", "0a:58:c0:00:02:02", "gateway.go: addExternalSwitch"},
	{"Logical_Switch_Port", "etor-" + pGRg, "options", "router-port=" + pRTOEg, "gateway.go: addExternalSwitch"},
	{"Static_MAC_Binding", pRTOEg + " 169.254.0.4", "mac", "0a:58:a9:fe:00:04", "gateway/gateway.go: CreateDummyGWMacBindings"},
	{"Static_MAC_Binding", pRTOEg + " fd69::2", "mac", "0a:58:e0:ff:1d:9b", "gateway/gateway.go: CreateDummyGWMacBindings"},
	{"Static_MAC_Binding", pRTOEg + " fd69::2", "override_dynamic_mac", "true", "gateway/gateway.go: CreateDummyGWMacBindings"},
}

var _ = addParityCase(parityCase{
	name: "layer3 topology", plan: func(t *testing.T) *rows.Desired { return mustLayer3(t, layer3RefNetwork(), layer3RefNodes()) },
	same: append(append(zoneCoppParity(), layer3TopologyParity...), layer3GatewayParity...),
})

// layer3LocalGatewayParity: what --gateway-mode=local changes, read from
// upstream's Northbound of the same case in local gateway mode (where
// node-a's host subnets were 10.200.0.0/24 and 2001:db8:200:1::/64: the
// next hops are the management IPs of node1's).
var layer3LocalGatewayParity = []parity{
	{"Logical_Router", pCRg, "options", "always_learn_from_arp_request=false,ct-commit-all=true",
		"topology/topologyfactory.go: newClusterRouter (a UDN's cluster router in local gateway mode)"},
	{"Logical_Router_Static_Route", pCRg + " 10.200.1.0/24", "nexthop", "10.200.1.2",
		"base_network_controller.go: syncNodeManagementPort (local gateway mode: the host subnet via the management port)"},
	{"Logical_Router_Static_Route", pCRg + " 2001:db8:200:2::/64", "policy", "src-ip", "base_network_controller.go: syncNodeManagementPort"},
	{"Logical_Router_Static_Route", pCRg + " 10.200.0.0/16", "nexthop", "100.65.0.2",
		"libovsdb/util/router.go: CreateDefaultRouteToExternal (EgressIP's catch-all stays via the GR)"},
}

var _ = addParityCase(parityCase{
	name: "layer3 topology, local gateway",
	plan: func(t *testing.T) *rows.Desired {
		net := layer3RefNetwork()
		net.GatewayMode = ovnk.GatewayModeLocal
		return mustLayer3(t, net, layer3RefNodes())
	},
	same: append(append(append(zoneCoppParity(), layer3SharedOnlyOmitted()...), layer3LocalGatewayParity...), layer3GatewayParity...),
})

// layer3SharedOnlyOmitted is layer3TopologyParity without what local
// gateway mode changes: the cluster router's options, the host subnets'
// src-ip routes and the UDN-enabled service routes (upstream's
// updateClusterRouterStaticRoutes deletes those in local mode).
func layer3SharedOnlyOmitted() []parity {
	var out []parity
	for _, p := range layer3TopologyParity {
		switch {
		case p.table == "Logical_Router" && p.row == pCRg && p.column == "options",
			p.row == pCRg+" 10.200.1.0/24", p.row == pCRg+" 2001:db8:200:2::/64", p.row == pCRg+" 10.96.0.10":
			continue
		}
		out = append(out, p)
	}
	return out
}
