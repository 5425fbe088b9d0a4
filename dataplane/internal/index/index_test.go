package index

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/ovn-kubernetes/libovsdb/model"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/ovnk"
)

// testKeep is the change-log bound the tests' indexes keep.
func testKeep(children int) int { return children/4 + 64 }

// A parent's kept sorted children follow every Link change (into a new
// slice: a plan may still hold the old one), and nothing is kept once the
// set is empty.
func TestSortedChildrenFollowLinks(t *testing.T) {
	ix := &Index{keep: testKeep, rows: map[string]map[string]model.Model{}}
	ix.setLinks(map[string]map[string]uuidSet{"r": {"ports": {"b": {}, "d": {}}}})
	first := ix.children("r", "ports")
	if !slices.Equal(first, []string{"b", "d"}) || cap(first) != len(first) {
		t.Fatalf("children = %v (cap %d), want [b d] with no spare capacity", first, cap(first))
	}
	steps := []struct {
		l    Link
		want []string
	}{
		{Link{Parent: "r", Column: "ports", Child: "c", Add: true}, []string{"b", "c", "d"}},
		{Link{Parent: "r", Column: "ports", Child: "a", Add: true}, []string{"a", "b", "c", "d"}},
		{Link{Parent: "r", Column: "ports", Child: "a", Add: true}, []string{"a", "b", "c", "d"}},
		{Link{Parent: "r", Column: "ports", Child: "c"}, []string{"a", "b", "d"}},
		{Link{Parent: "r", Column: "ports", Child: "z"}, []string{"a", "b", "d"}},
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
	for _, l := range []Link{{Child: "e", Add: true}, {Child: "f", Add: true}, {Child: "b"}, {Child: "b", Add: true},
		{Child: "f"}, {Child: "z"}, {Child: "a"}, {Child: "0", Add: true}} {
		l.Parent, l.Column = "r", "ports"
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
		ix.relate(Link{Parent: "r", Column: "ports", Child: c, Add: true})
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
		return &nbdb.LogicalRouterPort{UUID: uuid, ExternalIDs: map[string]string{ovnk.ExternalIDNetwork: network}}
	}
	router := func(uuid string) *nbdb.LogicalRouter { return &nbdb.LogicalRouter{UUID: uuid, Name: uuid} }
	check := func(step string, unlinked []string, parents []string) {
		t.Helper()
		var got []string
		for _, r := range ix.Unlinked("blue") {
			got = append(got, r.UUID)
		}
		if !slices.Equal(got, unlinked) {
			t.Errorf("%s: unlinked(blue) = %v, want %v", step, got, unlinked)
		}
		if got := ix.Scan(nbdb.LogicalRouterTable, "blue", nil, true); !slices.Equal(got, parents) {
			t.Errorf("%s: routers holding blue's children = %v, want %v", step, got, parents)
		}
		if got := ix.Scan(nbdb.LogicalRouterTable, "blue", nil, false); len(got) != 0 {
			t.Errorf("%s: without parents, scan = %v (no router is blue's)", step, got)
		}
	}
	ix.put(nbdb.LogicalRouterTable, "r1", router("r1"))
	ix.put(nbdb.LogicalRouterTable, "r2", router("r2"))
	ix.put(nbdb.LogicalRouterPortTable, "p1", port("p1", "blue"))
	ix.put(nbdb.LogicalRouterPortTable, "p2", port("p2", "blue"))
	ix.put(nbdb.LogicalRouterPortTable, "q1", port("q1", "red"))
	check("inserted", []string{"p1", "p2"}, nil)
	ix.relate(Link{Parent: "r1", Column: "ports", Child: "p1", Add: true})
	ix.relate(Link{Parent: "r2", Column: "ports", Child: "q1", Add: true})
	check("p1 in r1, red's q1 in r2", []string{"p2"}, []string{"r1"})
	ix.relate(Link{Parent: "r2", Column: "ports", Child: "p2", Add: true})
	ix.relate(Link{Parent: "r2", Column: "ports", Child: "p2", Add: true})
	check("p2 in r2 (twice)", nil, []string{"r1", "r2"})
	ix.put(nbdb.LogicalRouterPortTable, "p2", port("p2", "red"))
	check("p2 now red's", nil, []string{"r1"})
	ix.put(nbdb.LogicalRouterPortTable, "q1", port("q1", "blue"))
	check("q1 now blue's", nil, []string{"r1", "r2"})
	ix.relate(Link{Parent: "r1", Column: "ports", Child: "p1"})
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
// parent's, and every log when every Link is replaced, are forgotten, so a
// memo that followed them is built again.
func TestColumnLogsOnlyWhatAMemoFollows(t *testing.T) {
	ix := emptyIndex()
	port := func(uuid, mac string) *nbdb.LogicalRouterPort {
		return &nbdb.LogicalRouterPort{UUID: uuid, MAC: mac, ExternalIDs: map[string]string{ovnk.ExternalIDNetwork: "blue"}}
	}
	ix.put(nbdb.LogicalRouterTable, "r1", &nbdb.LogicalRouter{UUID: "r1", Name: "r1"})
	ix.put(nbdb.LogicalRouterTable, "r2", &nbdb.LogicalRouter{UUID: "r2", Name: "r2"})
	ports := ColKey{"r1", "ports"}
	cl, seq := ix.Follow(ports)
	if again, s := ix.Follow(ports); again != cl || s != seq {
		t.Fatal("following a followed column started another log")
	}
	since := func(step string, want ...string) {
		t.Helper()
		got, _, ok := ix.ChangesSince(ports, cl, seq)
		if !ok || !slices.Equal(got, want) {
			t.Errorf("%s: changes = %v (ok %v), want %v", step, got, ok, want)
		}
	}
	ix.put(nbdb.LogicalRouterPortTable, "p1", port("p1", "a"))
	since("an unlinked port inserted")
	ix.relate(Link{Parent: "r1", Column: "ports", Child: "p1", Add: true})
	since("p1 into r1", "p1")
	ix.put(nbdb.LogicalRouterPortTable, "q1", port("q1", "a"))
	ix.relate(Link{Parent: "r2", Column: "ports", Child: "q1", Add: true})
	ix.put(nbdb.LogicalRouterPortTable, "q1", port("q1", "b"))
	ix.put(nbdb.LogicalRouterStaticRouteTable, "s1", &nbdb.LogicalRouterStaticRoute{UUID: "s1"})
	ix.relate(Link{Parent: "r1", Column: "static_routes", Child: "s1", Add: true})
	since("r2's port and r1's route changed", "p1")
	if len(ix.follows) != 1 {
		t.Errorf("logs kept for %v, want only r1's ports", slices.Collect(maps.Keys(ix.follows)))
	}
	ix.put(nbdb.LogicalRouterPortTable, "p1", port("p1", "b"))
	since("p1 changed", "p1", "p1")
	_, end, _ := ix.ChangesSince(ports, cl, seq)
	// A one-port column keeps testKeep(1)+1 of its changes, at most
	// twice that.
	keep := testKeep(1) + 1
	for i := range 3 * keep {
		ix.put(nbdb.LogicalRouterPortTable, "p1", port("p1", fmt.Sprint(i)))
	}
	if n := len(cl.entries); n < keep || n >= 2*keep {
		t.Errorf("the log holds %d entries, want %d to %d", n, keep, 2*keep-1)
	}
	if _, _, ok := ix.ChangesSince(ports, cl, end); ok {
		t.Error("a memo further behind than the log keeps was answered")
	}
	if got, e, ok := ix.ChangesSince(ports, cl, cl.end()-1); !ok || len(got) != 1 || e != cl.end() {
		t.Errorf("the last change: %v, %d, %v", got, e, ok)
	}
	ix.put(nbdb.LogicalRouterTable, "r1", nil)
	if _, _, ok := ix.ChangesSince(ports, cl, cl.end()); ok || len(ix.follows) != 0 {
		t.Errorf("a deleted router's log is kept: %v", ix.follows)
	}
	cl2, _ := ix.Follow(ColKey{Parent: "r2", Column: "ports"})
	ix.setLinks(nil)
	if _, _, ok := ix.ChangesSince(ColKey{Parent: "r2", Column: "ports"}, cl2, cl2.end()); ok || ix.follows != nil {
		t.Error("a log survived every Link being replaced")
	}
}

// emptyIndex is an index of an empty database, fed by hand.
func emptyIndex() *Index {
	ix := &Index{keep: testKeep, rows: map[string]map[string]model.Model{}, byNet: map[string]map[string]uuidSet{},
		byName: map[string]map[string]uuidSet{}, pieces: map[string]map[[2]string]map[string]int{}}
	for _, tb := range tables {
		ix.rows[tb] = map[string]model.Model{}
	}
	ix.setLinks(nil)
	return ix
}
