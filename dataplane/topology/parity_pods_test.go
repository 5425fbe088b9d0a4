package topology

import (
	"net"
	"net/netip"
	"testing"

	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/dataplane/topology/pods"
	"github.com/udnkit/udnkit/ovnk"
)

// The pod ports of the reference case's networks in node1's zone:
// tenant-blue/blue (Primary Layer2) with pod1 on node1 and pod2 on node2,
// tenant-green/green (Primary Layer3) with pod3 on node1, and a Localnet
// network with pod5 on node1 over VLAN 100. vm1 is a KubeVirt VM whose
// live migration from node1 (pod6) to node2 (pod7) has not reached the
// target's domain yet.
const (
	podL2Net  = "tenant-blue_blue"
	podL2NAD  = "tenant-blue/blue"
	podL2Port = "tenant.blue.blue_tenant-blue_pod1"
	podL2Rem  = "tenant.blue.blue_tenant-blue_pod2"
	podL3Net  = "tenant-green_green"
	podL3NAD  = "tenant-green/green"
	podL3Port = "tenant.green.green_tenant-green_pod3"
	podL3SW   = "tenant.green_green_node1"
	podLNNet  = "cluster_udn_phys"
	podLNNAD  = "tenant-red/phys"
	podLNPort = "tenant.red.phys_tenant-red_pod5"
	podLNSW   = "cluster_udn_phys_ovn_localnet_switch"
	podVMSrc  = "tenant.blue.blue_tenant-blue_pod6"
	podVMDst  = "tenant.blue.blue_tenant-blue_pod7"
)

func parityPod(nad, ns, name, node string, local bool, mac string, tunnel int, ips ...string) pods.Pod {
	hw, _ := net.ParseMAC(mac)
	p := pods.Pod{NAD: nad, Namespace: ns, Name: name, UID: "uid-" + name, Node: node, Chassis: chassisOf(node), Local: local, MAC: hw, TunnelID: tunnel}
	for _, ip := range ips {
		p.IPs = append(p.IPs, netip.MustParsePrefix(ip))
	}
	return p
}

func mustPorts(t *testing.T, n pods.Network, ps ...pods.Pod) *rows.Desired {
	t.Helper()
	d, err := pods.Ports(n, ps)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

const (
	upPodPort  = "base_network_controller_pods.go: addLogicalPortToNetwork"
	upTransit  = "zone_interconnect/zone_ic_handler.go: AddTransitPortConfig"
	upLocalnet = "localnet_user_defined_network_controller.go: init"
)

var _ = addParityCase(parityCase{
	name: "pod ports on a Primary Layer2 network",
	plan: func(t *testing.T) *rows.Desired {
		n := pods.Network{Name: podL2Net, Topology: base.TopologyLayer2}
		disabled := false
		src := parityPod(podL2NAD, "tenant-blue", "pod6", "node1", true, "0a:58:0a:64:00:06", 12, "10.100.0.6/16")
		dst := parityPod(podL2NAD, "tenant-blue", "pod7", "node2", false, "0a:58:0a:64:00:06", 13, "10.100.0.6/16")
		dst.Enabled = &disabled
		return mustPorts(t, n,
			parityPod(podL2NAD, "tenant-blue", "pod1", "node1", true, "0a:58:0a:64:00:05", 10, "10.100.0.5/16", "fd00:100::5/64"),
			parityPod(podL2NAD, "tenant-blue", "pod2", "node2", false, "0a:58:0a:64:00:07", 11, "10.100.0.7/16", "fd00:100::7/64"),
			src, dst)
	},
	same: []parity{
		{"Logical_Switch", pSWBlue, "name", pSWBlue, "base_network_controller_pods.go: getExpectedSwitchName (the network's layer2 switch)"},
		{"Logical_Switch_Port", podL2Port, "addresses", "0a:58:0a:64:00:05 10.100.0.5 fd00:100::5", upPodPort + " (the MAC, then each IP of the pod's annotation)"},
		{"Logical_Switch_Port", podL2Port, "port_security", "0a:58:0a:64:00:05 10.100.0.5 fd00:100::5", upPodPort + " (port_security = addresses)"},
		{"Logical_Switch_Port", podL2Port, "options", "iface-id-ver=uid-pod1,requested-chassis=" + chassisOf("node1") + ",requested-tnl-key=10",
			upPodPort + " (iface-id-ver: the pod's UID; requested-chassis: the node's chassis ID); " + upTransit + " (requested-tnl-key: the pod's tunnel_id)"},
		{"Logical_Switch_Port", podL2Port, "type", "", upPodPort + " (a local pod's port has no type)"},
		{"Logical_Switch_Port", podL2Port, "enabled", "", upPodPort + " (enabled is set only during a live migration)"},
		{"Logical_Switch_Port", podL2Port, "external_ids:namespace", "tenant-blue", upPodPort},
		{"Logical_Switch_Port", podL2Port, "external_ids:pod", "true", upPodPort},
		{"Logical_Switch_Port", podL2Port, "external_ids:" + ovnk.ExternalIDNAD, podL2NAD, upPodPort + " (types.NADExternalID)"},
		{"Logical_Switch_Port", podL2Port, "external_ids:" + ovnk.ExternalIDNetwork, podL2Net, upPodPort + " (types.NetworkExternalID)"},
		{"Logical_Switch_Port", podL2Port, "external_ids:" + ovnk.ExternalIDTopology, "layer2", upPodPort + " (types.TopologyExternalID)"},
		{"Logical_Switch_Port", podL2Rem, "type", "remote", upTransit + " (a pod of another zone's node)"},
		{"Logical_Switch_Port", podL2Rem, "options", "iface-id-ver=uid-pod2,requested-chassis=" + chassisOf("node2") + ",requested-tnl-key=11",
			upPodPort + "; " + upTransit + " (a remote port is bound to its node's chassis)"},
		{"Logical_Switch_Port", podVMDst, "enabled", "false",
			"base_network_controller_user_defined.go: addLogicalPortToNetworkForNAD (the migration target's lspEnabled = IsTargetDomainReady)"},
		{"Logical_Switch_Port", podVMDst, "addresses", "", upPodPort + " (no addresses on a disabled port)"},
		{"Logical_Switch_Port", podVMDst, "port_security", "0a:58:0a:64:00:06 10.100.0.6", upPodPort + " (port_security is set on a disabled port too)"},
		{"Logical_Switch_Port", podVMSrc, "enabled", "", "base_network_controller_user_defined.go: disableLiveMigrationSourceLSPOps (the source stays enabled until the target's domain is ready)"},
	},
})

var _ = addParityCase(parityCase{
	name: "pod ports on a Primary Layer3 network",
	plan: func(t *testing.T) *rows.Desired {
		n := pods.Network{Name: podL3Net, Topology: base.TopologyLayer3}
		return mustPorts(t, n,
			parityPod(podL3NAD, "tenant-green", "pod3", "node1", true, "0a:58:0a:80:00:05", 0, "10.128.0.5/24", "fd00:128::5/64"),
			parityPod(podL3NAD, "tenant-green", "pod4", "node2", false, "0a:58:0a:80:01:05", 0, "10.128.1.5/24"))
	},
	same: []parity{
		{"Logical_Switch", podL3SW, "name", podL3SW, "base_network_controller_pods.go: getExpectedSwitchName (GetNetworkScopedSwitchName(node))"},
		{"Logical_Switch_Port", podL3Port, "addresses", "0a:58:0a:80:00:05 10.128.0.5 fd00:128::5", upPodPort},
		{"Logical_Switch_Port", podL3Port, "options", "iface-id-ver=uid-pod3,requested-chassis=" + chassisOf("node1"),
			upPodPort + " (no tunnel key outside Layer2)"},
		{"Logical_Switch_Port", podL3Port, "external_ids:" + ovnk.ExternalIDTopology, "layer3", upPodPort},
	},
})

var _ = addParityCase(parityCase{
	name: "the Localnet switch and a pod port on it",
	plan: func(t *testing.T) *rows.Desired {
		d, err := pods.LocalnetSwitch(pods.LocalnetNetwork{Name: podLNNet, Role: "secondary",
			Subnets: []netip.Prefix{pfx("192.168.100.0/24"), pfx("fd10:100::/64")}, PhysicalNetwork: "physnet-a", VLAN: 100})
		if err != nil {
			t.Fatal(err)
		}
		p := mustPorts(t, pods.Network{Name: podLNNet, Topology: ovnk.TopologyLocalnet},
			parityPod(podLNNAD, "tenant-red", "pod5", "node1", true, "0a:58:c0:a8:64:05", 0, "192.168.100.5/24"))
		// Two pieces on one switch: the pod port joins the switch's ports here.
		d.Switches[0].Ports = append(d.Switches[0].Ports, p.Switches[0].Ports...)
		return d
	},
	same: []parity{
		{"Logical_Switch", podLNSW, "other_config", "ipv6_prefix=fd10:100::,subnet=192.168.100.0/24",
			"base_secondary_layer2_network_controller.go: initializeLogicalSwitch (subnet, ipv6_prefix per subnet)"},
		{"Logical_Switch", podLNSW, "external_ids:" + ovnk.ExternalIDNetworkRole, "secondary", "util/util.go: GenerateExternalIDsForSwitchOrRouter"},
		{"Logical_Switch", podLNSW, "external_ids:" + ovnk.ExternalIDTopology, "localnet", "util/util.go: GenerateExternalIDsForSwitchOrRouter"},
		{"Logical_Switch_Port", "cluster_udn_phys_ovn_localnet_port", "type", "localnet", upLocalnet},
		{"Logical_Switch_Port", "cluster_udn_phys_ovn_localnet_port", "addresses", "unknown", upLocalnet},
		{"Logical_Switch_Port", "cluster_udn_phys_ovn_localnet_port", "options", "network_name=physnet-a",
			"localnet_user_defined_network_controller.go: localnetPortNetworkNameOptions (physicalNetworkName, else the network's name)"},
		{"Logical_Switch_Port", "cluster_udn_phys_ovn_localnet_port", "tag_request", "100", upLocalnet + " (the VLAN ID)"},
		{"Logical_Switch_Port", podLNPort, "options", "iface-id-ver=uid-pod5,requested-chassis=" + chassisOf("node1"), upPodPort},
		{"Logical_Switch_Port", podLNPort, "external_ids:" + ovnk.ExternalIDTopology, "localnet", upPodPort},
	},
})

// pSWBlue is tenant-blue/blue's layer2 switch.
const pSWBlue = "tenant.blue_blue_ovn_layer2_switch"

// The reference case's secondary CUDN backend-l2 (network ID 3) in
// namespace apps, with app-node-a on node1 and app-node-b on node2: values
// as upstream's ovnkube-controller wrote them live
// (../shared/upstream-live, case cudn).
const (
	podSecNet    = "cluster_udn_backend-l2"
	podSecSW     = "cluster_udn_backend.l2_ovn_layer2_switch"
	podSecLocal  = "apps.backend.l2_apps_app-node-a"
	podSecRemote = "apps.backend.l2_apps_app-node-b"
)

var _ = addParityCase(parityCase{
	name: "a Secondary Layer2 switch and its pod ports",
	plan: func(t *testing.T) *rows.Desired {
		d, err := pods.SecondaryLayer2Switch(pods.SecondaryLayer2Network{Name: podSecNet, Subnets: []netip.Prefix{pfx("10.50.0.0/16")}, NetworkID: 3})
		if err != nil {
			t.Fatal(err)
		}
		p := mustPorts(t, pods.Network{Name: podSecNet, Topology: base.TopologyLayer2},
			parityPod("apps/backend-l2", "apps", "app-node-a", "node1", true, "0a:58:0a:32:00:01", 10, "10.50.0.1/16"),
			parityPod("apps/backend-l2", "apps", "app-node-b", "node2", false, "0a:58:0a:32:00:03", 12, "10.50.0.3/16"))
		d.Switches[0].Ports = append(d.Switches[0].Ports, p.Switches[0].Ports...)
		return d
	},
	same: []parity{
		{"Logical_Switch", podSecSW, "other_config",
			"interconn-ts=" + podSecSW + ",mcast_flood_unregistered=true,mcast_querier=false,mcast_snoop=true,requested-tnl-key=16711686,subnet=10.50.0.0/16",
			"base_secondary_layer2_network_controller.go: initializeLogicalSwitch; zone_interconnect/zone_ic_handler.go: addTransitSwitchConfig " +
				"(BaseTransitSwitchTunnelKey + network ID)"},
		{"Logical_Switch", podSecSW, "external_ids:" + ovnk.ExternalIDNetworkRole, "secondary", "util/util.go: GenerateExternalIDsForSwitchOrRouter"},
		{"Logical_Switch", podSecSW, "load_balancer_group", "cluster_udn_backend.l2_clusterLBGroup,cluster_udn_backend.l2_clusterSwitchLBGroup",
			"base_secondary_layer2_network_controller.go: initializeLogicalSwitch (the groups of layer2_user_defined_network_controller.go init)"},
		{"Load_Balancer_Group", "cluster_udn_backend.l2_clusterLBGroup", "name", "cluster_udn_backend.l2_clusterLBGroup",
			"base_network_controller.go: initLoadBalancerGroups, run by layer2_user_defined_network_controller.go init for every Layer2 role"},
		{"Load_Balancer_Group", "cluster_udn_backend.l2_clusterSwitchLBGroup", "name", "cluster_udn_backend.l2_clusterSwitchLBGroup",
			"base_network_controller.go: initLoadBalancerGroups"},
		{"Load_Balancer_Group", "cluster_udn_backend.l2_clusterRouterLBGroup", "name", "cluster_udn_backend.l2_clusterRouterLBGroup",
			"base_network_controller.go: initLoadBalancerGroups (no router on a Secondary Layer2 network uses it)"},
		{"Logical_Switch_Port", podSecLocal, "options", "iface-id-ver=uid-app-node-a,requested-chassis=" + chassisOf("node1") + ",requested-tnl-key=10",
			upPodPort + "; " + upTransit},
		{"Logical_Switch_Port", podSecLocal, "addresses", "0a:58:0a:32:00:01 10.50.0.1", upPodPort},
		{"Logical_Switch_Port", podSecRemote, "type", "remote", upTransit},
		{"Logical_Switch_Port", podSecRemote, "external_ids:" + ovnk.ExternalIDNAD, "apps/backend-l2", upPodPort},
	},
})
