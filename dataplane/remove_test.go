package dataplane

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/ovnk"
)

// removeNetworks applies n Layer2 networks of three nodes ("rm0_net" …)
// and a router and a switch of another client's, and returns the
// networks' owners.
func removeNetworks(e *env, n int) []rows.Owner {
	e.t.Helper()
	var owners []rows.Owner
	for i := range n {
		net, nodes := exampleV4()
		net.Name = fmt.Sprintf("rm%d_net", i)
		net.SwitchTunnelKey, net.TransitRouterTunnelKey = 16711685+2*i, 16711686+2*i
		d := mustLayer2(e.t, net, nodes)
		e.apply(d)
		owners = append(owners, d.Owner)
	}
	e.nbctl("lr-add", "foreign-router", "--", "ls-add", "foreign-switch")
	return owners
}

// networkRows lists the routers, switches and load balancer groups of the
// networks named, as ovn-nbctl shows them, and another client's.
func networkRows(e *env, networks ...string) []string {
	e.t.Helper()
	var out []string
	for _, table := range []string{"Logical_Router", "Logical_Switch", "Load_Balancer_Group"} {
		for _, name := range lines(e.nbctl("--data=bare", "--no-headings", "--columns=name", "list", table)) {
			for _, n := range networks {
				if strings.HasPrefix(name, ovnk.NetworkPrefix(n)) || strings.HasPrefix(name, n) ||
					strings.Contains(name, "_"+ovnk.NetworkPrefix(n)) {
					out = append(out, table+" "+name)
				}
			}
		}
	}
	return out
}

// A sweep's removal of four networks on ovsdb-server: one transaction
// (counted as it commits) removes the three that stay gone; the network
// unless revives under its lock, the network not asked for and another
// client's router and switch stay as they were.
func TestRemoveUnlessOneTransactionOnOVSDBServer(t *testing.T) {
	e := newEnv(t)
	owners := removeNetworks(e, 5)
	var commits atomic.Int32
	e.hooks.AfterTransaction = func(rows.Owner, int, int) { commits.Add(1) }
	kept := networkRows(e, "rm3_net", "rm4_net", "foreign")
	if len(kept) < 8 {
		t.Fatalf("fixture: rows of the kept networks and the other client %v", kept)
	}
	res, err := e.c.RemoveUnless(e.ctx, owners[:4], func(_ context.Context, networks []string) (map[string]bool, error) {
		return map[string]bool{"rm3_net": true}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Transactions != 1 || commits.Load() != 1 {
		t.Errorf("three networks removed in %d transactions (result %+v), want 1", commits.Load(), res)
	}
	if left := networkRows(e, "rm0_net", "rm1_net", "rm2_net"); len(left) > 0 {
		t.Errorf("the removed networks' rows remain: %v", left)
	}
	if got := networkRows(e, "rm3_net", "rm4_net", "foreign"); strings.Join(got, ",") != strings.Join(kept, ",") {
		t.Errorf("rows that must stay: %v, want %v", got, kept)
	}
	e.settle()
	if res, err := e.c.RemoveUnless(e.ctx, owners[:3], nil); err != nil || res.Operations != 0 {
		t.Errorf("the same removal again: %+v, %v; want nothing to do", res, err)
	}
}

// A batch transaction that fails (another client's router names a
// removed network's load balancer group after the plan, so deleting the
// group breaks a reference) commits nothing; each network is then removed
// by an Apply of its own, which keeps the group the other router names.
func TestRemoveUnlessFailedTransactionRemovesOneByOne(t *testing.T) {
	e := newEnv(t)
	owners := removeNetworks(e, 3)
	group := ovnk.NamesFor("rm1_net").ClusterLBGroup()
	calls := 0
	e.hooks.BeforeTransact = func(o rows.Owner) {
		calls++
		switch calls {
		case 1:
			e.nbctl("--", "--id=@g", "get", "Load_Balancer_Group", group, "--",
				"create", "Logical_Router", "name=names-the-group", "load_balancer_group=@g")
			e.settle()
		case 2:
			// The failed transaction removed nothing.
			if got := networkRows(e, "rm0_net", "rm1_net", "rm2_net"); len(got) < 12 {
				t.Errorf("after the failed transaction, before %s's own removal: %v", o.Network, got)
			}
		}
	}
	var commits atomic.Int32
	e.hooks.AfterTransaction = func(rows.Owner, int, int) { commits.Add(1) }
	res, err := e.c.RemoveUnless(e.ctx, owners, nil)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 4 || commits.Load() != 3 || res.Transactions != 3 {
		t.Errorf("%d transactions sent, %d committed (result %+v); want the batch's, then one per network", calls, commits.Load(), res)
	}
	left := networkRows(e, "rm0_net", "rm1_net", "rm2_net")
	if len(left) != 1 || left[0] != "Load_Balancer_Group "+group {
		t.Errorf("rows left %v, want only %s (another router names it)", left, group)
	}
	if got := e.nbctl("--data=bare", "--no-headings", "--columns=name", "list", "Logical_Router"); !strings.Contains(got, "names-the-group") {
		t.Errorf("the other client's router is gone: %s", got)
	}
}

// A batch removal on ovsdb-server checks the zone's routers once for all
// its networks: a removed network's load balancer group that another
// client's router names stays (deleting it would fail the transaction),
// every other row of the three networks goes, in one transaction.
func TestRemoveUnlessKeepsAGroupAnotherRouterNamesOnOVSDBServer(t *testing.T) {
	e := newEnv(t)
	owners := removeNetworks(e, 3)
	group := ovnk.NamesFor("rm1_net").ClusterLBGroup()
	e.nbctl("--", "--id=@g", "get", "Load_Balancer_Group", group, "--",
		"create", "Logical_Router", "name=names-the-group", "load_balancer_group=@g")
	e.settle()
	var commits atomic.Int32
	e.hooks.AfterTransaction = func(rows.Owner, int, int) { commits.Add(1) }
	res, err := e.c.RemoveUnless(e.ctx, owners, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Transactions != 1 || commits.Load() != 1 {
		t.Errorf("three networks removed in %d transactions (result %+v), want 1", commits.Load(), res)
	}
	left := networkRows(e, "rm0_net", "rm1_net", "rm2_net")
	if len(left) != 1 || left[0] != "Load_Balancer_Group "+group {
		t.Errorf("rows left %v, want only %s (another router names it)", left, group)
	}
	if got := e.nbctl("--data=bare", "--no-headings", "--columns=name", "list", "Logical_Router"); !strings.Contains(got, "names-the-group") {
		t.Errorf("the other client's router is gone: %s", got)
	}
}
