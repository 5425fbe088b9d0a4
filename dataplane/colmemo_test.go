package dataplane

import (
	"slices"
	"testing"

	"github.com/udnkit/udnkit/dataplane/internal/index"
	"github.com/udnkit/udnkit/dataplane/internal/plan"
	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
)

// plan builds again.
func TestColumnMemoBehindTheCacheIsReadAfresh(t *testing.T) {
	e := newEnv(t)
	d := func() *rows.Desired {
		return &rows.Desired{
			Owner: rows.Owner{Network: "n", Topology: base.TopologyLayer2, Piece: base.PieceTransitRouter},
			Routers: []rows.Router{{Row: nbdb.LogicalRouter{Name: "r"}, Routes: []nbdb.LogicalRouterStaticRoute{
				dstIPRoute("10.0.0.0/8", "10.1.1.1"), dstIPRoute("10.2.0.0/16", "10.1.1.1")}}},
		}
	}
	e.apply(d()) // creates the router
	e.apply(d()) // its first plan of the router's routes
	e.apply(d()) // the second: builds the column's memo
	memo := e.c.eng.Memos.Get(d().Owner)
	var ck index.ColKey
	var cm *plan.ColumnMemo
	for k, c := range memo.Cols {
		if k.Column == "static_routes" {
			ck, cm = k, c
		}
	}
	if cm == nil || len(cm.ByKey) != 2 {
		t.Fatalf("no memo of the router's two routes: %+v", memo.Cols)
	}
	var stale *plan.ColRow
	for _, r := range cm.ByKey {
		stale = r
	}
	cached := *stale.M.(*nbdb.LogicalRouterStaticRoute)
	stale.M, stale.FP = &cached, 0 // equal content, not the cache's model
	p, err := e.c.eng.NewPlan(d())
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Ops) != 0 {
		t.Errorf("planned %d operations against an unchanged database", len(p.Ops))
	}
	if memo.Cols[ck] != nil {
		t.Fatal("the memo behind the cache was kept")
	}
	// The plan after next builds it again, from the cache's models (a
	// column is remembered from its second plan on).
	for i := range 2 {
		if p, err := e.c.eng.NewPlan(d()); err != nil || len(p.Ops) != 0 {
			t.Fatalf("plan %d after: %v, %d operations", i+1, err, len(p.Ops))
		}
		if i == 0 && memo.Cols[ck] != nil && memo.Cols[ck].Seen != nil {
			t.Fatal("a column read once was remembered")
		}
	}
	rebuilt := memo.Cols[ck]
	if rebuilt == nil {
		t.Fatal("no memo after the next plan")
	}
	if r := rebuilt.ByKey[schema.LogicalRouterStaticRoute.Key(stale.M.(*nbdb.LogicalRouterStaticRoute))]; r == nil || r.M == stale.M {
		t.Errorf("the rebuilt memo holds %+v, not the cache's model", r)
	}
}

// A plan through a column's memo that takes children out of the column
// notes them gone, in UUID order, as the full read does: Apply waits until
// the cache shows them deleted, so the next plan finds nothing to do.
func TestColumnMemoRemovalsAreNotedGone(t *testing.T) {
	e := newEnv(t)
	routes := []nbdb.LogicalRouterStaticRoute{dstIPRoute("10.0.0.0/8", "10.1.1.1"),
		dstIPRoute("10.2.0.0/16", "10.1.1.1"), dstIPRoute("10.3.0.0/16", "10.1.1.1")}
	d := func(rs ...nbdb.LogicalRouterStaticRoute) *rows.Desired {
		return &rows.Desired{
			Owner:   rows.Owner{Network: "n", Topology: base.TopologyLayer2, Piece: base.PieceTransitRouter},
			Routers: []rows.Router{{Row: nbdb.LogicalRouter{Name: "r"}, Routes: rs}},
		}
	}
	for range 3 { // creates the router, reads its routes once, builds the memo
		e.apply(d(routes...))
	}
	memo := e.c.eng.Memos.Get(d().Owner)
	hits := memo.ColHits
	p, err := e.c.eng.NewPlan(d(routes[1]))
	if err != nil {
		t.Fatal(err)
	}
	if memo.ColHits == hits {
		t.Fatal("the plan did not go through the column's memo")
	}
	var gone []string
	for _, r := range p.Gone {
		if r.Table == nbdb.LogicalRouterStaticRouteTable {
			gone = append(gone, r.UUID)
		}
	}
	var want []string
	for _, m := range e.c.eng.NB.Cache().Table(nbdb.LogicalRouterStaticRouteTable).RowsShallow() {
		if r := m.(*nbdb.LogicalRouterStaticRoute); r.IPPrefix != routes[1].IPPrefix {
			want = append(want, r.UUID)
		}
	}
	slices.Sort(want)
	if len(want) != 2 || !slices.Equal(gone, want) {
		t.Errorf("noted gone %v, want the two removed routes in order %v", gone, want)
	}
	if ops := e.apply(d(routes[1])); ops == 0 {
		t.Fatal("the removal sent nothing")
	}
	if p, err := e.c.eng.NewPlan(d(routes[1])); err != nil || len(p.Ops) != 0 {
		t.Errorf("the next plan: %v, %d operations", err, len(p.Ops))
	}
}
