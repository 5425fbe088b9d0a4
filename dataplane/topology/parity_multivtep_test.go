package topology

import (
	"net/netip"
	"testing"

	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/multivtep"
)

// The OKEP-5535 rows. A node's first VTEP keeps upstream's single-VTEP
// transit switch port tstor-<node> (zone_interconnect/zone_ic_handler.go);
// when its tunnel ID is the node's ID (node1: 2, node2: 3 here) its values
// are upstream's. The other VTEPs' ports and the per-pod routes are
// OKEP-5535's, which upstream does not write yet.

const (
	pTS3     = "tenant_red_transit_switch"
	pRTOTS1  = "tenant_red_rtots-node1"
	pTSTOR1  = "tenant_red_tstor-node1"
	pTSTOR2  = "tenant_red_tstor-node2"
	pTSTOR2E = "tenant_red_tstor-node2_encap1"
)

func multiVTEPPlan(t *testing.T) *rows.Desired {
	t.Helper()
	nodes := []multivtep.VTEPNode{
		{Name: "node1", Local: true, EncapIPs: []netip.Addr{addr("10.0.0.2"), addr("10.0.0.3")}, TunnelIDs: []int{2, 9},
			Subnets: []netip.Prefix{pfx("10.128.0.0/24"), pfx("fd00:128:0:1::/64")}},
		{Name: "node2", Chassis: chassisOf("node2"), EncapIPs: []netip.Addr{addr("10.0.0.4"), addr("10.0.0.5")}, TunnelIDs: []int{3, 10},
			Subnets: []netip.Prefix{pfx("10.128.1.0/24"), pfx("fd00:128:0:2::/64")}},
	}
	pods := []multivtep.VTEPPod{
		{Namespace: "ns", Name: "pod1", Node: "node1", EncapIP: addr("10.0.0.2"), IPs: []netip.Prefix{pfx("10.128.0.5/24")}},
		{Namespace: "ns", Name: "pod2", Node: "node1", EncapIP: addr("10.0.0.3"), IPs: []netip.Prefix{pfx("10.128.0.6/24")}},
		{Namespace: "ns", Name: "pod3", Node: "node2", EncapIP: addr("10.0.0.4"), IPs: []netip.Prefix{pfx("10.128.1.5/24"), pfx("fd00:128:0:2::5/64")}},
		{Namespace: "ns", Name: "pod4", Node: "node2", EncapIP: addr("10.0.0.5"), IPs: []netip.Prefix{pfx("10.128.1.6/24"), pfx("fd00:128:0:2::6/64")}},
	}
	d, err := multivtep.MultiVTEPPortsDual("tenant_red", []netip.Prefix{pfx("100.88.0.0/16"), pfx("fd97::/64")}, nodes, pods)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var multiVTEPParity = []parity{
	{"Logical_Router_Port", pRTOTS1, "mac", "0a:58:64:58:00:02", "zone_interconnect/zone_ic_handler.go: createLocalZoneNodeResources (IPAddrToHWAddr of the first transit switch port IP)"},
	{"Logical_Router_Port", pRTOTS1, "networks", "100.88.0.2/16,fd97::2/64", "zone_interconnect/zone_ic_handler.go: createLocalZoneNodeResources (ParseNodeTransitSwitchPortAddrs)"},
	{"Logical_Router_Port", pRTOTS1, "options", "mcast_flood=true", "zone_interconnect/zone_ic_handler.go: createLocalZoneNodeResources"},
	{"Logical_Switch_Port", pTSTOR1, "type", "router", "zone_interconnect/zone_ic_handler.go: createLocalZoneNodeResources (lportTypeRouter)"},
	{"Logical_Switch_Port", pTSTOR1, "addresses", "router", "zone_interconnect/zone_ic_handler.go: createLocalZoneNodeResources"},
	{"Logical_Switch_Port", pTSTOR1, "options", "requested-tnl-key=2,router-port=" + pRTOTS1, "zone_interconnect/zone_ic_handler.go: createLocalZoneNodeResources (RequestedTnlKey: the node ID)"},
	{"Logical_Switch_Port", pTSTOR1, "external_ids:node", "node1", "zone_interconnect/zone_ic_handler.go: createLocalZoneNodeResources (the node's name, for book keeping)"},
	{"Logical_Switch_Port", pTSTOR2, "type", "remote", "zone_interconnect/zone_ic_handler.go: createRemoteZoneNodeResources (lportTypeRemote)"},
	{"Logical_Switch_Port", pTSTOR2, "addresses", "0a:58:64:58:00:03 100.88.0.3/16 fd97::3/64", "zone_interconnect/zone_ic_handler.go: createRemoteZoneNodeResources (MAC, then every transit IP with its length)"},
	{"Logical_Switch_Port", pTSTOR2, "options", "requested-chassis=" + chassisOf("node2") + ",requested-tnl-key=3",
		"zone_interconnect/zone_ic_handler.go: createRemoteZoneNodeResources (ParseNodeChassisIDAnnotation; the node ID)"},
	{"Logical_Switch_Port", pTSTOR2, "external_ids:node", "node2", "zone_interconnect/zone_ic_handler.go: createRemoteZoneNodeResources"},
	{"Logical_Router_Static_Route", pCR3 + " 10.128.1.0/24", "nexthop", "100.88.0.3", "zone_interconnect/zone_ic_handler.go: addRemoteNodeStaticRoutes (the node's subnet via its transit switch port IP)"},
	{"Logical_Router_Static_Route", pCR3 + " fd00:128:0:2::/64", "nexthop", "fd97::3", "zone_interconnect/zone_ic_handler.go: addRemoteNodeStaticRoutes (getStaticRoutes, per family)"},
	{"Logical_Router_Static_Route", pCR3 + " 10.128.1.0/24", "policy", "", "zone_interconnect/zone_ic_handler.go: addRemoteNodeStaticRoutes (policy left empty: OVN's dst-ip)"},
	{"Logical_Router", pCR3, "external_ids:k8s-cluster-router", "yes", "topology/topologyfactory.go: newClusterRouter"},
	{"Logical_Router", pCR3, "options:always_learn_from_arp_request", "false", "topology/topologyfactory.go: NewClusterRouter (layer3_user_defined_network_controller.go: newClusterRouter without multicast)"},
	{"Logical_Switch", pTS3, "name", pTS3, "zone_interconnect/zone_ic_handler.go: getTransitSwitchName (GetNetworkScopedName(types.TransitSwitch))"},
}

var multiVTEPOnly = []udnkitOnly{
	{"Logical_Router_Port", pRTOTS1 + "_encap1", "networks", "OKEP-5535: the port of a second VTEP, at its own tunnel ID (upstream writes one port per node)"},
	{"Logical_Switch_Port", pTSTOR1 + "_encap1", "options:requested-tnl-key", "OKEP-5535: its switch side"},
	{"Logical_Switch_Port", pTSTOR2E, "options:requested-chassis", "OKEP-5535: a remote node's second VTEP"},
	{"Logical_Router_Static_Route", pCR3 + " 10.128.1.6/32", "nexthop", "OKEP-5535: a pod on a node's second VTEP is reached through that VTEP's port"},
}

var multiVTEPDiffers = []differs{
	{"Logical_Router_Static_Route", pCR3 + " 10.128.1.0/24", "external_ids",
		"k8s.ovn.org/network=tenant_red,k8s.ovn.org/topology=layer3,k8s.ovn.org/udnkit-piece=multi-vtep",
		"ic-node=node2,k8s.ovn.org/network=tenant_red",
		"zone_ic_handler.go: cleanupNode deletes every route of the cluster router with ic-node=<node>: udnkit's routes carry no ic-node so that OVN-Kubernetes' cleanup never removes them"},
	{"Logical_Switch", pTS3, "other_config", "", "interconn-ts=tenant_red_transit_switch,mcast_flood_unregistered=true,mcast_querier=false,mcast_snoop=true,requested-tnl-key=<BaseTransitSwitchTunnelKey + network ID>",
		"zone_ic_handler.go: createOrUpdateTransitSwitch; the transit switch and the cluster router are the Layer3 topology's (udnkit's or OVN-Kubernetes'): the multi-VTEP piece only references them and writes none of their columns"},
}

// The Layer2 side of OKEP-5535: remote ports of pods on a remote
// multi-VTEP node, on the network's layer2 switch.
const pPod2 = "ns1.blue_ns1_pod2"

func layer2MultiVTEPPlan(t *testing.T) *rows.Desired {
	t.Helper()
	nodes := []multivtep.VTEPNode{
		{Name: "node1", Local: true, EncapIPs: []netip.Addr{addr("10.0.0.2")}, TunnelIDs: []int{2}},
		{Name: "node2", Chassis: chassisOf("node2"), EncapIPs: []netip.Addr{addr("10.0.0.4"), addr("10.0.0.5")}, TunnelIDs: []int{3, 10}},
	}
	pods := []multivtep.Layer2PodPort{{
		VTEPPod:  multivtep.VTEPPod{Namespace: "ns1", Name: "pod2", Node: "node2", EncapIP: addr("10.0.0.5"), IPs: []netip.Prefix{pfx("10.100.0.7/16"), pfx("fd00:100::7/64")}},
		NAD:      "ns1/blue",
		MAC:      "0a:58:0a:64:00:07",
		TunnelID: 7,
	}}
	d, _, err := multivtep.Layer2MultiVTEPPorts("tenant_blue", nodes, pods)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var layer2MultiVTEPParity = []parity{
	{"Logical_Switch_Port", pPod2, "type", "remote", "zone_interconnect/zone_ic_handler.go: AddTransitPortConfig (a remote pod's port)"},
	{"Logical_Switch_Port", pPod2, "addresses", "0a:58:0a:64:00:07 10.100.0.7 fd00:100::7", "base_network_controller_pods.go: addLogicalPortToNetwork (MAC then every IP, one value)"},
	{"Logical_Switch_Port", pPod2, "options", "requested-chassis=" + chassisOf("node2") + ",requested-tnl-key=7",
		"base_network_controller_pods.go: addLogicalPortToNetwork (ParseNodeChassisIDAnnotation); zone_ic_handler.go: AddTransitPortConfig (the pod's tunnel_id)"},
	{"Logical_Switch_Port", pPod2, "external_ids:k8s.ovn.org/network", "tenant_blue", "base_network_controller_pods.go: addLogicalPortToNetwork"},
	{"Logical_Switch", pSW, "name", pSW, "zone_interconnect/zone_ic_handler.go: getTransitSwitchName (Layer2: the network's switch; referenced, never written)"},
}

var layer2MultiVTEPDiffers = []differs{
	{"Logical_Switch_Port", pPod2, "external_ids",
		"k8s.ovn.org/network=tenant_blue,k8s.ovn.org/topology=layer2,k8s.ovn.org/udnkit-piece=multi-vtep",
		"k8s.ovn.org/nad=ns1/blue,k8s.ovn.org/network=tenant_blue,k8s.ovn.org/topology=layer2,namespace=ns1,pod=true",
		"base_network_controller_pods.go: addLogicalPortToNetwork; namespace and pod=true mark the ports upstream's pod controller garbage-collects, so udnkit's remote ports stay out of its reach"},
}

var _ = addParityCase(parityCase{
	name: "layer3 multi-VTEP", plan: multiVTEPPlan, same: multiVTEPParity, only: multiVTEPOnly, differs: multiVTEPDiffers,
})

var _ = addParityCase(parityCase{
	name: "layer2 multi-VTEP", plan: layer2MultiVTEPPlan, same: layer2MultiVTEPParity, differs: layer2MultiVTEPDiffers,
})
