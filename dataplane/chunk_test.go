package dataplane

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/txn"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/dataplane/topology/base"
)

// chunkNodes are 20 nodes, the first three local (with a gateway router and
// its rtotr- port peered with the transit router's trtor- port).
func chunkNodes(n int) []topology.Layer2Node {
	nodes := manyNodes(n)
	for i := range nodes {
		nodes[i].Local = i < 3
	}
	return nodes
}

// dump is the network's rows as ovn-nbctl shows them, without UUIDs: the
// routers' and switches' children by name and value.
func dump(e *env) string {
	e.t.Helper()
	var b strings.Builder
	for _, table := range []struct{ name, cols string }{
		{"Logical_Router", "name,options,external_ids"},
		{"Logical_Switch", "name,other_config,external_ids"},
		{"Logical_Router_Port", "name,mac,networks,peer,options,external_ids"},
		{"Logical_Switch_Port", "name,type,addresses,options,external_ids"},
		{"Logical_Router_Static_Route", "ip_prefix,nexthop,policy,output_port,external_ids"},
		{"Logical_Router_Policy", "priority,match,action,nexthops,external_ids"},
		{"NAT", "type,logical_ip,external_ip,logical_port,external_ids"},
		{"Gateway_Chassis", "name,chassis_name,priority,external_ids"},
	} {
		b.WriteString(table.name + ":\n")
		out := e.nbctl("--format=csv", "--data=bare", "--no-headings", "--columns="+table.cols, "list", table.name)
		b.WriteString(strings.Join(lines(out), "\n") + "\n")
	}
	// Which router holds which ports and routes.
	for _, r := range lines(e.nbctl("--data=bare", "--no-headings", "--columns=name", "list", "Logical_Router")) {
		b.WriteString(r + " ports: " + portNames(e.nbctl("lrp-list", r)) + "\n")
		b.WriteString(r + " routes: " + strings.Join(lines(e.nbctl("lr-route-list", r)), ",") + "\n")
	}
	// Which port holds which gateway chassis.
	for _, p := range lines(e.nbctl("--data=bare", "--no-headings", "--columns=name", "list", "Logical_Router_Port")) {
		if gcs := lines(e.nbctl("lrp-get-gateway-chassis", p)); len(gcs) > 0 {
			b.WriteString(p + " gateway chassis: " + strings.Join(gcs, ",") + "\n")
		}
	}
	return b.String()
}

// portNames lists the names in lrp-list's "UUID (name)" lines, sorted.
func portNames(out string) string {
	var names []string
	for _, l := range lines(out) {
		if i := strings.Index(l, " ("); i >= 0 {
			l = strings.TrimSuffix(l[i+2:], ")")
		}
		names = append(names, l)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// wholeNodes fails unless every node of the database is whole: a trtor-
// port has its two join routes (next hops within its networks) and, for a
// local node, its peer rtotr- port; no route's next hop or output port, and
// no port's peer, is missing.
func wholeNodes(t *testing.T, e *env, when string) (nodes int) {
	t.Helper()
	ports := map[string][]netip.Prefix{}
	peers := map[string]string{}
	for _, l := range lines(e.nbctl("--format=csv", "--data=bare", "--no-headings", "--columns=name,networks,peer", "list", "Logical_Router_Port")) {
		f := strings.Split(l, ",")
		for _, n := range strings.Fields(f[1]) {
			ports[f[0]] = append(ports[f[0]], netip.MustParsePrefix(n).Masked())
		}
		if f[2] != "" {
			peers[f[0]] = f[2]
		}
	}
	for p, peer := range peers {
		if _, ok := ports[peer]; !ok {
			t.Errorf("%s: port %s peers with missing %s", when, p, peer)
		}
	}
	routes := map[string]int{}
	for _, l := range lines(e.nbctl("--format=csv", "--data=bare", "--no-headings", "--columns=nexthop,output_port", "list", "Logical_Router_Static_Route")) {
		f := strings.Split(l, ",")
		if f[1] != "" {
			if _, ok := ports[f[1]]; !ok {
				t.Errorf("%s: a route's output port %s is missing", when, f[1])
			}
		}
		nh := netip.MustParseAddr(f[0])
		found := false
		for name, nets := range ports {
			for _, n := range nets {
				if n.Bits() >= 31 && n.Contains(nh) && strings.HasPrefix(name, "trtor-") {
					routes[name]++
					found = true
				}
			}
		}
		if !found && (strings.HasPrefix(f[0], "100.88.") || strings.HasPrefix(f[0], "fd97:")) {
			t.Errorf("%s: route via %s has no transit router port", when, f[0])
		}
	}
	for name := range ports {
		if !strings.HasPrefix(name, "trtor-") {
			continue
		}
		nodes++
		// Two join routes; a local node also has two source routes and its
		// gateway router's two routes back through the port.
		if n := routes[name]; n != 2 && n != 6 {
			t.Errorf("%s: port %s has %d routes, want 2 (or 6 for a local node)", when, name, n)
		}
	}
	return nodes
}

// TestLargeApplyIsSplitIntoWholeNodeTransactions applies a 20-node network
// in transactions of at most 8 operations: after every transaction each
// node in the database is whole, and the final rows are exactly those one
// transaction writes.
func TestLargeApplyIsSplitIntoWholeNodeTransactions(t *testing.T) {
	d := mustLayer2(t, benchNetwork(), chunkNodes(20))

	ref := newEnv(t)
	ref.c.eng.MaxTransactionOps = -1
	res, err := ref.c.Apply(ref.ctx, d)
	if err != nil || res.Transactions != 1 {
		t.Fatalf("one transaction: %+v, %v", res, err)
	}
	want := dump(ref)

	e := newEnv(t)
	e.c.eng.MaxTransactionOps = 8
	seen := 0
	e.hooks.AfterTransaction = func(_ rows.Owner, k, n int) {
		seen = k
		wholeNodes(t, e, "after transaction "+strconv.Itoa(k))
	}
	res, err = e.c.Apply(e.ctx, mustLayer2(t, benchNetwork(), chunkNodes(20)))
	if err != nil {
		t.Fatal(err)
	}
	if res.Transactions < 5 || seen != res.Transactions {
		t.Fatalf("want several transactions, got %+v (hook saw %d)", res, seen)
	}
	if got := dump(e); got != want {
		t.Fatalf("split apply wrote other rows than one transaction:\n got:\n%s\nwant:\n%s", got, want)
	}
	if n := wholeNodes(t, e, "at the end"); n != 20 {
		t.Fatalf("%d nodes, want 20", n)
	}
	if ops, _ := e.c.eng.Plan(mustLayer2(t, benchNetwork(), chunkNodes(20))); len(ops) != 0 {
		t.Fatalf("a fresh plan has %d operations", len(ops))
	}
}

// TestInterruptedSplitApplyConverges cancels an Apply's context after its
// second transaction carrying nodes (growing from nothing, the first
// inserts the zone's COPP), growing, shrinking and removing a network: the Apply
// fails, the database holds whole nodes only, and the next Apply converges
// to exactly the desired rows (those one transaction writes).
func TestInterruptedSplitApplyConverges(t *testing.T) {
	for _, tc := range []struct {
		name       string
		from, to   int
		cancelAt   int
		wantBefore func(n int) bool
	}{
		{"grow from nothing", 0, 20, 3, func(n int) bool { return n > 0 && n < 20 }},
		{"shrink", 20, 5, 2, func(n int) bool { return n > 5 && n < 20 }},
		{"remove the network", 20, 0, 2, func(n int) bool { return n > 0 && n < 20 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			desired := func() *rows.Desired {
				if tc.to == 0 {
					return &rows.Desired{Owner: mustLayer2(t, benchNetwork(), nil).Owner}
				}
				return mustLayer2(t, benchNetwork(), chunkNodes(tc.to))
			}
			ref := newEnv(t)
			ref.c.eng.MaxTransactionOps = -1
			ref.apply(desired())
			want := dump(ref)

			e := newEnv(t)
			e.c.eng.MaxTransactionOps = 8
			if tc.from > 0 {
				e.apply(mustLayer2(t, benchNetwork(), chunkNodes(tc.from)))
			}
			ctx, cancel := context.WithCancel(e.ctx)
			defer cancel()
			e.hooks.AfterTransaction = func(_ rows.Owner, k, _ int) {
				if k == tc.cancelAt {
					cancel()
				}
			}
			res, err := e.c.Apply(ctx, desired())
			if !errors.Is(err, context.Canceled) || res.Transactions != tc.cancelAt {
				t.Fatalf("interrupted apply: %+v, %v; want %d transactions and context.Canceled", res, err, tc.cancelAt)
			}
			if n := wholeNodes(t, e, "after the interruption"); !tc.wantBefore(n) {
				t.Fatalf("after the interruption: %d nodes", n)
			}
			e.hooks.AfterTransaction = nil
			e.apply(desired())
			if got := dump(e); got != want {
				t.Fatalf("after the next apply:\n got:\n%s\nwant:\n%s", got, want)
			}
			if ops, _ := e.c.eng.Plan(desired()); len(ops) != 0 {
				t.Fatalf("a fresh plan has %d operations", len(ops))
			}
		})
	}
}

// TestSplitApplyRefusesBeforeItsFirstTransaction: bad input and an
// ownership refusal are found before anything is sent, however large the
// plan: the database is unchanged.
func TestSplitApplyRefusesBeforeItsFirstTransaction(t *testing.T) {
	e := newEnv(t)
	e.c.eng.MaxTransactionOps = 8
	// Another component's switch with the network's switch name.
	e.nbctl("ls-add", "bench_net_ovn_layer2_switch")
	e.settle()
	before := dump(e)
	sent := 0
	e.hooks.AfterTransaction = func(rows.Owner, int, int) { sent++ }

	if _, err := e.c.Apply(e.ctx, mustLayer2(t, benchNetwork(), chunkNodes(20))); err == nil ||
		!strings.Contains(err.Error(), "not owned") {
		t.Fatalf("want an ownership refusal, got %v", err)
	}
	bad := mustLayer2(t, benchNetwork(), chunkNodes(20))
	bad.Routers[0].Ports = append(bad.Routers[0].Ports, bad.Routers[0].Ports[0])
	if _, err := e.c.Apply(e.ctx, bad); err == nil || !strings.Contains(err.Error(), "appears twice") {
		t.Fatalf("want a validation error, got %v", err)
	}
	if sent != 0 {
		t.Fatalf("%d transactions sent", sent)
	}
	if after := dump(e); after != before {
		t.Fatalf("the database changed:\n%s\nwas:\n%s", after, before)
	}
}

// TestSplitApplyLetsOneTransactionApplyGoFirst: an Apply of one transaction
// that is under way when a split Apply has committed a transaction
// completes before the split Apply sends its next one, even when it sends
// its own transaction after the split one could have sent its next.
func TestSplitApplyLetsOneTransactionApplyGoFirst(t *testing.T) {
	e := newEnv(t)
	// The small Apply, once planned, sends its transaction only when the
	// split one waits for it (or, were it not to wait, when the split one
	// has committed its second transaction: then the check below fails).
	small, planned, release := heldOneTransactionApply(e)
	done := make(chan error, 1)
	order := []string{}
	e.hooks.AfterTransaction = func(o rows.Owner, k, n int) {
		if o.Network != benchNetwork().Name {
			return
		}
		if k == 1 {
			go func() { done <- applyOnce(e, small) }()
			<-planned
			return
		}
		if k == 2 {
			defer release()
			ports := e.rows("Logical_Router_Port")
			_, ok := ports["small_net_port"]
			order = append(order, fmt.Sprintf("small committed before transaction 2: %v", ok))
		}
	}
	e.apply(mustLayer2(t, benchNetwork(), chunkNodes(20)))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(order) != 1 || order[0] != "small committed before transaction 2: true" {
		t.Fatalf("order: %v", order)
	}
}

// TestSplitApplyLetsOneTransactionApplyGoFirstBeforeItsFirst: an Apply of
// one transaction that is under way when a split Apply has planned (it
// started while the split one planned) completes before the split Apply
// sends its first transaction, not only before its later ones.
func TestSplitApplyLetsOneTransactionApplyGoFirstBeforeItsFirst(t *testing.T) {
	e := newEnv(t)
	// The small Apply, once planned, sends its transaction only when the
	// split one waits for it or, were it not to wait, when the split one
	// has committed its first transaction: then the check below fails.
	small, planned, release := heldOneTransactionApply(e)
	var order []string
	e.hooks.AfterTransaction = func(o rows.Owner, k, n int) {
		if o.Network != benchNetwork().Name || k != 1 {
			return
		}
		defer release()
		_, ok := e.rows("Logical_Router_Port")["small_net_port"]
		order = append(order, fmt.Sprintf("small committed before transaction 1: %v", ok))
	}
	done := make(chan error, 1)
	go func() { done <- applyOnce(e, small) }()
	<-planned
	e.apply(mustLayer2(t, benchNetwork(), chunkNodes(20)))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(order) != 1 || order[0] != "small committed before transaction 1: true" {
		t.Fatalf("order: %v", order)
	}
}

// heldOneTransactionApply prepares the split-Apply ordering tests (whose
// split Apply sends transactions of at most 8 operations and waits for
// others as long as it takes): a small network whose Apply, once planned,
// closes planned and sends its one transaction only when release is
// called, which the split Apply's yield does when it starts waiting.
func heldOneTransactionApply(e *env) (small *rows.Desired, planned <-chan struct{}, release func()) {
	e.c.eng.MaxTransactionOps = 8
	e.hooks.YieldAtMost = time.Minute // only the order matters here
	small = &rows.Desired{Owner: rows.Owner{Network: "small_net", Topology: base.TopologyLayer2, Piece: base.PieceTransitRouter},
		Routers: []rows.Router{{Row: nbdb.LogicalRouter{Name: "small_net_router"},
			Ports: []nbdb.LogicalRouterPort{{Name: "small_net_port", MAC: "0a:58:0a:00:00:01", Networks: []string{"10.0.0.1/24"}}}}}}
	p, send := make(chan struct{}), make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(send) }) }
	e.hooks.BeforeTransact = func(o rows.Owner) {
		if o.Network == small.Owner.Network {
			close(p)
			<-send
		}
	}
	e.hooks.YieldWaits = release
	return small, p, release
}

// applyOnce applies d and fails unless it took one transaction.
func applyOnce(e *env, d *rows.Desired) error {
	res, err := e.c.Apply(e.ctx, d)
	if err == nil && res.Transactions != 1 {
		err = fmt.Errorf("the small Apply was split: %+v", res)
	}
	return err
}

// A plan that fits the bound is one transaction, exactly as planned; a
// larger one goes in transactions of at most two thirds of it, so an
// unrelated Apply waits behind less of it.
func TestSplitBound(t *testing.T) {
	e := newEnv(t)
	small := mustLayer2(t, benchNetwork(), chunkNodes(3))
	p, err := e.c.eng.NewPlan(small)
	if err != nil {
		t.Fatal(err)
	}
	w := txn.Weigh(p.Ops, e.c.eng.CachedRow)
	if ch := txn.Split(p.Ops, w, e.c.eng.CachedRow); len(ch) != 1 || !slices.Equal(opKinds(ch[0]), opKinds(p.Ops)) {
		t.Fatalf("a plan of weight %d split at %d: %d chunks", w, w, len(ch))
	}
	chunks := txn.Split(p.Ops, w-1, e.c.eng.CachedRow)
	if len(chunks) < 2 {
		t.Fatalf("a plan of weight %d is one chunk at bound %d", w, w-1)
	}
	n := 0
	for i, ch := range chunks {
		n += len(ch)
		if cw := txn.Weigh(ch, e.c.eng.CachedRow); cw > (w-1)*2/3 {
			t.Errorf("chunk %d weighs %d, more than two thirds of %d", i, cw, w-1)
		}
	}
	if n < len(p.Ops) {
		t.Errorf("the chunks hold %d operations, the plan %d", n, len(p.Ops))
	}
}

func opKinds(ops []ovsdb.Operation) []string {
	var out []string
	for _, op := range ops {
		out = append(out, op.Op+" "+op.Table)
	}
	return out
}

// Under the default bound a network of a few nodes goes in one transaction
// (each transaction is one more round of ovn-northd's and every
// ovn-controller's work before the network's first packet), while a large
// one is still split into bounded transactions.
func TestDefaultBoundKeepsASmallNetworkWhole(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name  string
		nodes int
		split bool
	}{{"3 nodes", 3, false}, {"10 nodes", 10, false}, {"50 nodes", 50, true}} {
		n := benchNetwork()
		n.Name = "net" + strconv.Itoa(tc.nodes)
		res, err := e.c.Apply(e.ctx, mustLayer2(t, n, manyNodes(tc.nodes)))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if split := res.Transactions > 1; split != tc.split || res.Operations == 0 {
			t.Errorf("%s: %d operations in %d transaction(s), want split=%v", tc.name, res.Operations, res.Transactions, tc.split)
		}
	}
}
