package dataplane

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/dataplane/topology/migration"
)

// The kubevirt point-to-point design: a VM migrated away from the node owning
// its IP gets a static route and a reroute policy; they go when it returns or
// is deleted, and its DHCP options follow the VM.
func TestLiveMigrationRoutesAddedAndRemoved(t *testing.T) {
	e := newEnv(t)
	const router = "ns1_vmnet_ovn_cluster_router"
	e.nbctl("lr-add", router)
	e.nbctl("lr-route-add", router, "10.244.1.0/24", "100.65.0.3")
	net := migration.LiveMigrationNetwork{Name: "ns1_vmnet", Topology: base.TopologyLayer3, DHCP: new(migration.UpstreamVMDHCP(1400, []netip.Addr{addr("10.96.0.10")}))}
	nodes := []migration.LiveMigrationNode{
		{Name: "node1", RouterPort: "rtos-node1", GatewayIPs: []netip.Addr{addr("100.65.0.2")}},
		{Name: "node2", RouterPort: "rtos-node2", GatewayIPs: []netip.Addr{addr("100.65.0.3")}},
	}
	vm := migration.VM{Namespace: "ns1", Name: "vm1", IPs: []netip.Prefix{pfx("10.244.0.8/24")}, Node: "node1", OwnerNode: "node1",
		Gateways: []netip.Addr{addr("10.244.0.1")}}
	apply := func(vms ...migration.VM) int {
		t.Helper()
		d, err := migration.LiveMigrationRoutes(net, nodes, vms)
		if err != nil {
			t.Fatal(err)
		}
		return e.apply(d)
	}
	routesOnly := []string{"IPv4 Routes", "Route Table <main>:", "10.244.1.0/24 100.65.0.3 dst-ip"}
	dhcp := func() string {
		return e.nbctl("--columns=cidr,options,external_ids", "--format=csv", "--data=bare", "--no-headings", "list", "DHCP_Options")
	}

	// On its owner node: no point-to-point routing, DHCP options only.
	apply(vm)
	wantLines(t, "routes on the owner node", e.nbctl("lr-route-list", router), routesOnly...)
	wantLines(t, "DHCP options", dhcp(),
		`10.244.0.0/24,"dns_server=10.96.0.10 hostname=""vm1"" lease_time=3500 mtu=1400 router=10.244.0.1 server_id=169.254.1.1 server_mac=0a:58:a9:fe:01:01",k8s.ovn.org/network=ns1_vmnet k8s.ovn.org/topology=layer3 k8s.ovn.org/udnkit-piece=live-migration k8s.ovn.org/vm=ns1/vm1`)

	// Migrated to node2.
	vm.Node = "node2"
	apply(vm)
	wantLines(t, "routes after migrating to node2", e.nbctl("lr-route-list", router),
		append(routesOnly, "10.244.0.8 10.244.0.8 dst-ip rtos-node2")...)
	wantLines(t, "policies after migrating to node2", e.nbctl("lr-policy-list", router),
		"Routing Policies", "10 ip4.src == 10.244.0.8 reroute 100.65.0.3")
	if ops := apply(vm); ops != 0 {
		t.Errorf("second apply sent %d operations, want 0", ops)
	}

	// Back on node1: the routing goes.
	vm.Node = "node1"
	apply(vm)
	wantLines(t, "routes after returning", e.nbctl("lr-route-list", router), routesOnly...)
	if got := e.nbctl("lr-policy-list", router); strings.Contains(got, "reroute") {
		t.Errorf("reroute policy survived the VM's return: %s", got)
	}

	// Migrated again, then deleted: routes, policy and DHCP options go.
	vm.Node = "node2"
	apply(vm)
	apply()
	wantLines(t, "routes after deleting the VM", e.nbctl("lr-route-list", router), routesOnly...)
	if got := e.nbctl("lr-policy-list", router); strings.Contains(got, "reroute") {
		t.Errorf("reroute policy survived the VM's deletion: %s", got)
	}
	if got := dhcp(); got != "" {
		t.Errorf("DHCP options survived the VM's deletion: %s", got)
	}

	for _, c := range []struct {
		vm   migration.VM
		want string
	}{
		{migration.VM{Namespace: "ns1", Name: "vm2", IPs: []netip.Prefix{pfx("10.244.0.9/24")}, Node: "node9", OwnerNode: "node1"}, `vms[0] (ns1/vm2).node: node "node9" is not known`},
		{migration.VM{Namespace: "ns1", Name: "vm3", Node: "node2"}, "vms[0] (ns1/vm3): namespace, name and ips are required"},
		{migration.VM{Namespace: "ns1", Name: "vm4", IPs: []netip.Prefix{pfx("fd00::9/64")}, Node: "node2", OwnerNode: "node1"}, "vms[0] (ns1/vm4): node node2 has no ip6 gateway IP"},
	} {
		if _, err := migration.LiveMigrationRoutes(net, nodes, []migration.VM{c.vm}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("LiveMigrationRoutes(%s): err = %v, want %q", c.vm.Name, err, c.want)
		}
	}
	if _, err := migration.LiveMigrationRoutes(migration.LiveMigrationNetwork{Name: "x", Topology: "localnet"}, nil, nil); err == nil ||
		!strings.Contains(err.Error(), `network.topology: "localnet" is not layer2 or layer3`) {
		t.Errorf("localnet topology: err = %v", err)
	}
}
