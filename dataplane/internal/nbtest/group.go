package nbtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
)

// Piece is one topology piece of net1 holding a switch with one port;
// shared marks the switch Shared, ref makes the piece only add its port to
// a switch another piece owns.
func Piece(name, sw, port string, shared, ref bool) *rows.Desired {
	return &rows.Desired{Owner: rows.Owner{Network: "net1", Topology: "layer2", Piece: name},
		Switches: []rows.Switch{{Row: nbdb.LogicalSwitch{Name: sw}, Shared: shared, Ref: ref,
			Ports: []nbdb.LogicalSwitchPort{{Name: port, Addresses: []string{"unknown"}}}}}}
}

// Grouped holds an Apply of net1 in its transaction (the leader) while the
// others queue behind it, then lets it go; it returns each queued Apply's
// error and the number of transactions sent in all.
func Grouped(t testing.TB, hooks *engine.Hooks, e *engine.Engine, during func(), queued ...*rows.Desired) ([]error, int) {
	t.Helper()
	var mu sync.Mutex
	transactions := 0
	hooks.Observe = func(_ rows.Owner, step string, _ time.Duration) {
		if step == "transact" {
			mu.Lock()
			transactions++
			mu.Unlock()
		}
	}
	inLeader, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hooks.BeforeTransact = func(o rows.Owner) {
		if o.Piece == "leader" {
			once.Do(func() { close(inLeader) })
			<-release
		}
		if o.Piece != "leader" && during != nil {
			during()
		}
	}
	leaderDone := make(chan error, 1)
	go func() {
		_, err := e.Apply(context.Background(), Piece("leader", "net1_lead", "net1_lead_p", false, false))
		leaderDone <- err
	}()
	<-inLeader
	errs := make([]error, len(queued))
	var wg sync.WaitGroup
	for i, d := range queued {
		wg.Go(func() { _, errs[i] = e.Apply(context.Background(), d) })
		// In this order.
		for e.Queued("net1") < i+1 {
			time.Sleep(time.Millisecond)
		}
	}
	close(release)
	if err := <-leaderDone; err != nil {
		t.Fatalf("the leading Apply: %v", err)
	}
	wg.Wait()
	hooks.Observe, hooks.BeforeTransact = nil, nil
	return errs, transactions
}
