package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/dataplane/internal/nbtest"
	"github.com/udnkit/udnkit/dataplane/rows"
)

// switchPorts maps each switch's name to its ports' names, sorted, as the
// database holds them, and fails on a name two switches hold.
func switchPorts(t *testing.T, addr string) map[string][]string {
	t.Helper()
	count, ports := nbtest.SwitchPorts(t, addr)
	for sw, n := range count {
		if n > 1 {
			t.Errorf("%d switches named %s", n, sw)
		}
		if ports[sw] == nil {
			ports[sw] = []string{}
		}
	}
	return ports
}

// Applies of one network that queue behind another are served together:
// two pieces with rows of their own share one transaction, and a piece
// adding a port to a switch one of them inserts is applied after it
// (planned with the others, it refers to a switch not there yet).
func TestQueuedAppliesShareATransaction(t *testing.T) {
	addr := nbtest.Serve(t)
	hooks := &engine.Hooks{}
	e := nbtest.Engine(t, addr, hooks)
	b := nbtest.Piece("b", "net1_b", "net1_b_p", false, false)
	c := nbtest.Piece("c", "net1_c", "net1_c_p", false, false)
	d := nbtest.Piece("d", "net1_b", "net1_d_p", false, true)
	errs, transactions := nbtest.Grouped(t, hooks, e, nil, d, b, c)
	for i, err := range errs {
		if err != nil {
			t.Errorf("queued Apply %d: %v", i, err)
		}
	}
	// The leader's, b's and c's together, then d's.
	if transactions != 3 {
		t.Errorf("%d transactions, want 3 (the leader, b and c together, d after them)", transactions)
	}
	got := switchPorts(t, addr)
	want := map[string]string{"net1_lead": "net1_lead_p", "net1_b": "net1_b_p net1_d_p", "net1_c": "net1_c_p"}
	for sw, ports := range want {
		have := strings.Join(got[sw], " ")
		if have != ports {
			t.Errorf("switch %s has ports %q, want %q", sw, have, ports)
		}
	}
	for _, p := range []*rows.Desired{b, c, d} {
		if res := apply(t, e, p); res.Operations != 0 {
			t.Errorf("piece %s: a second Apply sent %d operations", p.Owner.Piece, res.Operations)
		}
	}
}

// Two queued pieces that both insert the same missing Shared switch are not
// sent together (the switch would be inserted twice): the second finds the
// first's.
func TestQueuedAppliesInsertASharedSwitchOnce(t *testing.T) {
	addr := nbtest.Serve(t)
	hooks := &engine.Hooks{}
	e := nbtest.Engine(t, addr, hooks)
	b := nbtest.Piece("b", "net1_shared", "net1_b_p", true, false)
	c := nbtest.Piece("c", "net1_shared", "net1_c_p", true, false)
	errs, transactions := nbtest.Grouped(t, hooks, e, nil, b, c)
	for i, err := range errs {
		if err != nil {
			t.Errorf("queued Apply %d: %v", i, err)
		}
	}
	if transactions != 3 {
		t.Errorf("%d transactions, want 3 (the leader, b, then c)", transactions)
	}
	if have := strings.Join(switchPorts(t, addr)["net1_shared"], " "); have != "net1_b_p net1_c_p" {
		t.Errorf("the shared switch has ports %q, want both pieces'", have)
	}
}

// A queued Apply whose context ends while it waits returns at once and
// writes nothing; the others queued with it are still served.
func TestQueuedApplyCancelledWhileWaiting(t *testing.T) {
	addr := nbtest.Serve(t)
	hooks := &engine.Hooks{}
	e := nbtest.Engine(t, addr, hooks)
	inLeader, release := make(chan struct{}), make(chan struct{})
	hooks.BeforeTransact = func(o rows.Owner) {
		if o.Piece == "leader" {
			close(inLeader)
			<-release
		}
	}
	leaderDone := make(chan error, 1)
	go func() {
		_, err := e.Apply(ctx, nbtest.Piece("leader", "net1_lead", "net1_lead_p", false, false))
		leaderDone <- err
	}()
	<-inLeader
	bctx, cancel := context.WithCancel(ctx)
	bDone, cDone := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := e.Apply(bctx, nbtest.Piece("b", "net1_b", "net1_b_p", false, false))
		bDone <- err
	}()
	go func() {
		_, err := e.Apply(ctx, nbtest.Piece("c", "net1_c", "net1_c_p", false, false))
		cDone <- err
	}()
	for e.Queued("net1") < 2 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case err := <-bDone:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the cancelled Apply returned %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled Apply still waits behind the leader")
	}
	if n := e.Queued("net1"); n != 1 {
		t.Errorf("%d Applies queued after the cancel, want 1", n)
	}
	close(release)
	if err := <-leaderDone; err != nil {
		t.Fatal(err)
	}
	if err := <-cDone; err != nil {
		t.Fatalf("the other queued Apply: %v", err)
	}
	count, _ := nbtest.SwitchPorts(t, addr)
	if count["net1_b"] != 0 || count["net1_c"] != 1 {
		t.Errorf("switches %v, want net1_c and no net1_b", count)
	}
}

// Pieces of one network applied together share one transaction without
// another Apply holding the network: b and c go as one, d (a port on the
// switch b inserts) after them; results come back in the order given.
// Pieces of two networks are refused, and nothing of them is written.
func TestApplyTogether(t *testing.T) {
	addr := nbtest.Serve(t)
	hooks := &engine.Hooks{}
	e := nbtest.Engine(t, addr, hooks)
	transactions := 0
	hooks.Observe = func(_ rows.Owner, step string, _ time.Duration) {
		if step == "transact" {
			transactions++
		}
	}
	b := nbtest.Piece("b", "net1_b", "net1_b_p", false, false)
	c := nbtest.Piece("c", "net1_c", "net1_c_p", false, false)
	d := nbtest.Piece("d", "net1_b", "net1_d_p", false, true)
	res, err := e.ApplyTogether(ctx, b, c, d)
	if err != nil {
		t.Fatal(err)
	}
	if transactions != 2 {
		t.Errorf("%d transactions, want 2 (b and c together, then d)", transactions)
	}
	if len(res) != 3 || res[0].Operations == 0 || res[1].Operations == 0 || res[2].Operations == 0 {
		t.Errorf("results %+v, want one per piece, each with operations", res)
	}
	got := switchPorts(t, addr)
	for sw, ports := range map[string]string{"net1_b": "net1_b_p net1_d_p", "net1_c": "net1_c_p"} {
		if have := strings.Join(got[sw], " "); have != ports {
			t.Errorf("switch %s has ports %q, want %q", sw, have, ports)
		}
	}

	other := nbtest.Piece("x", "net2_x", "net2_x_p", false, false)
	other.Owner.Network = "net2"
	y := nbtest.Piece("y", "net1_y", "net1_y_p", false, false)
	if _, err := e.ApplyTogether(ctx, y, other); err == nil || !strings.Contains(err.Error(), "net2/layer2/x is not of network net1") {
		t.Errorf("pieces of two networks: error %v, want one naming the other network's piece", err)
	}
	got = switchPorts(t, addr)
	if _, ok := got["net2_x"]; ok {
		t.Error("a refused piece was written")
	}
	if _, ok := got["net1_y"]; ok {
		t.Error("a piece refused with another was written")
	}
}

// TestApplyTogetherUnless: the pieces of a network unless says is gone are
// not written; when it says otherwise they are, together.
func TestApplyTogetherUnless(t *testing.T) {
	addr := nbtest.Serve(t)
	e := nbtest.Engine(t, addr, &engine.Hooks{})
	asked := 0
	gone := true
	unless := func(context.Context) (bool, error) { asked++; return gone, nil }
	b := nbtest.Piece("b", "net1_b", "net1_b_p", false, false)
	c := nbtest.Piece("c", "net1_c", "net1_c_p", false, false)
	res, err := e.ApplyTogetherUnless(ctx, unless, b, c)
	if err != nil {
		t.Fatal(err)
	}
	if asked == 0 || res[0].Operations != 0 || res[1].Operations != 0 || len(switchPorts(t, addr)) != 0 {
		t.Fatalf("a gone network's pieces: asked %d times, results %+v, switches %v; want asked, nothing written", asked, res, switchPorts(t, addr))
	}
	gone = false
	if _, err := e.ApplyTogetherUnless(ctx, unless, b, c); err != nil {
		t.Fatal(err)
	}
	got := switchPorts(t, addr)
	if strings.Join(got["net1_b"], " ") != "net1_b_p" || strings.Join(got["net1_c"], " ") != "net1_c_p" {
		t.Errorf("a live network's pieces: switches %v, want net1_b and net1_c with their ports", got)
	}
}
