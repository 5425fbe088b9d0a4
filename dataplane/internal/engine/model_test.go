package engine_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/nbtest"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
)

// The engine's model: whatever desired states of a network were applied
// before, and in whatever order, interleaved with another network's Applies
// and cut into transactions of any size, applying a state leaves the rows
// that applying it once to an empty database leaves (a plan is a diff
// against what is there), and another client's rows alone. Each seed draws
// the states, the order and the transaction bound; a failure names it.
func TestRandomStatesInAnyOrderConverge(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 15
	}
	networks := []string{"blue", "green"}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint("seed-", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 33))
			states := map[string][]*rows.Desired{}
			var order []*rows.Desired
			for _, n := range networks {
				for range 2 + rng.IntN(4) {
					states[n] = append(states[n], nbtest.Random(rng, nbtest.Owner(n)))
				}
				// The intermediate states, some twice, in any order.
				for range 1 + rng.IntN(2*len(states[n])) {
					order = append(order, states[n][rng.IntN(len(states[n])-1)])
				}
			}
			rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			for _, n := range networks {
				order = append(order, states[n][len(states[n])-1])
			}

			walked := nbtest.Serve(t)
			foreign(t, walked)
			e := nbtest.Engine(t, walked, nil)
			e.MaxTransactionOps = []int{0, 4, 9, 20}[rng.IntN(4)]
			for _, d := range order {
				apply(t, e, d)
			}

			fresh := nbtest.Serve(t)
			foreign(t, fresh)
			f := nbtest.Engine(t, fresh, nil)
			for _, n := range networks {
				apply(t, f, states[n][len(states[n])-1])
			}
			got, want := nbtest.Snapshot(t, walked), nbtest.Snapshot(t, fresh)
			if got.String() != want.String() {
				t.Fatalf("after %d Applies (transactions of at most %d operations) the database differs from one final Apply per network:\ngot:\n%s\nwant:\n%s",
					len(order), e.MaxTransactionOps, got, want)
			}
			for _, n := range networks {
				if res := apply(t, e, states[n][len(states[n])-1]); res.Operations != 0 {
					t.Errorf("%s: applying the final state again sent %d operations", n, res.Operations)
				}
			}
		})
	}
}

// foreign writes another client's rows: a router with a route, and a
// switch with a port named like the tests' and labelled with their network.
func foreign(t *testing.T, addr string) {
	t.Helper()
	nbtest.Transact(t, addr,
		ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalRouterStaticRouteTable, UUIDName: "route",
			Row: ovsdb.Row{"ip_prefix": "192.0.2.0/24", "nexthop": "100.64.0.9"}},
		ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalRouterTable,
			Row: ovsdb.Row{"name": "ovnk_cluster_router", "static_routes": ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: "route"}}}}},
		ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchPortTable, UUIDName: "port",
			Row: ovsdb.Row{"name": "blue_sp0_0-foreign", "external_ids": ovsdb.OvsMap{GoMap: map[any]any{"k8s.ovn.org/network": "blue"}}}},
		ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchTable,
			Row: ovsdb.Row{"name": "join", "ports": ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: "port"}}}}})
}
