package migration

import (
	"net/netip"
	"testing"

	"github.com/udnkit/udnkit/dataplane/topology/base"
)

var (
	pfx  = netip.MustParsePrefix
	addr = netip.MustParseAddr
)

// On a Layer2 transit router whose zones hold one node each, a migrated VM
// gets its point-to-point route but no reroute: the zone's own source route
// already takes its egress to the local gateway router, and a reroute would
// shadow the routes to other nodes' join IPs. In one zone of many nodes the
// reroute pins the VM's egress to its node.
func TestLiveMigrationLayer2RerouteOnlyInASharedZone(t *testing.T) {
	nodes := []LiveMigrationNode{
		{Name: "node1", RouterPort: "trtos-sw", GatewayIPs: []netip.Addr{addr("100.88.0.5")}},
		{Name: "node2", RouterPort: "trtos-sw", GatewayIPs: []netip.Addr{addr("100.88.0.7")}},
	}
	vms := []VM{{Namespace: "ns1", Name: "vm1", IPs: []netip.Prefix{pfx("10.150.0.8/16")}, Node: "node2", OwnerNode: "node1"}}
	for _, perZone := range []bool{false, true} {
		d, err := LiveMigrationRoutes(LiveMigrationNetwork{Name: "ns1_vmnet", Topology: base.TopologyLayer2, NodePerZone: perZone}, nodes, vms)
		if err != nil {
			t.Fatal(err)
		}
		r := d.Routers[0]
		if len(r.Routes) != 1 || r.Routes[0].IPPrefix != "10.150.0.8" {
			t.Errorf("NodePerZone %v: routes %+v, want the VM's point-to-point route", perZone, r.Routes)
		}
		if got, want := len(r.Policies), map[bool]int{false: 1, true: 0}[perZone]; got != want {
			t.Errorf("NodePerZone %v: %d reroute policies, want %d", perZone, got, want)
		}
	}
}
