package plan_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/dataplane/internal/nbtest"
	"github.com/udnkit/udnkit/dataplane/internal/plan"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
)

// pieceOf is the test owner's network with another piece.
func pieceOf(piece string) rows.Owner {
	o := nbtest.Owner("net1")
	o.Piece = piece
	return o
}

// A piece's plan meets every router and switch of its network, also those
// it does not want: it takes its own children out of them and leaves the
// others' (a guest's route on the owner's router, planned as the full diff
// plans it), and a piece with no children anywhere plans nothing on them.
func TestAPieceTakesOnlyItsChildrenOutOfRoutersItDoesNotWant(t *testing.T) {
	e, _ := applied(t)
	out := "net1_rp0"
	guest := &rows.Desired{Owner: pieceOf("guest"),
		Routers: []rows.Router{{Row: nbdb.LogicalRouter{Name: "net1_r0"}, Ref: true,
			Routes: []nbdb.LogicalRouterStaticRoute{{IPPrefix: "10.9.0.0/24", Nexthop: "100.64.0.9", OutputPort: &out}}}},
		Switches: []rows.Switch{{Row: nbdb.LogicalSwitch{Name: "net1_s0"}, Ref: true,
			Ports: []nbdb.LogicalSwitchPort{{Name: "net1_guest", Addresses: []string{"unknown"}}}}}}
	if _, err := e.Apply(context.Background(), guest); err != nil {
		t.Fatal(err)
	}
	leaving := &rows.Desired{Owner: guest.Owner, Switches: guest.Switches}
	got := describe(plans(t, e, leaving))
	if want := []string{"mutate Logical_Router static_routes delete"}; !slices.Equal(got, want) {
		t.Errorf("the guest leaving the router: plan\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	bystander := &rows.Desired{Owner: pieceOf("bystander"), AddressSets: []nbdb.AddressSet{{Name: "net1_as"}}}
	got = describe(plans(t, e, bystander))
	if want := []string{"insert Address_Set name=net1_as"}; !slices.Equal(got, want) {
		t.Errorf("a piece without children: plan\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// BenchmarkPlanBesideALargeRouter plans a piece that has no router or
// switch (a network's policies: port groups and address sets) while
// another piece's router of its network holds N routes. The plan takes
// no child out of a router it has none in, so its time does not grow
// with N (it read each route's row for ownership before).
func BenchmarkPlanBesideALargeRouter(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			e := nbtest.Engine(b, nbtest.Serve(b), nil)
			big := desired()
			for i := range n {
				big.Routers[0].Routes = append(big.Routers[0].Routes,
					nbdb.LogicalRouterStaticRoute{IPPrefix: fmt.Sprintf("10.%d.%d.0/24", i/256, i%256), Nexthop: "100.64.0.2"})
			}
			policies := &rows.Desired{Owner: pieceOf("policies"), AddressSets: []nbdb.AddressSet{{Name: "net1_as"}}}
			for _, d := range []*rows.Desired{big, policies} {
				if _, err := e.Apply(context.Background(), d); err != nil {
					b.Fatal(err)
				}
			}
			var memos plan.Memos
			b.ResetTimer()
			for b.Loop() {
				planOnce(b, e, &memos, policies)
			}
		})
	}
}

func planOnce(b *testing.B, e *engine.Engine, memos *plan.Memos, d *rows.Desired) {
	p, err := plan.Incremental(e.NB, e.Index, memos, d)
	if err != nil {
		b.Fatal(err)
	}
	if len(p.Ops) != 0 {
		b.Fatalf("the plan of applied rows: %v", describe(p.Ops))
	}
}
