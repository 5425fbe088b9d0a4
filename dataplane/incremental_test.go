package dataplane

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// incrState is one random desired state of a Layer2 network and of a Layer3
// network's subnet policies.
type incrState struct {
	nodes     []int // node numbers 2..8 besides the local node1
	mtu       int
	v6        bool
	masq      bool
	services  bool
	nodeIPs   int // node IPs of the local node
	l3Subnets []int
	// rechassised: the local node has another chassis (its trtos- port's
	// gateway chassis changes).
	rechassised bool
}

const incrNet, incrL3 = "incr_net", "incr_l3"

var incrL3Pool = []netip.Prefix{pfx("10.1.0.0/16"), pfx("10.2.0.0/16"), pfx("10.3.0.0/16"), pfx("fd01::/64"), pfx("fd02::/64")}

func randomIncrState(r *rand.Rand) incrState {
	s := incrState{mtu: []int{0, 1400, 9000}[r.IntN(3)], v6: r.IntN(2) == 0, masq: r.IntN(3) > 0,
		services: r.IntN(2) == 0, nodeIPs: r.IntN(3)}
	for n := 2; n <= 8; n++ {
		if r.IntN(10) < 6 {
			s.nodes = append(s.nodes, n)
		}
	}
	for i := range incrL3Pool {
		if r.IntN(2) == 0 || (i == len(incrL3Pool)-1 && len(s.l3Subnets) == 0) {
			s.l3Subnets = append(s.l3Subnets, i)
		}
	}
	s.rechassised = r.IntN(3) == 0
	return s
}

// desired computes the state's two pieces afresh (planning writes into them).
func (s incrState) desired(t testing.TB) []*rows.Desired {
	t.Helper()
	net := topology.Layer2Network{
		Name: incrNet, Subnets: []netip.Prefix{pfx("10.128.0.0/16")},
		JoinSubnets:     []netip.Prefix{pfx("100.65.0.0/16"), pfx("fd99::/64")},
		SwitchTunnelKey: 16711685, TransitRouterTunnelKey: 16715780, MTU: s.mtu,
	}
	if s.v6 {
		net.Subnets = append(net.Subnets, pfx("fd10::/64"))
	}
	if s.masq {
		net.MasqueradeIPs = []netip.Addr{addr("169.254.0.12")}
	}
	if s.services {
		net.Services = apiAndDNS()
	}
	local := topology.Layer2Node{Name: "node1", Chassis: chassisOf("node1"), ID: 2, Local: true, TopologyVersion: ovnk.Layer2TopologyVersionTransitRouter}
	if s.rechassised {
		local.Chassis = "7c0ffee0-node1"
	}
	for i := range s.nodeIPs {
		local.NodeIPs = append(local.NodeIPs, netip.AddrFrom4([4]byte{192, 168, 0, byte(10 + i)}))
	}
	nodes := []topology.Layer2Node{local}
	for _, n := range s.nodes {
		nodes = append(nodes, topology.Layer2Node{Name: "node" + strconv.Itoa(n), Chassis: chassisOf("node" + strconv.Itoa(n)), ID: n + 1, TopologyVersion: ovnk.Layer2TopologyVersionTransitRouter})
	}
	var subnets []netip.Prefix
	for _, i := range s.l3Subnets {
		subnets = append(subnets, incrL3Pool[i])
	}
	l3, err := topology.Layer3SubnetPolicies(incrL3, subnets)
	if err != nil {
		t.Fatal(err)
	}
	return []*rows.Desired{mustLayer2(t, net, nodes), l3}
}

// canonical renders operations for comparison: OVSDB maps and sets are
// unordered, so their elements are sorted.
func canonical(t testing.TB, ops []ovsdb.Operation) string {
	t.Helper()
	raw, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var sortSets func(any) any
	sortSets = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = sortSets(e)
			}
		case []any:
			for i, e := range x {
				x[i] = sortSets(e)
			}
			if len(x) == 2 && (x[0] == "map" || x[0] == "set") {
				if elems, ok := x[1].([]any); ok {
					slices.SortFunc(elems, func(a, b any) int {
						ja, _ := json.Marshal(a)
						jb, _ := json.Marshal(b)
						return strings.Compare(string(ja), string(jb))
					})
				}
			}
		}
		return v
	}
	out, err := json.MarshalIndent(sortSets(v), "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// The planner remembers the keys and ownership of cached rows between
// Applies. Over random desired-state edits, random changes another client
// makes to the owned rows (deleting them, changing a column that is part of
// their identity, a managed column or their ownership, adding duplicates and
// foreign rows) and server restarts (the cache is refilled), every Apply's
// plan is the full diff's, operation for operation, and leaves the database
// so that a fresh client's plan is empty while foreign rows stay.
func TestIncrementalPlanEqualsFullDiff(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run("seed"+strconv.FormatUint(seed, 10), func(t *testing.T) {
			testIncrementalPlan(t, rand.New(rand.NewPCG(seed, 5094)))
		})
	}
}

func testIncrementalPlan(t *testing.T, r *rand.Rand) {
	e := newEnv(t)
	names := ovnk.NamesFor(incrNet)
	hits, colHits, fpHits, foreign, changes := 0, 0, 0, 0, 0
	var deck []int // the kinds of change still to make, shuffled
	done := map[int]bool{}
	for step := range 20 {
		state := randomIncrState(r)
		if step > 0 {
			for range r.IntN(4) {
				changes++
				if len(deck) == 0 {
					deck = r.Perm(modifyKinds)
				}
				kind := deck[0]
				deck = deck[1:]
				what := e.modifyOwnedRow(r, changes, kind)
				if what == "" {
					deck = append(deck, kind) // no row to change now: later
					continue
				}
				done[kind] = true
				t.Logf("step %d: another client %s", step, what)
				foreign += strings.Count(what, "foreign")
			}
			if r.IntN(8) == 0 {
				t.Logf("step %d: the server restarts", step)
				if err := e.db.NB.Restart(e.ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
		// A foreign marker row, written last: once the cache has it, it has
		// every change written before it.
		e.nbctl("ls-add", "marker-"+strconv.Itoa(step))
		e.settle()

		for i, d := range state.desired(t) {
			fp, err := e.c.eng.FullPlan(d)
			if err != nil {
				t.Fatalf("step %d: full plan: %v", step, err)
			}
			full := fp.Ops
			incr := state.desired(t)[i]
			p, err := e.c.eng.NewPlan(incr)
			if err != nil {
				t.Fatalf("step %d: incremental plan: %v", step, err)
			}
			hits += p.Memo().Hits
			colHits += p.Memo().ColHits
			fpHits += p.Memo().FPHits
			if got, want := canonical(t, p.Ops), canonical(t, full); got != want {
				t.Fatalf("step %d, %s: the incremental plan differs from the full diff:\n%s\nwant:\n%s", step, d.Owner.Network, got, want)
			}
			res, err := e.c.Apply(e.ctx, state.desired(t)[i])
			if err != nil {
				t.Fatalf("step %d: apply: %v", step, err)
			}
			// A split plan sends a parent's mutation once per transaction.
			if res.Transactions == 1 && res.Operations != len(full) {
				t.Errorf("step %d, %s: apply sent %d operations, the full diff has %d", step, d.Owner.Network, res.Operations, len(full))
			}
		}

		fresh, err := NewClient(e.ctx, e.db.NB.Address(), e.db.SB.Address())
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range state.desired(t) {
			if ops, err := fresh.eng.Plan(d); err != nil || len(ops) != 0 {
				t.Errorf("step %d, %s: a fresh client plans %d operations (%v) after the apply:\n%s", step, d.Owner.Network, len(ops), err, canonical(t, ops))
			}
		}
		fresh.Close()
		if got := strings.Count(e.nbctl("lr-route-list", names.TransitRouter()), "198.51.100."); got != foreign {
			t.Errorf("step %d: %d foreign routes on the transit router, want %d", step, got, foreign)
		}
		if got := strings.Count(e.nbctl("ls-list"), "(marker-"); got != step+1 {
			t.Errorf("step %d: %d foreign marker switches left, want %d", step, got, step+1)
		}
	}
	if hits == 0 {
		t.Error("no plan used the remembered keys: the incremental path was not exercised")
	}
	if colHits == 0 {
		t.Error("no plan brought a remembered column up to date: the column memo was not exercised")
	}
	if fpHits == 0 {
		t.Error("no desired row matched a remembered fingerprint: the comparisons were never skipped")
	}
	// The networks go away: their rows and their memos. (A shared router
	// udnkit created stays while it holds a foreign row, e.g. a route given
	// to another piece: the full diff keeps it too.)
	deleted := randomIncrState(r).desired(t)
	for _, d := range deleted {
		e.apply(&rows.Desired{Owner: d.Owner})
	}
	fresh, err := NewClient(e.ctx, e.db.NB.Address(), e.db.SB.Address())
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	for _, d := range deleted {
		for _, table := range []string{"Logical_Router_Port", "Logical_Router_Static_Route", "Logical_Router_Policy", "Address_Set"} {
			if got := e.nbctl("--bare", "--columns=_uuid", "find", table,
				fmt.Sprintf(`external_ids:"%s"=%s`, ovnk.ExternalIDPiece, d.Owner.Piece)); got != "" {
				t.Errorf("%s rows of %s left after its deletion: %s", table, d.Owner.Network, got)
			}
		}
		if ops, err := fresh.eng.Plan(&rows.Desired{Owner: d.Owner}); err != nil || len(ops) != 0 {
			t.Errorf("%s: a fresh client plans %d operations (%v) after the deletion", d.Owner.Network, len(ops), err)
		}
	}
	if n := e.c.eng.Memos.Len(); n != 0 {
		t.Errorf("%d memos left after the networks' deletion", n)
	}
	if len(done) != modifyKinds {
		t.Errorf("only %d of the %d kinds of change were made", len(done), modifyKinds)
	}
}

const modifyKinds = 11

// modifyOwnedRow makes one change of a kind (0..modifyKinds-1) to a random
// row udnkit owns (or adds a foreign row), as another client would, and says
// what it did ("" when there was no row to change);
// n numbers the change, to make the values it writes unique.
func (e *env) modifyOwnedRow(r *rand.Rand, n int, kind int) string {
	e.t.Helper()
	tr := ovnk.NamesFor(incrNet).TransitRouter()
	// owned lists the UUIDs of a network's rows ordered by their content
	// (not by their UUIDs, which differ from run to run), so that a seed
	// picks the same rows every run.
	content := map[string]string{"Logical_Router_Static_Route": "ip_prefix,nexthop,output_port,external_ids",
		"Logical_Router_Port": "name", "Logical_Router_Policy": "priority,match", "Address_Set": "name"}
	owned := func(table, network string) []string {
		var rows [][2]string
		for _, line := range lines(e.nbctl("--format=csv", "--no-headings", "--columns=_uuid,"+content[table], "find", table,
			fmt.Sprintf(`external_ids:"%s"=%s`, ovnk.ExternalIDNetwork, network))) {
			uuid, rest, _ := strings.Cut(line, ",")
			rows = append(rows, [2]string{rest, uuid})
		}
		slices.SortFunc(rows, func(a, b [2]string) int { return strings.Compare(a[0]+a[1], b[0]+b[1]) })
		out := make([]string, len(rows))
		for i, row := range rows {
			out[i] = row[1]
		}
		return out
	}
	pick := func(table, network string) string {
		rows := owned(table, network)
		if len(rows) == 0 {
			return ""
		}
		return rows[r.IntN(len(rows))]
	}
	switch kind {
	case 0:
		if u := pick("Logical_Router_Static_Route", incrNet); u != "" {
			e.nbctl("remove", "Logical_Router", tr, "static_routes", u)
			return "removed route " + u + " from the transit router"
		}
	case 1:
		if u := pick("Logical_Router_Static_Route", incrNet); u != "" {
			e.nbctl("set", "Logical_Router_Static_Route", u, "nexthop=192.0.2."+strconv.Itoa(n))
			return "changed the nexthop (identity) of route " + u
		}
	case 2:
		if u := pick("Logical_Router_Static_Route", incrNet); u != "" {
			e.nbctl("set", "Logical_Router_Static_Route", u, "options:ecmp_symmetric_reply=true")
			return "set options on route " + u
		}
	case 3:
		if u := pick("Logical_Router_Static_Route", incrNet); u != "" {
			e.nbctl("set", "Logical_Router_Static_Route", u, fmt.Sprintf(`external_ids:"%s"=other`, ovnk.ExternalIDPiece))
			return "gave route " + u + " to another piece"
		}
	case 4:
		if u := pick("Logical_Router_Port", incrNet); u != "" {
			e.nbctl("set", "Logical_Router_Port", u, `mac="02:00:00:00:00:`+fmt.Sprintf("%02x", n)+`"`)
			return "changed the mac of port " + u
		}
	case 5:
		if u := pick("Logical_Router_Port", incrNet); u != "" {
			name := e.nbctl("--bare", "--columns=name", "list", "Logical_Router_Port", u)
			e.nbctl("lrp-del", name)
			return "deleted port " + name
		}
	case 6:
		rows := owned("Logical_Router_Static_Route", incrNet)
		if len(rows) == 0 {
			return ""
		}
		u := rows[r.IntN(len(rows))]
		get := func(col string) string {
			return e.nbctl("--bare", "--columns="+col, "list", "Logical_Router_Static_Route", u)
		}
		e.nbctl("--", "--id=@r", "create", "Logical_Router_Static_Route",
			"ip_prefix="+strconv.Quote(get("ip_prefix")), "nexthop="+strconv.Quote(get("nexthop")), "policy="+orEmptySet(get("policy")),
			`external_ids:"`+ovnk.ExternalIDNetwork+`"=`+incrNet, `external_ids:"`+ovnk.ExternalIDTopology+`"=`+base.TopologyLayer2,
			`external_ids:"`+ovnk.ExternalIDPiece+`"=`+base.PieceTransitRouter, "--", "add", "Logical_Router", tr, "static_routes", "@r")
		return "added a duplicate of route " + u
	case 7:
		e.nbctl("lr-route-add", tr, "198.51.100."+strconv.Itoa(n)+"/32", "100.88.0.99")
		return "added a foreign route"
	case 8:
		if u := pick("Address_Set", incrL3); u != "" {
			e.nbctl("set", "Address_Set", u, `addresses="192.0.2.0/24"`)
			return "rewrote the addresses of address set " + u
		}
	case 9:
		if u := pick("Logical_Router_Policy", incrL3); u != "" {
			e.nbctl("remove", "Logical_Router", ovnk.NamesFor(incrL3).ClusterRouter(), "policies", u)
			return "removed policy " + u
		}
	case 10:
		e.nbctl("set", "Logical_Router", tr, "options:requested-tnl-key=7")
		return "changed the transit router's tunnel key"
	}
	return ""
}

// orEmptySet is an optional column's value for ovn-nbctl create: "[]" when empty.
func orEmptySet(v string) string {
	if v == "" {
		return "[]"
	}
	return v
}
