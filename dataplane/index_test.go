package dataplane

import (
	"fmt"

	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// indexDiff says how the client's index differs from one built afresh from
// its cache ("" when it does not): the same models (by content) under the
// same UUIDs, and the same rows by network, name and parent.
func indexDiff(c *Client) string {
	// The children another client inserted are looked up (as a plan of
	// their network would).
	unlock := c.index.read(c.NB)
	unlinked := c.index.unlinked("")
	unlock()
	if len(unlinked) > 0 {
		if err := c.index.lookUp(c.NB, unlinked); err != nil {
			return err.Error()
		}
	}
	defer c.index.read(c.NB)()
	ix := c.index
	fresh := &rowIndex{}
	if err := fresh.rebuild(c.NB); err != nil {
		return err.Error()
	}
	var diffs []string
	for _, t := range indexedTables {
		got, want := ix.rows[t], fresh.rows[t]
		for u, w := range want {
			if g, ok := got[u]; !ok {
				diffs = append(diffs, fmt.Sprintf("%s %s missing", t, u))
			} else if !reflect.DeepEqual(g, w) {
				diffs = append(diffs, fmt.Sprintf("%s %s is %+v, the cache's %+v", t, u, g, w))
			}
		}
		for u := range got {
			if _, ok := want[u]; !ok {
				diffs = append(diffs, fmt.Sprintf("%s %s is not in the cache", t, u))
			}
		}
	}
	if !sameSets(ix.byNet, fresh.byNet) {
		diffs = append(diffs, fmt.Sprintf("by network: %v, afresh %v", ix.byNet, fresh.byNet))
	}
	if !sameSets(ix.byName, fresh.byName) {
		diffs = append(diffs, fmt.Sprintf("by name: %v, afresh %v", ix.byName, fresh.byName))
	}
	if !reflect.DeepEqual(ix.pieces, fresh.pieces) {
		diffs = append(diffs, fmt.Sprintf("pieces: %v, afresh %v", ix.pieces, fresh.pieces))
	}
	if !maps.EqualFunc(ix.parents, fresh.parents, func(a, b []string) bool {
		return len(a) == len(b) && !slices.ContainsFunc(a, func(u string) bool { return !slices.Contains(b, u) })
	}) {
		diffs = append(diffs, fmt.Sprintf("parents: %v, afresh %v", ix.parents, fresh.parents))
	}
	if !reflect.DeepEqual(nonEmptyKids(ix.kids), nonEmptyKids(fresh.kids)) {
		diffs = append(diffs, fmt.Sprintf("children: %v, afresh %v", ix.kids, fresh.kids))
	}
	// The sorted children plans read are the sets as they are now, and
	// none is kept for an empty set (a gone parent's would be a leak).
	for _, key := range slices.Collect(maps.Keys(ix.sorted)) {
		ix.children(key[0], key[1]) // applies the edits noted since
	}
	for key, s := range ix.sorted {
		if len(s) == 0 {
			diffs = append(diffs, fmt.Sprintf("sorted children of %s %s kept for an empty set", key[0], key[1]))
		}
		if want := slices.Sorted(maps.Keys(ix.kids[key[0]][key[1]])); !slices.Equal(s, want) {
			diffs = append(diffs, fmt.Sprintf("sorted children of %s %s: %v, the set %v", key[0], key[1], s, want))
		}
	}
	// The children with no known parent, kept as the index changes, are
	// those a scan of every child finds.
	loose := map[string]string{}
	for t := range parentColumns {
		for c := range ix.rows[t] {
			if _, looked := ix.unparented[c]; !looked && len(ix.parents[c]) == 0 {
				loose[c] = t
			}
		}
	}
	if !maps.Equal(ix.loose, loose) && len(ix.loose)+len(loose) > 0 {
		diffs = append(diffs, fmt.Sprintf("children with no known parent: %v, by a scan %v", ix.loose, loose))
	}
	// The parents holding each network's children, kept as the index
	// changes, are those a scan of every child finds.
	held := map[string]map[string]int{}
	for t := range parentColumns {
		for c, m := range ix.rows[t] {
			_, ids, _, _ := schema.RowFields(t, m)
			for _, p := range ix.parents[c] {
				if n := ids[ExternalIDNetwork]; n != "" {
					if held[n] == nil {
						held[n] = map[string]int{}
					}
					held[n][p]++
				}
			}
		}
	}
	if !reflect.DeepEqual(ix.netParents, held) && len(ix.netParents)+len(held) > 0 {
		diffs = append(diffs, fmt.Sprintf("parents holding each network's children: %v, by a scan %v", ix.netParents, held))
	}
	slices.Sort(diffs)
	return strings.Join(diffs, "\n")
}

// nonEmptyKids leaves out the empty sets and the maps left without one.
func nonEmptyKids(kids map[string]map[string]uuidSet) map[string]map[string]uuidSet {
	out := map[string]map[string]uuidSet{}
	for p, cols := range kids {
		for col, s := range cols {
			if len(s) > 0 {
				if out[p] == nil {
					out[p] = map[string]uuidSet{}
				}
				out[p][col] = s
			}
		}
	}
	return out
}

// sameSets compares two table → key → UUIDs maps, empty maps counting as missing.
func sameSets(a, b map[string]map[string]uuidSet) bool {
	return reflect.DeepEqual(nonEmptyKids(a), nonEmptyKids(b))
}

// waitIndexed waits until the client's index equals one built afresh from
// its cache (the events in flight are delivered).
func waitIndexed(t testing.TB, c *Client) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		diff := indexDiff(c)
		if diff == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the index differs from the cache:\n%s", diff)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The index follows the cache through Applies, another client's writes
// (a foreign router of the network, a port moved to it, an owned port's
// network changed, a port deleted), a server restart after rows were
// deleted while it was down (the cache is refilled: no events for them)
// and lost events; plans read from it stay the full diff's.
func TestIndexFollowsCache(t *testing.T) {
	e := newEnv(t)
	net, nodes := exampleV4()
	d := mustLayer2(t, net, nodes)
	e.apply(d)
	check := func(what string, changed bool) {
		t.Helper()
		e.settle() // waits until the index equals the cache, or fails
		fp, err := e.c.fullPlan(d)
		if err != nil {
			t.Fatal(err)
		}
		full := fp.ops
		p, err := e.c.newPlan(d)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := canonical(t, p.ops), canonical(t, full); got != want {
			t.Fatalf("%s: the plan differs from the full diff:\n%s\nwant:\n%s", what, got, want)
		}
		if changed && len(full) == 0 {
			t.Errorf("%s: nothing to plan", what)
		}
		e.apply(d)
	}
	check("applied", false)

	e.nbctl("lr-add", "foreign-router", "--", "set", "Logical_Router", "foreign-router",
		`external_ids:"`+ExternalIDNetwork+`"=`+net.Name)
	e.nbctl("--", "--id=@p", "create", "Logical_Router_Port", "name=foreign-port", "mac=00\\:00\\:00\\:00\\:00\\:01",
		"networks=10.9.9.1/24", `external_ids:"`+ExternalIDNetwork+`"=`+net.Name,
		"--", "add", "Logical_Router", "foreign-router", "ports", "@p")
	check("written by another client", false)
	e.nbctl("set", "Logical_Router_Port", "trtor-"+gr2, "mac=00\\:00\\:00\\:00\\:00\\:02")
	e.nbctl("set", "Logical_Router_Port", "foreign-port", `external_ids:"`+ExternalIDNetwork+`"=other`)
	e.nbctl("set", "Logical_Router", "foreign-router", "name=foreign-router2")
	e.nbctl("lrp-del", "trtor-"+gr3)
	check("changed by another client", true)

	// Rows go while the server is down: the restarted server's refill has
	// them no more, and no event says so.
	e.db.NB.Stop()
	run(t, "ovsdb-tool", "transact", e.db.NB.File(),
		`["OVN_Northbound",{"op":"update","table":"Logical_Router","where":[],"row":{"static_routes":["set",[]]}}]`)
	if err := e.db.NB.Restart(e.ctx); err != nil {
		t.Fatal(err)
	}
	if err := waitConnected(e.ctx, e.c.NB); err != nil {
		t.Fatal(err)
	}
	check("deleted while the server was down", true)

	// Lost events: the next read rebuilds the index.
	e.nbctl("lrp-del", "trtor-"+gr2)
	e.c.index.dropped()
	check("after lost events", true)
}

// libovsdb's log of a dropped event reaches the index through the logger.
func TestDropSinkTellsTheIndex(t *testing.T) {
	ix := &rowIndex{}
	for _, inner := range []logr.Logger{logr.Discard(), testr.New(t)} {
		ix.lost = false
		logger := logr.New(newDropSink(inner.GetSink(), ix.dropped)).WithName("cache").WithValues("db", "nb")
		logger.Info("something else")
		if ix.lost {
			t.Fatal("another message marked events lost")
		}
		logger.Info(droppedEvent)
		if !ix.lost {
			t.Errorf("the dropped event was not noticed (inner sink %T)", inner.GetSink())
		}
	}
}

// The index holds the cache's own models (not copies), so the rows take
// their memory once.
func TestIndexHoldsTheCachesModels(t *testing.T) {
	if !rowCacheLayout.ok {
		t.Fatal("libovsdb's RowCache has no longer its cache map and mutex: the index holds copies of every changed row")
	}
	e := newEnv(t)
	net, nodes := exampleV4()
	e.apply(mustLayer2(t, net, nodes))
	e.nbctl("lrp-del", "trtor-"+gr3)
	e.settle()
	defer e.c.index.read(e.c.NB)()
	n := 0
	for _, table := range indexedTables {
		for u, m := range e.c.NB.Cache().Table(table).RowsShallow() {
			if e.c.index.rows[table][u] != m {
				t.Errorf("%s %s: the index holds another model than the cache", table, u)
			}
			n++
		}
	}
	if n < 10 {
		t.Errorf("only %d rows compared", n)
	}
}

// A parent's kept sorted children follow every link change (into a new
// slice: a plan may still hold the old one), and nothing is kept once the
// set is empty.
func TestSortedChildrenFollowLinks(t *testing.T) {
	ix := &rowIndex{rows: map[string]map[string]model.Model{}}
	ix.setLinks(map[string]map[string]uuidSet{"r": {"ports": {"b": {}, "d": {}}}})
	first := ix.children("r", "ports")
	if !slices.Equal(first, []string{"b", "d"}) || cap(first) != len(first) {
		t.Fatalf("children = %v (cap %d), want [b d] with no spare capacity", first, cap(first))
	}
	steps := []struct {
		l    link
		want []string
	}{
		{link{parent: "r", column: "ports", child: "c", add: true}, []string{"b", "c", "d"}},
		{link{parent: "r", column: "ports", child: "a", add: true}, []string{"a", "b", "c", "d"}},
		{link{parent: "r", column: "ports", child: "a", add: true}, []string{"a", "b", "c", "d"}},
		{link{parent: "r", column: "ports", child: "c"}, []string{"a", "b", "d"}},
		{link{parent: "r", column: "ports", child: "z"}, []string{"a", "b", "d"}},
	}
	for _, st := range steps {
		ix.relate(st.l)
		if got := ix.children("r", "ports"); !slices.Equal(got, st.want) {
			t.Fatalf("after %+v: children = %v, want %v", st.l, got, st.want)
		}
	}
	if !slices.Equal(first, []string{"b", "d"}) {
		t.Errorf("a slice handed out before the changes changed: %v", first)
	}
	// Several changes between reads, some undoing others, are read at once.
	held := ix.children("r", "ports")
	for _, l := range []link{{child: "e", add: true}, {child: "f", add: true}, {child: "b"}, {child: "b", add: true},
		{child: "f"}, {child: "z"}, {child: "a"}, {child: "0", add: true}} {
		l.parent, l.column = "r", "ports"
		ix.relate(l)
	}
	if got := ix.children("r", "ports"); !slices.Equal(got, []string{"0", "b", "d", "e"}) || cap(got) != len(got) {
		t.Errorf("after a batch: children = %v (cap %d), want [0 b d e] with no spare capacity", got, cap(got))
	}
	if !slices.Equal(held, []string{"a", "b", "d"}) {
		t.Errorf("a slice handed out before the batch changed: %v", held)
	}
	// More changes than a sort of the set costs: the set is sorted anew.
	var want []string
	for i := range 200 {
		c := fmt.Sprintf("n%03d", i)
		ix.relate(link{parent: "r", column: "ports", child: c, add: true})
		want = append(want, c)
	}
	if got := ix.children("r", "ports"); !slices.Equal(got, append([]string{"0", "b", "d", "e"}, want...)) {
		t.Errorf("after 200 adds: children = %v", got)
	}
	ix.orphan(nbdb.LogicalRouterTable, "r")
	if got := ix.children("r", "ports"); got != nil {
		t.Errorf("children of a gone parent = %v", got)
	}
	if len(ix.sorted) != 0 || len(ix.edits) != 0 {
		t.Errorf("kept after the parent went: %v, %v", ix.sorted, ix.edits)
	}
}

// TestNetworkChildrenAndTheirParents follows one network's children through
// inserts, links, a change of network and deletes: unlinked(network) lists
// exactly its children without a known parent, and scan finds exactly the
// routers holding one of its children.
func TestNetworkChildrenAndTheirParents(t *testing.T) {
	ix := emptyIndex()
	port := func(uuid, network string) *nbdb.LogicalRouterPort {
		return &nbdb.LogicalRouterPort{UUID: uuid, ExternalIDs: map[string]string{ExternalIDNetwork: network}}
	}
	router := func(uuid string) *nbdb.LogicalRouter { return &nbdb.LogicalRouter{UUID: uuid, Name: uuid} }
	check := func(step string, unlinked []string, parents []string) {
		t.Helper()
		var got []string
		for _, r := range ix.unlinked("blue") {
			got = append(got, r.uuid)
		}
		if !slices.Equal(got, unlinked) {
			t.Errorf("%s: unlinked(blue) = %v, want %v", step, got, unlinked)
		}
		if got := ix.scan(nbdb.LogicalRouterTable, "blue", nil, true); !slices.Equal(got, parents) {
			t.Errorf("%s: routers holding blue's children = %v, want %v", step, got, parents)
		}
		if got := ix.scan(nbdb.LogicalRouterTable, "blue", nil, false); len(got) != 0 {
			t.Errorf("%s: without parents, scan = %v (no router is blue's)", step, got)
		}
	}
	ix.put(nbdb.LogicalRouterTable, "r1", router("r1"))
	ix.put(nbdb.LogicalRouterTable, "r2", router("r2"))
	ix.put(nbdb.LogicalRouterPortTable, "p1", port("p1", "blue"))
	ix.put(nbdb.LogicalRouterPortTable, "p2", port("p2", "blue"))
	ix.put(nbdb.LogicalRouterPortTable, "q1", port("q1", "red"))
	check("inserted", []string{"p1", "p2"}, nil)
	ix.relate(link{parent: "r1", column: "ports", child: "p1", add: true})
	ix.relate(link{parent: "r2", column: "ports", child: "q1", add: true})
	check("p1 in r1, red's q1 in r2", []string{"p2"}, []string{"r1"})
	ix.relate(link{parent: "r2", column: "ports", child: "p2", add: true})
	ix.relate(link{parent: "r2", column: "ports", child: "p2", add: true})
	check("p2 in r2 (twice)", nil, []string{"r1", "r2"})
	ix.put(nbdb.LogicalRouterPortTable, "p2", port("p2", "red"))
	check("p2 now red's", nil, []string{"r1"})
	ix.put(nbdb.LogicalRouterPortTable, "q1", port("q1", "blue"))
	check("q1 now blue's", nil, []string{"r1", "r2"})
	ix.relate(link{parent: "r1", column: "ports", child: "p1"})
	check("p1 out of r1", []string{"p1"}, []string{"r2"})
	ix.learn(rowEvent{unparented: []string{"p1"}})
	check("p1 looked up in vain", nil, []string{"r2"})
	ix.put(nbdb.LogicalRouterTable, "r2", nil)
	check("r2 deleted", []string{"q1"}, nil)
	ix.put(nbdb.LogicalRouterPortTable, "q1", nil)
	ix.put(nbdb.LogicalRouterPortTable, "p1", nil)
	ix.put(nbdb.LogicalRouterPortTable, "p2", nil)
	check("ports deleted", nil, nil)
	if len(ix.netParents) != 0 || len(ix.loose) != 0 {
		t.Errorf("left behind: parents %v, loose %v", ix.netParents, ix.loose)
	}
}

// Only the columns a memo follows log their changes: another column's,
// another router's and a row no followed column holds log nothing; a
// column's log keeps what a memo may apply and drops the rest; a deleted
// parent's, and every log when every link is replaced, are forgotten, so a
// memo that followed them is built again.
func TestColumnLogsOnlyWhatAMemoFollows(t *testing.T) {
	ix := emptyIndex()
	port := func(uuid, mac string) *nbdb.LogicalRouterPort {
		return &nbdb.LogicalRouterPort{UUID: uuid, MAC: mac, ExternalIDs: map[string]string{ExternalIDNetwork: "blue"}}
	}
	ix.put(nbdb.LogicalRouterTable, "r1", &nbdb.LogicalRouter{UUID: "r1", Name: "r1"})
	ix.put(nbdb.LogicalRouterTable, "r2", &nbdb.LogicalRouter{UUID: "r2", Name: "r2"})
	ports := colKey{"r1", "ports"}
	cl, seq := ix.follow(ports)
	if again, s := ix.follow(ports); again != cl || s != seq {
		t.Fatal("following a followed column started another log")
	}
	since := func(step string, want ...string) {
		t.Helper()
		got, _, ok := ix.changesSince(ports, cl, seq)
		if !ok || !slices.Equal(got, want) {
			t.Errorf("%s: changes = %v (ok %v), want %v", step, got, ok, want)
		}
	}
	ix.put(nbdb.LogicalRouterPortTable, "p1", port("p1", "a"))
	since("an unlinked port inserted")
	ix.relate(link{parent: "r1", column: "ports", child: "p1", add: true})
	since("p1 into r1", "p1")
	ix.put(nbdb.LogicalRouterPortTable, "q1", port("q1", "a"))
	ix.relate(link{parent: "r2", column: "ports", child: "q1", add: true})
	ix.put(nbdb.LogicalRouterPortTable, "q1", port("q1", "b"))
	ix.put(nbdb.LogicalRouterStaticRouteTable, "s1", &nbdb.LogicalRouterStaticRoute{UUID: "s1"})
	ix.relate(link{parent: "r1", column: "static_routes", child: "s1", add: true})
	since("r2's port and r1's route changed", "p1")
	if len(ix.follows) != 1 {
		t.Errorf("logs kept for %v, want only r1's ports", slices.Collect(maps.Keys(ix.follows)))
	}
	ix.put(nbdb.LogicalRouterPortTable, "p1", port("p1", "b"))
	since("p1 changed", "p1", "p1")
	_, end, _ := ix.changesSince(ports, cl, seq)
	// A one-port column keeps changedBound(1)+1 of its changes, at most
	// twice that.
	keep := changedBound(1) + 1
	for i := range 3 * keep {
		ix.put(nbdb.LogicalRouterPortTable, "p1", port("p1", fmt.Sprint(i)))
	}
	if n := len(cl.entries); n < keep || n >= 2*keep {
		t.Errorf("the log holds %d entries, want %d to %d", n, keep, 2*keep-1)
	}
	if _, _, ok := ix.changesSince(ports, cl, end); ok {
		t.Error("a memo further behind than the log keeps was answered")
	}
	if got, e, ok := ix.changesSince(ports, cl, cl.end()-1); !ok || len(got) != 1 || e != cl.end() {
		t.Errorf("the last change: %v, %d, %v", got, e, ok)
	}
	ix.put(nbdb.LogicalRouterTable, "r1", nil)
	if _, _, ok := ix.changesSince(ports, cl, cl.end()); ok || len(ix.follows) != 0 {
		t.Errorf("a deleted router's log is kept: %v", ix.follows)
	}
	cl2, _ := ix.follow(colKey{"r2", "ports"})
	ix.setLinks(nil)
	if _, _, ok := ix.changesSince(colKey{"r2", "ports"}, cl2, cl2.end()); ok || ix.follows != nil {
		t.Error("a log survived every link being replaced")
	}
}

// emptyIndex is an index of an empty database, fed by hand.
func emptyIndex() *rowIndex {
	ix := &rowIndex{rows: map[string]map[string]model.Model{}, byNet: map[string]map[string]uuidSet{},
		byName: map[string]map[string]uuidSet{}, pieces: map[string]map[[2]string]map[string]int{}}
	for _, tb := range indexedTables {
		ix.rows[tb] = map[string]model.Model{}
	}
	ix.setLinks(nil)
	return ix
}
