package plan_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/nbtest"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/ovnk"
)

// A piece that goes away takes its network's load balancer groups (by
// their names: the table has no external_ids) once no router or switch of
// the network stays, as upstream's cleanupLoadBalancerGroups
// (base_network_controller_user_defined.go) deletes them with the
// network: not a group another client's router still names (its delete
// would fail the transaction), not another network's or another client's
// group, and none while the network's switch stays (not even the router
// group no router names, as on a network without node ports).
func TestNetworkLoadBalancerGroupsGoWithTheNetwork(t *testing.T) {
	ctx := context.Background()
	addr := nbtest.Serve(t)
	e := nbtest.Engine(t, addr, nil)
	names := ovnk.NamesFor("net1")
	nbtest.Transact(t, addr,
		ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LoadBalancerGroupTable, UUIDName: "g", Row: ovsdb.Row{"name": "other_lbg"}},
		ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LoadBalancerGroupTable, UUIDName: "net2", Row: ovsdb.Row{"name": ovnk.NamesFor("net2").ClusterLBGroup()}},
		ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LoadBalancerGroupTable, UUIDName: "sg", Row: ovsdb.Row{"name": names.ClusterSwitchLBGroup()}},
		ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalRouterTable, Row: ovsdb.Row{"name": "other_r", "load_balancer_group": setOf([]string{"g", "sg"})}})
	var groups []rows.LoadBalancerGroup
	for _, n := range names.LoadBalancerGroups() {
		groups = append(groups, rows.LoadBalancerGroup{Row: nbdb.LoadBalancerGroup{Name: n}})
	}
	topo := &rows.Desired{Owner: nbtest.Owner("net1"), LoadBalancerGroups: groups,
		Routers:  []rows.Router{{Row: nbdb.LogicalRouter{Name: "net1_r0"}, LoadBalancerGroups: []string{names.ClusterLBGroup()}}},
		Switches: []rows.Switch{{Row: nbdb.LogicalSwitch{Name: "net1_s0"}, LoadBalancerGroups: []string{names.ClusterLBGroup(), names.ClusterSwitchLBGroup()}}}}
	other := &rows.Desired{Owner: rows.Owner{Network: "net1", Topology: "layer2", Piece: "other"},
		AddressSets: []nbdb.AddressSet{{Name: "net1_as"}}}
	for _, d := range []*rows.Desired{topo, other} {
		if _, err := e.Apply(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	groupNames := func() string {
		var out []string
		for _, r := range nbtest.Snapshot(t, addr)[nbdb.LoadBalancerGroupTable] {
			_, rest, _ := strings.Cut(r, `name="`)
			name, _, _ := strings.Cut(rest, `"`)
			out = append(out, name)
		}
		slices.Sort(out)
		return strings.Join(out, " ")
	}
	all := groupNames()
	if _, err := e.Apply(ctx, &rows.Desired{Owner: other.Owner}); err != nil {
		t.Fatal(err)
	}
	if got := groupNames(); got != all {
		t.Errorf("groups once another piece of the live network goes: %s, want %s", got, all)
	}
	if _, err := e.Apply(ctx, &rows.Desired{Owner: topo.Owner}); err != nil {
		t.Fatal(err)
	}
	want := "net1_clusterSwitchLBGroup net2_clusterLBGroup other_lbg"
	if got := groupNames(); got != want {
		t.Errorf("groups once the network is gone: %s, want %s", got, want)
	}
}
