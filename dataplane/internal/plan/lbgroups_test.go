package plan_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/dataplane/internal/nbtest"
	"github.com/udnkit/udnkit/dataplane/internal/plan"
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

// A batch of removals (Removals) reads the zone's routers and switches
// once for every plan, and deletes what each network's removal planned
// alone deletes: of four networks removed together, the one whose group
// another client's router names keeps that group (its delete would fail
// the transaction), the one whose group a router of a network removed in
// the same batch names keeps it too (each plan is checked on its own, as
// the plans may go into separate transactions), the others lose theirs.
func TestRemovalsDropGroupsAsEachRemovalAlone(t *testing.T) {
	ctx := context.Background()
	addr := nbtest.Serve(t)
	e := nbtest.Engine(t, addr, nil)
	var ds []*rows.Desired
	for i := range 4 {
		net := fmt.Sprintf("net%d", i)
		names := ovnk.NamesFor(net)
		var groups []rows.LoadBalancerGroup
		for _, n := range names.LoadBalancerGroups() {
			groups = append(groups, rows.LoadBalancerGroup{Row: nbdb.LoadBalancerGroup{Name: n}})
		}
		d := &rows.Desired{Owner: nbtest.Owner(net), LoadBalancerGroups: groups,
			Routers:  []rows.Router{{Row: nbdb.LogicalRouter{Name: net + "_r0"}, LoadBalancerGroups: []string{names.ClusterLBGroup()}}},
			Switches: []rows.Switch{{Row: nbdb.LogicalSwitch{Name: net + "_s0"}, LoadBalancerGroups: names.LoadBalancerGroups()}}}
		if _, err := e.Apply(ctx, d); err != nil {
			t.Fatal(err)
		}
		ds = append(ds, &rows.Desired{Owner: d.Owner})
	}
	// Another client's router names net0's cluster group; net3's router
	// names net1's too (a row the batch removes, but not net1's plan).
	cluster0, cluster1 := ovnk.NamesFor("net0").ClusterLBGroup(), ovnk.NamesFor("net1").ClusterLBGroup()
	nbtest.Transact(t, addr, ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalRouterTable,
		Row: ovsdb.Row{"name": "other_r", "load_balancer_group": setOf([]string{groupUUID(t, e, cluster0)})}})
	nbtest.Transact(t, addr, ovsdb.Operation{Op: ovsdb.OperationMutate, Table: nbdb.LogicalRouterTable,
		Where:     []ovsdb.Condition{{Column: "name", Function: ovsdb.ConditionEqual, Value: "net3_r0"}},
		Mutations: []ovsdb.Mutation{{Column: "load_balancer_group", Mutator: ovsdb.MutateOperationInsert, Value: setOf([]string{groupUUID(t, e, cluster1)})}}})
	waitFor(t, func() bool {
		r3 := e.NB.Cache().Table(nbdb.LogicalRouterTable).RowsShallow()
		for _, m := range r3 {
			if r := m.(*nbdb.LogicalRouter); r.Name == "net3_r0" {
				return len(r.LoadBalancerGroup) == 2 && len(r3) == 5
			}
		}
		return false
	})
	var alone []string
	for _, d := range ds {
		p, err := e.IndexPlan(d, nil)
		if err != nil {
			t.Fatal(err)
		}
		alone = append(alone, fmt.Sprint(p.Ops))
	}
	ps, err := plan.Removals(e.NB, e.Index, &e.Memos, ds)
	if err != nil {
		t.Fatal(err)
	}
	var dropped []string
	for i, p := range ps {
		if got := fmt.Sprint(p.Ops); got != alone[i] {
			t.Errorf("%s: the batch planned\n%s\nthe removal alone\n%s", ds[i].Owner.Network, got, alone[i])
		}
		for _, g := range p.Gone {
			if g.Table == nbdb.LoadBalancerGroupTable {
				dropped = append(dropped, e.NB.Cache().Table(g.Table).Row(g.UUID).(*nbdb.LoadBalancerGroup).Name)
			}
		}
	}
	slices.Sort(dropped)
	var want []string
	for i := range 4 {
		for _, g := range ovnk.NamesFor(fmt.Sprintf("net%d", i)).LoadBalancerGroups() {
			if g != cluster0 && g != cluster1 {
				want = append(want, g)
			}
		}
	}
	slices.Sort(want)
	if !slices.Equal(dropped, want) {
		t.Errorf("the batch deletes the groups %v, want %v", dropped, want)
	}
}

// groupUUID is the UUID of the load balancer group named name, in e's cache.
func groupUUID(t *testing.T, e *engine.Engine, name string) string {
	t.Helper()
	for u, m := range e.NB.Cache().Table(nbdb.LoadBalancerGroupTable).RowsShallow() {
		if m.(*nbdb.LoadBalancerGroup).Name == name {
			return u
		}
	}
	t.Fatalf("no load balancer group %s", name)
	return ""
}

// waitFor waits (up to 10 s) until ok holds.
func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}
