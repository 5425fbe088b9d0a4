package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/dataplane/internal/nbtest"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
)

// removeFixture applies six random networks and a foreign router (no
// external_ids) to a fresh database and returns it, its engine, the
// networks' desired rows and the number of transactions the engine has
// committed (counted from here on).
func removeFixture(t *testing.T, seed uint64, maxRemovalOps int) (string, *engine.Engine, []*rows.Desired, *atomic.Int32) {
	t.Helper()
	var commits atomic.Int32
	addr := nbtest.Serve(t)
	e := nbtest.Engine(t, addr, &engine.Hooks{AfterTransaction: func(rows.Owner, int, int) { commits.Add(1) }})
	e.MaxRemovalOps = maxRemovalOps
	rng := rand.New(rand.NewPCG(seed, 7))
	var ds []*rows.Desired
	for i := range 6 {
		d := nonEmpty(rng, nbtest.Owner(fmt.Sprintf("net%d", i)))
		apply(t, e, d)
		ds = append(ds, d)
	}
	nbtest.Transact(t, addr, ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalRouterTable,
		Row: ovsdb.Row{"name": "foreign"}})
	commits.Store(0)
	return addr, e, ds, &commits
}

// A batch removes what one Apply per network removes, in one transaction
// (bounded: whole networks per transaction, one heavier than the bound by
// an Apply of its own): the removed networks' rows go, the network unless
// revives, the network not asked for and another client's router stay.
func TestRemoveUnlessIsOneApplyPerNetworkInOneTransaction(t *testing.T) {
	for seed := range uint64(4) {
		for _, bound := range []int{-1, 0, 25} {
			t.Run(fmt.Sprintf("seed %d bound %d", seed, bound), func(t *testing.T) {
				want, e1, ds1, _ := removeFixture(t, seed, bound)
				for _, d := range ds1[:4] {
					apply(t, e1, &rows.Desired{Owner: d.Owner})
				}
				got, e2, ds2, commits := removeFixture(t, seed, bound)
				var owners []rows.Owner
				for _, d := range ds2[:5] {
					owners = append(owners, d.Owner)
				}
				var asked [][]string
				res, err := e2.RemoveUnless(ctx, owners, func(_ context.Context, networks []string) (map[string]bool, error) {
					asked = append(asked, networks)
					return map[string]bool{"net4": true}, nil
				})
				if err != nil {
					t.Fatal(err)
				}
				// A network heavier than the bound is removed alone, asked again.
				if len(asked) == 0 || !slices.Equal(asked[0], []string{"net0", "net1", "net2", "net3", "net4"}) ||
					slices.ContainsFunc(asked[1:], func(a []string) bool { return len(a) != 1 || a[0] == "net4" }) ||
					(bound <= 0 && len(asked) != 1) {
					t.Errorf("unless was asked of %v, want the five networks together, then the removals left alone one by one", asked)
				}
				if int(commits.Load()) != res.Transactions || res.Transactions == 0 ||
					(bound <= 0 && res.Transactions != 1) {
					t.Errorf("%d transactions committed, result %+v; want one (unbounded or by default)", commits.Load(), res)
				}
				wantRows, gotRows := nbtest.Snapshot(t, want), nbtest.Snapshot(t, got)
				if gotRows.String() != wantRows.String() {
					t.Errorf("a batch removal left\n%s\none Apply per network\n%s", gotRows, wantRows)
				}
				routers := strings.Join(gotRows[nbdb.LogicalRouterTable], "\n")
				for _, keep := range []string{`name="foreign"`, `name="net4_r`, `name="net5_r`} {
					if !strings.Contains(routers, keep) {
						t.Errorf("router %s is gone:\n%s", keep, routers)
					}
				}
				for _, d := range ds2[:4] {
					if strings.Contains(gotRows.String(), `"`+d.Owner.Network+`"`) {
						t.Errorf("rows of %s remain", d.Owner.Network)
					}
				}
				// The cache shows the removal: nothing left to plan.
				for _, d := range ds2[:4] {
					if ops, err := e2.Plan(&rows.Desired{Owner: d.Owner}); err != nil || len(ops) != 0 {
						t.Errorf("%s: a plan after the removal has %d operations (%v)", d.Owner.Network, len(ops), err)
					}
				}
			})
		}
	}
}

// A batch whose unless fails removes nothing and says why.
func TestRemoveUnlessFailingUnlessRemovesNothing(t *testing.T) {
	addr, e, ds, commits := removeFixture(t, 9, 0)
	before := nbtest.Snapshot(t, addr)
	_, err := e.RemoveUnless(ctx, []rows.Owner{ds[0].Owner, ds[1].Owner}, func(context.Context, []string) (map[string]bool, error) {
		return nil, fmt.Errorf("the NADs could not be read")
	})
	if err == nil || !strings.Contains(err.Error(), "the NADs could not be read") {
		t.Errorf("err = %v, want unless's", err)
	}
	if after := nbtest.Snapshot(t, addr); commits.Load() != 0 || after.String() != before.String() {
		t.Errorf("%d transactions; the database changed", commits.Load())
	}
}
