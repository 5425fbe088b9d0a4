package dataplane

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/dataplane/ovsdbserver"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/ovnk"
)

// healNetworks are three networks' pieces: two Layer2 topologies and one
// Layer3 network's subnet policies.
func healNetworks(t *testing.T) []*rows.Desired {
	t.Helper()
	net, nodes := exampleV4()
	a := mustLayer2(t, net, nodes)
	net.Name, net.SwitchTunnelKey, net.TransitRouterTunnelKey = "test13_other", 16711686, 16715781
	net.Subnets, net.MasqueradeIPs = []netip.Prefix{pfx("203.204.0.0/24")}, []netip.Addr{addr("169.254.0.13")}
	b := mustLayer2(t, net, nodes[:2])
	c, err := topology.Layer3SubnetPolicies("test14_l3", []netip.Prefix{pfx("10.1.0.0/16"), pfx("10.2.0.0/16")})
	if err != nil {
		t.Fatal(err)
	}
	return []*rows.Desired{a, b, c}
}

// resyncLog stands in for the dataplane's controllers: it records every
// Resync and re-applies the pieces of the networks it names.
type resyncLog struct {
	mu  sync.Mutex
	got []engine.Resync
	// owned: the rows udnkit owned when each resync came, before its
	// re-apply (nil: not read).
	owned [][]string
}

func (e *env) reapplyOnResync(ds []*rows.Desired) *resyncLog {
	l := &resyncLog{}
	work := make(chan engine.Resync, 100)
	e.c.OnResync(func(r engine.Resync) {
		l.mu.Lock()
		l.got = append(l.got, r)
		l.mu.Unlock()
		work <- r
	})
	go func() {
		for {
			select {
			case <-e.ctx.Done():
				return
			case r := <-work:
				rows, _ := e.ownedRows()
				l.mu.Lock()
				l.owned = append(l.owned, rows)
				l.mu.Unlock()
				for _, d := range ds {
					if r.All || slices.Contains(r.Networks, d.Owner.Network) {
						// A failed Apply is retried by the next resync, as a
						// controller's requeue would.
						_, _ = e.c.Apply(e.ctx, d)
					}
				}
			}
		}
	}()
	return l
}

func (l *resyncLog) ownedAt() [][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.owned)
}

func (l *resyncLog) all() []engine.Resync {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got)
}

// resyncCounts reads udnkit_dataplane_resyncs_total by reason, and the held
// ones under "held".
func resyncCounts() map[string]float64 {
	out := map[string]float64{"held": metricValue("udnkit_dataplane_resyncs_held_total", nil)}
	for _, r := range []string{engine.ResyncDatabaseReplaced, engine.ResyncOwnedRowsLost, engine.ResyncForeignEdit} {
		out[r] = metricValue("udnkit_dataplane_resyncs_total", map[string]string{"reason": r})
	}
	return out
}

func countsSince(before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range resyncCounts() {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// owned lists, with ovn-nbctl, every Northbound row udnkit owns (its
// external_ids carry udnkit's piece): one line per row with its columns but
// _uuid and those ovn-northd writes, a reference to another row written as
// that row's line (a router's line holds its ports, routes, policies and
// NATs); sorted.
func (e *env) owned() []string {
	e.t.Helper()
	rows, err := e.ownedRows()
	if err != nil {
		e.t.Fatal(err)
	}
	return rows
}

func (e *env) ownedRows() ([]string, error) {
	type table struct {
		Headings []string `json:"headings"`
		Data     [][]any  `json:"data"`
	}
	rows := map[string]map[string]any{} // UUID → column → value
	var order []string
	for _, t := range indexedTables {
		out, err := ovsdbserver.Command("ovn-nbctl", "--db="+e.db.NB.Address(), "--format=json", "list", t).Output()
		if err != nil {
			return nil, fmt.Errorf("ovn-nbctl list %s: %w", t, err)
		}
		var tb table
		if err := json.Unmarshal(out, &tb); err != nil {
			return nil, err
		}
		for _, d := range tb.Data {
			row := map[string]any{"": t}
			for i, h := range tb.Headings {
				row[h] = d[i]
			}
			u := d[slices.Index(tb.Headings, "_uuid")].([]any)[1].(string)
			rows[u] = row
			order = append(order, u)
		}
	}
	skip := map[string]bool{"_uuid": true, "up": true, "dynamic_addresses": true, "status": true, "tag": true}
	var render func(v any) string
	render = func(v any) string {
		a, ok := v.([]any)
		if !ok || len(a) != 2 {
			return fmt.Sprint(v)
		}
		switch a[0] {
		case "uuid":
			row := rows[a[1].(string)]
			if row == nil {
				return "ref"
			}
			var cols []string
			for h, x := range row {
				if h != "" && !skip[h] {
					cols = append(cols, h+"="+render(x))
				}
			}
			sort.Strings(cols)
			return row[""].(string) + "{" + strings.Join(cols, " ") + "}"
		case "set", "map":
			var out []string
			for _, x := range a[1].([]any) {
				if kv, ok := x.([]any); ok && a[0] == "map" {
					out = append(out, render(kv[0])+":"+render(kv[1]))
				} else {
					out = append(out, render(x))
				}
			}
			sort.Strings(out)
			return "[" + strings.Join(out, ",") + "]"
		}
		return fmt.Sprint(v)
	}
	out := []string{} // not nil: read, and empty
	for _, u := range order {
		if line := render([]any{"uuid", u}); strings.Contains(line, ovnk.ExternalIDPiece) {
			out = append(out, line)
		}
	}
	sort.Strings(out)
	return out, nil
}

// waitOwned waits up to within for the owned rows to be want's and returns
// how long that took.
func (e *env) waitOwned(what string, want []string, within time.Duration) time.Duration {
	e.t.Helper()
	start := time.Now()
	for {
		got := e.owned()
		if slices.Equal(got, want) {
			return time.Since(start)
		}
		if time.Since(start) > within {
			e.t.Fatalf("%s: the owned rows are not back after %v: %d of %d rows equal; NB:\n%s", what, within,
				len(want)-len(diffLines(want, got)), len(want), e.nbctl("show"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// diffLines lists the lines of want that got lacks.
func diffLines(want, got []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(got, w) {
			out = append(out, w)
		}
	}
	return out
}

// identityKnown waits until the client knows the database's NB_Global.
func (e *env) identityKnown() {
	e.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		id := e.c.eng.Index.Identity()
		if id != "" {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatal("the client never saw the database's NB_Global")
		}
	}
}

// An emptied Northbound database (ovsdb-server killed, its file recreated,
// served again on the same socket) is fully reprogrammed within 10 s while
// the client runs: the database's NB_Global is another one
// (database_replaced, every network). A database restored from a backup
// taken before the networks were programmed has the same NB_Global, and
// the rows udnkit owned are missing from the refilled cache
// (owned_rows_lost, the networks that had rows).
func TestEmptiedNorthboundIsReprogrammed(t *testing.T) {
	for _, c := range []struct {
		name   string
		reason string
		all    bool
	}{
		{"emptied", engine.ResyncDatabaseReplaced, true},
		{"restored from a backup", engine.ResyncOwnedRowsLost, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.startNorthd()
			e.identityKnown()
			var backup []byte
			if c.reason == engine.ResyncOwnedRowsLost {
				e.db.NB.Stop()
				var err error
				if backup, err = os.ReadFile(e.db.NB.File()); err != nil {
					t.Fatal(err)
				}
				if err := e.db.NB.Restart(e.ctx); err != nil {
					t.Fatal(err)
				}
			}
			ds := healNetworks(t)
			log := e.reapplyOnResync(ds)
			for _, d := range ds {
				e.apply(d)
			}
			want := e.owned()
			if len(want) < 30 {
				t.Fatalf("only %d owned rows programmed", len(want))
			}
			before := resyncCounts()
			if c.reason == engine.ResyncOwnedRowsLost {
				e.db.NB.Stop()
				if err := os.WriteFile(e.db.NB.File(), backup, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := e.db.NB.Restart(e.ctx); err != nil {
					t.Fatal(err)
				}
			} else if err := e.db.NB.Recreate(e.ctx); err != nil {
				t.Fatal(err)
			}
			took := e.waitOwned(c.name, want, 10*time.Second)
			t.Logf("%s: %d owned rows reprogrammed %v after the database was served again", c.name, len(want), took.Round(10*time.Millisecond))
			if got := countsSince(before); len(got) != 1 || got[c.reason] != 1 {
				t.Errorf("resyncs = %v, want one %s", got, c.reason)
			}
			got := log.all()
			if len(got) != 1 || got[0].Reason != c.reason || got[0].All != c.all ||
				!slices.Equal(got[0].Networks, []string{"test12_namespace-scoped", "test13_other", "test14_l3"}) {
				t.Errorf("resyncs asked for %+v, want one %s of the three networks (all: %v)", got, c.reason, c.all)
			}
			if owned := log.ownedAt(); len(owned) != 1 || owned[0] == nil || len(owned[0]) != 0 {
				t.Errorf("owned rows when the resync came: %v, want none", owned)
			}
			for _, d := range ds {
				if ops := e.apply(d); ops != 0 {
					t.Errorf("%s: an Apply after the repair sent %d operations", d.Owner.Network, ops)
				}
			}
		})
	}
}

// Another client deleting an owned row, or changing a managed column of one,
// is repaired within seconds; only the edited network is re-applied. A
// writer that keeps fighting is re-applied ever less often (held resyncs),
// and repaired once it stops.
func TestForeignEditsAreRepaired(t *testing.T) {
	e := newEnv(t)
	_, log, want := e.healedNetworks(t)
	policy := strings.Fields(e.nbctl("--bare", "--columns=_uuid", "find", "Logical_Router_Policy", "external_ids:k8s.ovn.org/network=test14_l3"))
	set := strings.Fields(e.nbctl("--bare", "--columns=name", "find", "Address_Set", "external_ids:k8s.ovn.org/network=test14_l3"))
	if len(policy) == 0 || len(set) == 0 {
		t.Fatalf("the Layer3 network's policies %v, address sets %v", policy, set)
	}
	before := resyncCounts()
	edits := []struct {
		what string
		args []string
	}{
		{"transit router deleted", []string{"lr-del", tr}},
		{"router port's MAC changed", []string{"set", "Logical_Router_Port", "rtotr-" + gr1, "mac=\"0a:58:00:00:00:01\""}},
		{"switch port deleted", []string{"lsp-del", "stotr-" + sw}},
		{"policy's action changed", []string{"set", "Logical_Router_Policy", policy[0], "action=drop"}},
		{"address set emptied", []string{"clear", "Address_Set", set[0], "addresses"}},
	}
	for i, ed := range edits {
		e.editRepaired(t, ed.what, ed.args, want, before, i+1)
		// What the resync found is what the edit did.
		if owned := log.ownedAt(); len(owned) != i+1 || owned[i] == nil || slices.Equal(owned[i], want) {
			t.Errorf("%s: the owned rows when the resync came equal the programmed ones", ed.what)
		}
		forgetFights(e.c) // each edit is its network's first
	}
	for _, r := range log.all() {
		if r.All || len(r.Networks) != 1 {
			t.Errorf("a foreign edit re-applied %+v, want the edited network only", r)
		}
	}

	// A writer that sets the MAC every 100 ms for 4 s.
	forgetFights(e.c)
	before = resyncCounts()
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		e.nbctl("set", "Logical_Router_Port", "rtotr-"+gr1, "mac=\"0a:58:00:00:00:02\"")
	}
	got := countsSince(before)
	// At once, then 2 s, 4 s after (the wait doubles from 1 s on).
	if got[engine.ResyncForeignEdit] < 2 || got[engine.ResyncForeignEdit] > 4 || got["held"] < 1 {
		t.Errorf("a fighting writer: resyncs = %v, want 2 to 4 foreign_edit and some held back", got)
	}
	e.waitOwned("after the fight", want, 20*time.Second)
}

// forgetFights forgets the networks' recent foreign-edit resyncs.
func forgetFights(c *Client) {
	c.eng.ForgetFights()
}

// What is not udnkit's loss starts no resync: udnkit's own Applies (a node
// removed, a network removed and programmed again), ovn-northd's writes,
// another client's rows edited and deleted (OVN-Kubernetes' own row of the
// same network among them), and a plain reconnect to the same database.
// udnkit never touches those rows.
func TestNoResyncWithoutLoss(t *testing.T) {
	e := newEnv(t)
	e.startNorthd()
	ds := healNetworks(t)
	log := e.reapplyOnResync(ds)
	net, nodes := exampleV4()
	before := resyncCounts()
	for _, d := range ds {
		e.apply(d)
	}
	e.nbctl("--timeout=60", "--wait=sb", "sync")
	e.apply(mustLayer2(t, net, nodes[:2]))
	e.apply(&rows.Desired{Owner: ds[0].Owner})
	e.apply(&rows.Desired{Owner: ds[2].Owner})
	for _, d := range ds {
		e.apply(d)
	}
	want := e.owned()

	// OVN-Kubernetes' gateway router of the same network (network and
	// topology, no piece) and an unrelated switch.
	e.nbctl("lr-add", "GR_foreign", "--", "set", "Logical_Router", "GR_foreign",
		"external_ids:k8s.ovn.org/network=test12_namespace-scoped", "external_ids:k8s.ovn.org/topology=layer2")
	e.nbctl("lrp-add", "GR_foreign", "rtoe-foreign", "0a:58:00:00:00:09", "172.18.0.2/16")
	e.nbctl("ls-add", "foreign_sw")
	e.nbctl("lsp-add", "foreign_sw", "foreign_port")
	e.settle()
	e.nbctl("set", "Logical_Router", "GR_foreign", "options:chassis=node9")
	e.nbctl("set", "Logical_Router_Port", "rtoe-foreign", "mac=\"0a:58:00:00:00:0a\"")
	e.nbctl("lsp-del", "foreign_port")
	e.nbctl("ls-del", "foreign_sw")
	e.nbctl("--timeout=60", "--wait=sb", "sync")

	if err := e.db.NB.Restart(e.ctx); err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if ops := e.apply(d); ops != 0 {
			t.Errorf("%s: an Apply after the reconnect sent %d operations", d.Owner.Network, ops)
		}
	}
	// Several heal ticks after the reconnect's rebuild.
	for deadline := time.Now().Add(10 * time.Second); e.c.eng.Index.Stale(e.c.eng.NB); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the index was not rebuilt after the reconnect")
		}
	}
	time.Sleep(5 * engine.HealTick)
	if got := countsSince(before); len(got) != 0 {
		t.Errorf("resyncs = %v, want none", got)
	}
	if got := log.all(); len(got) != 0 {
		t.Errorf("resyncs asked for %+v", got)
	}
	if got := e.owned(); !slices.Equal(got, want) {
		t.Errorf("owned rows changed: lacking %v", diffLines(want, got))
	}
	if got := e.nbctl("--bare", "--columns=options,external_ids", "list", "Logical_Router", "GR_foreign"); !strings.Contains(got, "chassis=node9") ||
		!strings.Contains(got, "k8s.ovn.org/topology=layer2") {
		t.Errorf("the foreign router was changed: %q", got)
	}
	if got := e.nbctl("get", "Logical_Router_Port", "rtoe-foreign", "mac"); got != `"0a:58:00:00:00:0a"` {
		t.Errorf("the foreign port's MAC = %s", got)
	}
}
