package dataplane

import (
	"testing"
	"time"

	"github.com/udnkit/udnkit/dataplane/internal/ovsconn"
	"github.com/udnkit/udnkit/ovnk"
)

// waitIndexed waits until the client's index equals one built afresh from
// its cache (the events in flight are delivered).
func waitIndexed(t testing.TB, c *Client) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		diff := c.eng.Index.Diff(c.eng.NB)
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
		fp, err := e.c.eng.FullPlan(d)
		if err != nil {
			t.Fatal(err)
		}
		full := fp.Ops
		p, err := e.c.eng.NewPlan(d)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := canonical(t, p.Ops), canonical(t, full); got != want {
			t.Fatalf("%s: the plan differs from the full diff:\n%s\nwant:\n%s", what, got, want)
		}
		if changed && len(full) == 0 {
			t.Errorf("%s: nothing to plan", what)
		}
		e.apply(d)
	}
	check("applied", false)

	e.nbctl("lr-add", "foreign-router", "--", "set", "Logical_Router", "foreign-router",
		`external_ids:"`+ovnk.ExternalIDNetwork+`"=`+net.Name)
	e.nbctl("--", "--id=@p", "create", "Logical_Router_Port", "name=foreign-port", "mac=00\\:00\\:00\\:00\\:00\\:01",
		"networks=10.9.9.1/24", `external_ids:"`+ovnk.ExternalIDNetwork+`"=`+net.Name,
		"--", "add", "Logical_Router", "foreign-router", "ports", "@p")
	check("written by another client", false)
	e.nbctl("set", "Logical_Router_Port", "trtor-"+gr2, "mac=00\\:00\\:00\\:00\\:00\\:02")
	e.nbctl("set", "Logical_Router_Port", "foreign-port", `external_ids:"`+ovnk.ExternalIDNetwork+`"=other`)
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
	if err := ovsconn.WaitUp(e.ctx, e.c.eng.NB); err != nil {
		t.Fatal(err)
	}
	check("deleted while the server was down", true)

	// Lost events: the next read rebuilds the index.
	e.nbctl("lrp-del", "trtor-"+gr2)
	e.c.eng.Index.Dropped()
	check("after lost events", true)
}

// The index holds the cache's own models (not copies), so the rows take
// their memory once.
func TestIndexHoldsTheCachesModels(t *testing.T) {
	e := newEnv(t)
	net, nodes := exampleV4()
	e.apply(mustLayer2(t, net, nodes))
	e.nbctl("lrp-del", "trtor-"+gr3)
	e.settle()
	defer e.c.eng.Index.Read(e.c.eng.NB)()
	n := 0
	for _, table := range indexedTables {
		for u, m := range e.c.eng.NB.Cache().Table(table).RowsShallow() {
			if e.c.eng.Index.Held(table, u) != m {
				t.Errorf("%s %s: the index holds another model than the cache", table, u)
			}
			n++
		}
	}
	if n < 10 {
		t.Errorf("only %d rows compared", n)
	}
}
