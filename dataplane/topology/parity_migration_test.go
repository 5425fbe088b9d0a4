package topology

import (
	"net/netip"
	"testing"

	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/dataplane/topology/migration"
)

// The live-migration rows of a Layer2 network: vm1 runs on node2 with
// addresses node1 handed out. Upstream writes point-to-point routes only
// for the default network (kubevirt/router.go) and DHCP_Options for every
// network's VM ports (base_network_controller.go: ensureDHCP).

const (
	pVMRoute4 = pTR + " 10.100.0.9"
	pDHCP4    = "ns1/vm1 10.100.0.0/16"
	pDHCP6    = "ns1/vm1 fd00:100::/64"
)

var pVMReroute4 = policyKey(pTR, migration.PolicyPriorityLiveMigration, "ip4.src == 10.100.0.9")

func migrationPlan(t *testing.T) *rows.Desired {
	t.Helper()
	net := migration.LiveMigrationNetwork{Name: "tenant_blue", Topology: base.TopologyLayer2, DHCP: new(migration.UpstreamVMDHCP(1400, []netip.Addr{addr("10.96.0.10")}))}
	nodes := []migration.LiveMigrationNode{
		{Name: "node1", RouterPort: pRTOS, GatewayIPs: []netip.Addr{addr("100.88.0.5"), addr("fd97::5")}},
		{Name: "node2", RouterPort: pRTOS, GatewayIPs: []netip.Addr{addr("100.88.0.7"), addr("fd97::7")}},
	}
	vms := []migration.VM{{Namespace: "ns1", Name: "vm1", IPs: []netip.Prefix{pfx("10.100.0.9/16"), pfx("fd00:100::9/64")}, Node: "node2", OwnerNode: "node1",
		Gateways: []netip.Addr{addr("10.100.0.1"), addr("fd00:100::1")}}}
	d, err := migration.LiveMigrationRoutes(net, nodes, vms)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var migrationParity = []parity{
	{"DHCP_Options", pDHCP4, "cidr", "10.100.0.0/16", "kubevirt/dhcp.go: composeDHCPConfigs (the VM IP's network)"},
	{"DHCP_Options", pDHCP4, "options:lease_time", "3500", "kubevirt/dhcp.go: ComposeDHCPv4Options (dhcpLeaseTime)"},
	{"DHCP_Options", pDHCP4, "options:server_id", "169.254.1.1", "kubevirt/dhcp.go: ComposeDHCPv4Options (ARPProxyIPv4)"},
	{"DHCP_Options", pDHCP4, "options:server_mac", "0a:58:a9:fe:01:01", "kubevirt/dhcp.go: ComposeDHCPv4Options (IPAddrToHWAddr(ARPProxyIPv4))"},
	{"DHCP_Options", pDHCP4, "options:hostname", `"vm1"`, "kubevirt/dhcp.go: ComposeDHCPv4Options (%q of the VM's name)"},
	{"DHCP_Options", pDHCP4, "options:router", "10.100.0.1", "base_network_controller.go: ensureDHCP (WithIPv4Router, the pod's IPv4 gateway)"},
	{"DHCP_Options", pDHCP4, "options:mtu", "1400", "base_network_controller.go: ensureDHCP (WithIPv4MTU, the network's MTU)"},
	{"DHCP_Options", pDHCP4, "options:dns_server", "10.96.0.10", "base_network_controller.go: ensureDHCP (the DNS service's IPv4 ClusterIP)"},
	{"DHCP_Options", pDHCP6, "cidr", "fd00:100::/64", "kubevirt/dhcp.go: composeDHCPConfigs"},
	{"DHCP_Options", pDHCP6, "options:server_id", "0a:58:6d:6d:c1:50", "kubevirt/dhcp.go: ComposeDHCPv6Options (IPAddrToHWAddr(ARPProxyIPv6 fe80::1))"},
	{"DHCP_Options", pDHCP6, "options:fqdn", `"vm1"`, "kubevirt/dhcp.go: ComposeDHCPv6Options"},
	{"Logical_Router", pTR, "name", pTR, "referenced, never written (the Layer2 topology's)"},
}

var migrationOnly = []udnkitOnly{
	{"Logical_Router_Static_Route", pVMRoute4, "output_port",
		"upstream routes a migrated VM point to point only on the default network's ovn_cluster_router (kubevirt/router.go: EnsureLocalZonePodAddressesToNodeRoute, the same shape: ip_prefix = nexthop = the VM's IP, dst-ip, output_port the node's router port); udnkit routes a Layer2 network's VM to its node's switch port the same way"},
	{"Logical_Router_Policy", pVMReroute4, "nexthops",
		"the VM's egress pinned to its node's gateway router when a zone holds several nodes (types.EgressLiveMigrationReroutePriority is upstream's priority; upstream writes a src-ip default route per node instead, libovsdb/util: CreateDefaultRouteToExternal)"},
}

var migrationDiffers = []differs{
	{"DHCP_Options", pDHCP4, "external_ids", "k8s.ovn.org/network=tenant_blue,k8s.ovn.org/topology=layer2,k8s.ovn.org/udnkit-piece=live-migration,k8s.ovn.org/vm=ns1/vm1",
		"VirtualMachineDHCPOptions DbObjectIDs (name=ns1/vm1, cidr), k8s.ovn.org/zone=local",
		"kubevirt/dhcp.go: composeDHCPOptions keys rows for upstream's controller; udnkit keys them by VM and cidr (schema/dhcp_options.go)"},
}

var _ = addParityCase(parityCase{
	name: "live migration", plan: migrationPlan, same: migrationParity, only: migrationOnly, differs: migrationDiffers,
})
