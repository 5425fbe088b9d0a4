package dataplane

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/nbtest"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
)

// On ovsdb-server: Applies of one network queued behind another share one
// transaction; two that insert the same missing Shared switch do not (one
// switch, both ports); and when the shared transaction fails (another
// client takes a port's name just before it is sent) nothing of it is
// committed and each piece is applied alone: the one whose port name is
// taken fails, naming it, and the other's rows are written.
func TestQueuedAppliesOnOVSDBServer(t *testing.T) {
	t.Run("share", func(t *testing.T) {
		e := newEnv(t)
		errs, transactions := nbtest.Grouped(t, e.hooks, e.c.eng, nil,
			nbtest.Piece("b", "net1_b", "net1_b_p", false, false),
			nbtest.Piece("c", "net1_c", "net1_c_p", false, false),
			nbtest.Piece("s1", "net1_s", "net1_s1_p", true, false),
			nbtest.Piece("s2", "net1_s", "net1_s2_p", true, false))
		for i, err := range errs {
			if err != nil {
				t.Errorf("queued Apply %d: %v", i, err)
			}
		}
		// The leader's; b, c and s1 together; s2 after them.
		if transactions != 3 {
			t.Errorf("%d transactions, want 3", transactions)
		}
		count, ports := nbtest.SwitchPorts(t, e.db.NB.Address())
		for sw, want := range map[string]string{"net1_b": "net1_b_p", "net1_c": "net1_c_p", "net1_s": "net1_s1_p net1_s2_p"} {
			if count[sw] != 1 || strings.Join(ports[sw], " ") != want {
				t.Errorf("%d switch(es) %s with ports %q, want one with %q", count[sw], sw, ports[sw], want)
			}
		}
	})
	t.Run("together", func(t *testing.T) {
		e := newEnv(t)
		transactions := 0
		e.hooks.Observe = func(_ rows.Owner, step string, _ time.Duration) {
			if step == "transact" {
				transactions++
			}
		}
		res, err := e.c.ApplyTogether(e.ctx,
			nbtest.Piece("b", "net1_b", "net1_b_p", false, false),
			nbtest.Piece("c", "net1_c", "net1_c_p", false, false),
			nbtest.Piece("d", "net1_b", "net1_d_p", false, true))
		if err != nil || len(res) != 3 {
			t.Fatalf("results %+v, error %v", res, err)
		}
		// b and c in one transaction, d (on b's switch) after it.
		if transactions != 2 {
			t.Errorf("%d transactions, want 2", transactions)
		}
		count, ports := nbtest.SwitchPorts(t, e.db.NB.Address())
		for sw, want := range map[string]string{"net1_b": "net1_b_p net1_d_p", "net1_c": "net1_c_p"} {
			if count[sw] != 1 || strings.Join(ports[sw], " ") != want {
				t.Errorf("%d switch(es) %s with ports %q, want one with %q", count[sw], sw, ports[sw], want)
			}
		}
	})
	t.Run("fall back", func(t *testing.T) {
		e := newEnv(t)
		var once sync.Once
		taken := func() {
			once.Do(func() {
				// On a switch of its own (an unreferenced port is
				// garbage-collected).
				nbtest.Transact(t, e.db.NB.Address(),
					ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchPortTable,
						UUIDName: "p", Row: ovsdb.Row{"name": "net1_c_p"}},
					ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchTable,
						Row: ovsdb.Row{"name": "other", "ports": ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: "p"}}}}})
			})
		}
		errs, transactions := nbtest.Grouped(t, e.hooks, e.c.eng, taken,
			nbtest.Piece("b", "net1_b", "net1_b_p", false, false),
			nbtest.Piece("c", "net1_c", "net1_c_p", false, false))
		if errs[0] != nil {
			t.Errorf("piece b: %v, want its rows written", errs[0])
		}
		if errs[1] == nil || !strings.Contains(errs[1].Error(), "net1_c_p") {
			t.Errorf("piece c: %v, want an error naming the port net1_c_p", errs[1])
		}
		// The leader's, the failed shared one, b's alone (c fails in its
		// plan or in its own transaction).
		if transactions < 3 {
			t.Errorf("%d transactions, want the shared one and then one for each piece", transactions)
		}
		count, ports := nbtest.SwitchPorts(t, e.db.NB.Address())
		if count["net1_b"] != 1 || strings.Join(ports["net1_b"], " ") != "net1_b_p" {
			t.Errorf("switch net1_b: %d with ports %q, want one with net1_b_p", count["net1_b"], ports["net1_b"])
		}
		if count["net1_c"] != 0 {
			t.Errorf("switch net1_c exists, want nothing of piece c written")
		}
	})
}
