package dataplane

import (
	"slices"
	"testing"

	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// The fingerprint of a row's managed columns is equal exactly when
// sameFields says the columns are: sets and maps in any order, an empty map
// as a missing one; a change of any one column changes it.
func TestFingerprintFollowsSameFields(t *testing.T) {
	peer := "rtoj-peer"
	empty := ""
	base := func() *nbdb.LogicalRouterPort {
		return &nbdb.LogicalRouterPort{ExternalIDs: map[string]string{"a": "1", "b": "2"}, MAC: "0a:58:64:58:00:05",
			Networks: []string{"100.88.0.5/16", "fd97::5/64"}, Options: map[string]string{}, Peer: &peer}
	}
	fields := func(r *nbdb.LogicalRouterPort) []any { return lrpSpec.fields(r, nil) }
	shared := map[string]string{"owner": "x"}
	sharedFP := mapFP(shared)
	fp := func(r *nbdb.LogicalRouterPort) uint64 {
		t.Helper()
		v, ok := fingerprint(fields(r), shared, sharedFP)
		if !ok {
			t.Fatalf("no fingerprint for %+v", r)
		}
		return v
	}
	want := fp(base())
	same := map[string]func(r *nbdb.LogicalRouterPort){
		"sets in another order": func(r *nbdb.LogicalRouterPort) { r.Networks = []string{"fd97::5/64", "100.88.0.5/16"} },
		"a map built in another order": func(r *nbdb.LogicalRouterPort) {
			r.ExternalIDs = map[string]string{"b": "2"}
			r.ExternalIDs["a"] = "1"
		},
		"a missing map for an empty one": func(r *nbdb.LogicalRouterPort) { r.Options = nil },
	}
	for name, change := range same {
		r := base()
		change(r)
		if !sameFields(fields(r), fields(base())) {
			t.Fatalf("%s: sameFields says the rows differ", name)
		}
		if got := fp(r); got != want {
			t.Errorf("%s: fingerprint changed", name)
		}
	}
	differ := map[string]func(r *nbdb.LogicalRouterPort){
		"external_ids value":    func(r *nbdb.LogicalRouterPort) { r.ExternalIDs["a"] = "2" },
		"external_ids key":      func(r *nbdb.LogicalRouterPort) { r.ExternalIDs = map[string]string{"a": "1", "c": "2"} },
		"key and value swapped": func(r *nbdb.LogicalRouterPort) { r.ExternalIDs = map[string]string{"1": "a", "b": "2"} },
		"mac":                   func(r *nbdb.LogicalRouterPort) { r.MAC = "0a:58:64:58:00:06" },
		"a network fewer":       func(r *nbdb.LogicalRouterPort) { r.Networks = r.Networks[:1] },
		"a network changed":     func(r *nbdb.LogicalRouterPort) { r.Networks[1] = "fd97::6/64" },
		"an option":             func(r *nbdb.LogicalRouterPort) { r.Options["requested-chassis"] = "n1" },
		"no peer":               func(r *nbdb.LogicalRouterPort) { r.Peer = nil },
		"an empty peer":         func(r *nbdb.LogicalRouterPort) { r.Peer = &empty },
		"the owner's ids":       func(r *nbdb.LogicalRouterPort) { r.ExternalIDs = shared },
		"values moved between columns": func(r *nbdb.LogicalRouterPort) {
			r.ExternalIDs, r.Ipv6RaConfigs = nil, r.ExternalIDs
		},
	}
	for name, change := range differ {
		r := base()
		change(r)
		if sameFields(fields(r), fields(base())) {
			t.Fatalf("%s: sameFields says the rows are equal", name)
		}
		if got := fp(r); got == want {
			t.Errorf("%s: fingerprint unchanged", name)
		}
	}
	// The owner's shared map and an equal map hash alike.
	a, b := base(), base()
	a.ExternalIDs, b.ExternalIDs = shared, map[string]string{"owner": "x"}
	if fp(a) != fp(b) {
		t.Error("the owner's shared external_ids and an equal map have different fingerprints")
	}
	// A column type fingerprint does not know: no fingerprint (always compared).
	if _, ok := fingerprint([]any{new(float64)}, shared, sharedFP); ok {
		t.Error("a fingerprint for an unknown column type")
	}
}

// A column's memo that holds a model the cache has replaced (an event on
// its way) is not trusted: the plan reads the column afresh, plans what
// the full read plans (here nothing) and forgets the memo, which the next
// plan builds again.
func TestColumnMemoBehindTheCacheIsReadAfresh(t *testing.T) {
	e := newEnv(t)
	d := func() *Desired {
		return &Desired{
			Owner: Owner{Network: "n", Topology: TopologyLayer2, Piece: PieceTransitRouter},
			Routers: []Router{{Row: nbdb.LogicalRouter{Name: "r"}, Routes: []nbdb.LogicalRouterStaticRoute{
				staticRoute("10.0.0.0/8", "10.1.1.1", "dst-ip", nil), staticRoute("10.2.0.0/16", "10.1.1.1", "dst-ip", nil)}}},
		}
	}
	e.apply(d()) // creates the router
	e.apply(d()) // its first plan of the router's routes
	e.apply(d()) // the second: builds the column's memo
	memo := e.c.memos.get(d().Owner)
	var ck colKey
	var cm *columnMemo
	for k, c := range memo.cols {
		if k.column == "static_routes" {
			ck, cm = k, c
		}
	}
	if cm == nil || len(cm.byKey) != 2 {
		t.Fatalf("no memo of the router's two routes: %+v", memo.cols)
	}
	var stale *colRow
	for _, r := range cm.byKey {
		stale = r
	}
	cached := *stale.m.(*nbdb.LogicalRouterStaticRoute)
	stale.m, stale.fp = &cached, 0 // equal content, not the cache's model
	p, err := e.c.newPlan(d())
	if err != nil {
		t.Fatal(err)
	}
	if len(p.ops) != 0 {
		t.Errorf("planned %d operations against an unchanged database", len(p.ops))
	}
	if memo.cols[ck] != nil {
		t.Fatal("the memo behind the cache was kept")
	}
	// The plan after next builds it again, from the cache's models (a
	// column is remembered from its second plan on).
	for i := range 2 {
		if p, err := e.c.newPlan(d()); err != nil || len(p.ops) != 0 {
			t.Fatalf("plan %d after: %v, %d operations", i+1, err, len(p.ops))
		}
		if i == 0 && memo.cols[ck] != nil && memo.cols[ck].seen != nil {
			t.Fatal("a column read once was remembered")
		}
	}
	rebuilt := memo.cols[ck]
	if rebuilt == nil {
		t.Fatal("no memo after the next plan")
	}
	if r := rebuilt.byKey[routeSpec.key(stale.m.(*nbdb.LogicalRouterStaticRoute))]; r == nil || r.m == stale.m {
		t.Errorf("the rebuilt memo holds %+v, not the cache's model", r)
	}
}

// A plan through a column's memo that takes children out of the column
// notes them gone, in UUID order, as the full read does: Apply waits until
// the cache shows them deleted, so the next plan finds nothing to do.
func TestColumnMemoRemovalsAreNotedGone(t *testing.T) {
	e := newEnv(t)
	routes := []nbdb.LogicalRouterStaticRoute{staticRoute("10.0.0.0/8", "10.1.1.1", "dst-ip", nil),
		staticRoute("10.2.0.0/16", "10.1.1.1", "dst-ip", nil), staticRoute("10.3.0.0/16", "10.1.1.1", "dst-ip", nil)}
	d := func(rs ...nbdb.LogicalRouterStaticRoute) *Desired {
		return &Desired{
			Owner:   Owner{Network: "n", Topology: TopologyLayer2, Piece: PieceTransitRouter},
			Routers: []Router{{Row: nbdb.LogicalRouter{Name: "r"}, Routes: rs}},
		}
	}
	for range 3 { // creates the router, reads its routes once, builds the memo
		e.apply(d(routes...))
	}
	memo := e.c.memos.get(d().Owner)
	hits := memo.colHits
	p, err := e.c.newPlan(d(routes[1]))
	if err != nil {
		t.Fatal(err)
	}
	if memo.colHits == hits {
		t.Fatal("the plan did not go through the column's memo")
	}
	var gone []string
	for _, r := range p.gone {
		if r.table == nbdb.LogicalRouterStaticRouteTable {
			gone = append(gone, r.uuid)
		}
	}
	var want []string
	for _, m := range e.c.NB.Cache().Table(nbdb.LogicalRouterStaticRouteTable).RowsShallow() {
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
	if p, err := e.c.newPlan(d(routes[1])); err != nil || len(p.ops) != 0 {
		t.Errorf("the next plan: %v, %d operations", err, len(p.ops))
	}
}
