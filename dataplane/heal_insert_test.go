package dataplane

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/ovnk"
)

// labelsOf returns, as ovn-nbctl arguments (external_ids:K=V), the
// external_ids of a row of the network that carries udnkit's piece.
func (e *env) labelsOf(table, network string) []string {
	e.t.Helper()
	out := e.nbctl("--bare", "--columns=external_ids", "find", table,
		"external_ids:"+ovnk.ExternalIDNetwork+"="+network)
	line, _, _ := strings.Cut(out, "\n")
	var args []string
	for _, kv := range strings.Fields(line) {
		args = append(args, `external_ids:"`+strings.Replace(kv, "=", `"="`, 1)+`"`)
	}
	if !strings.Contains(line, ovnk.ExternalIDPiece+"=") {
		e.t.Fatalf("no %s row of %s carries udnkit's piece: %q", table, network, out)
	}
	return args
}

// healedNetworks applies healNetworks, re-applied on every resync, and
// returns them, the resyncs' log and the owned rows.
func (e *env) healedNetworks(t *testing.T) ([]*rows.Desired, *resyncLog, []string) {
	t.Helper()
	ds := healNetworks(t)
	log := e.reapplyOnResync(ds)
	for _, d := range ds {
		e.apply(d)
	}
	return ds, log, e.owned()
}

// editRepaired makes another client's edit (ovn-nbctl's args) and waits
// until the owned rows are want again, by the n-th foreign_edit resync
// since before (and no other).
func (e *env) editRepaired(t *testing.T, what string, args, want []string, before map[string]float64, n int) {
	t.Helper()
	e.nbctl(args...)
	took := e.waitOwned(what, want, 5*time.Second)
	t.Logf("%s: repaired in %v", what, took.Round(10*time.Millisecond))
	if got := countsSince(before); got[engine.ResyncForeignEdit] != float64(n) || len(got) != 1 {
		t.Errorf("%s: resyncs = %v, want %d foreign_edit", what, got, n)
	}
}

// Another client inserting rows that carry a network's udnkit labels (an
// address set, a port on udnkit's switch, an ACL on it) is a foreign edit:
// the network is re-applied within seconds, which removes them, and
// nothing else is re-applied.
func TestForeignInsertsAreRemoved(t *testing.T) {
	e := newEnv(t)
	ds, log, want := e.healedNetworks(t)
	l2, l3 := ds[0].Owner.Network, ds[2].Owner.Network
	setLabels := e.labelsOf("Address_Set", l3)
	portLabels := e.labelsOf("Logical_Switch_Port", l2)
	inserts := []struct {
		what, network string
		args          []string
	}{
		{"address set", l3, append([]string{"create", "Address_Set", "name=foreign_set", `addresses="10.9.9.9"`}, setLabels...)},
		{"switch port", l2, append([]string{"lsp-add", sw, "foreign_port", "--", "set", "Logical_Switch_Port", "foreign_port"}, portLabels...)},
		{"ACL", l2, append(append([]string{"--", "--id=@a", "create", "ACL", "direction=to-lport", "priority=1001",
			`match="ip4.src == 10.9.9.9"`, "action=drop"}, portLabels...), "--", "add", "Logical_Switch", sw, "acls", "@a")},
	}
	before := resyncCounts()
	for i, ins := range inserts {
		e.editRepaired(t, ins.what, ins.args, want, before, i+1)
		if all := log.all(); len(all) != i+1 || all[i].All || fmt.Sprint(all[i].Networks) != fmt.Sprint([]string{ins.network}) {
			t.Errorf("%s: resyncs asked for %+v, want %s alone", ins.what, all, ins.network)
		}
		forgetFights(e.c)
	}
}

// udnkit's own inserts are no foreign inserts: many networks applied at
// once (each inserting its rows, several of them split into transactions),
// removed and applied again, start no resync; nor does a reconnect, whose
// refilled cache reports every row again.
func TestOwnInsertsAndRefillStartNoResync(t *testing.T) {
	e := newEnv(t)
	e.c.eng.MaxTransactionOps = 60
	ds := healNetworks(t)
	net, nodes := exampleV4()
	for i := range 8 {
		n := net
		n.Name = fmt.Sprintf("test2%d_many", i)
		n.SwitchTunnelKey, n.TransitRouterTunnelKey = 16711700+i, 16715800+i
		ds = append(ds, mustLayer2(t, n, nodes))
	}
	log := e.reapplyOnResync(ds)
	before := resyncCounts()
	for round := range 2 {
		done := make(chan error, len(ds))
		for _, d := range ds {
			go func() {
				_, err := e.c.Apply(e.ctx, d)
				done <- err
			}()
		}
		for range ds {
			if err := <-done; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		for _, d := range ds[3:] {
			e.apply(&rows.Desired{Owner: d.Owner})
		}
	}
	for _, d := range ds {
		e.apply(d)
	}
	if err := e.db.NB.Restart(e.ctx); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); e.c.eng.Index.Stale(e.c.eng.NB); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the index was not rebuilt after the reconnect")
		}
	}
	e.settle()
	time.Sleep(5 * engine.HealTick)
	if got := countsSince(before); len(got) != 0 {
		t.Errorf("resyncs = %v, want none", got)
	}
	if got := log.all(); len(got) != 0 {
		t.Errorf("resyncs asked for %+v", got)
	}

	// The rejecting path: the same client still sees another's insert
	// after all that.
	e.nbctl(append([]string{"create", "Address_Set", "name=foreign_set", `addresses="10.9.9.9"`},
		e.labelsOf("Address_Set", ds[2].Owner.Network)...)...)
	deadline := time.Now().Add(5 * time.Second)
	for countsSince(before)[engine.ResyncForeignEdit] != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("no foreign_edit resync for an inserted address set: %v", countsSince(before))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
