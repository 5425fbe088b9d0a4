package dataplane

import (
	"strings"
	"testing"

	"github.com/udnkit/udnkit/ovnk"
)

// A restarted client reads the routers' and switches' children (the
// index's links) while its cache is filled, so the server may answer that
// select before or after the monitor's copy. Links older than the cache
// (a port deleted, a port added to a router, a new router with a port,
// each after the select) still give the index a fresh one would build, and
// the restarted client's plan puts back the deleted port and leaves the
// other client's rows alone.
func TestRestartWithLinksOlderThanTheCache(t *testing.T) {
	e := newEnv(t)
	net, nodes := exampleV4()
	d := mustLayer2(t, net, nodes)
	e.apply(d)
	e.c.Close()
	c, err := dial(e.ctx, Config{NBAddress: e.db.NB.Address(), SBAddress: e.db.SB.Address()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e.c = c
	// The links as they are now, read before the writes below: the next
	// rebuild (the first plan's) uses them.
	<-c.eng.Index.Prefetch(c.eng.NB)
	e.nbctl("lrp-del", "trtor-"+gr3)
	e.nbctl("--", "--id=@p", "create", "Logical_Router_Port", "name=foreign-port", "mac=00\\:00\\:00\\:00\\:00\\:01",
		"networks=10.9.9.1/24", "--", "add", "Logical_Router", tr, "ports", "@p")
	e.nbctl("lr-add", "foreign-router", "--", "set", "Logical_Router", "foreign-router",
		`external_ids:"`+ovnk.ExternalIDNetwork+`"=`+net.Name)
	e.nbctl("--", "--id=@p", "create", "Logical_Router_Port", "name=foreign-port2", "mac=00\\:00\\:00\\:00\\:00\\:02",
		"networks=10.9.8.1/24", "--", "add", "Logical_Router", "foreign-router", "ports", "@p")
	e.settle() // the index equals one built afresh from the cache and the server's links
	if ops := e.apply(d); ops == 0 {
		t.Error("the restarted client planned nothing: the deleted port stays deleted")
	}
	ports := e.nbctl("lrp-list", tr)
	for _, want := range []string{"trtor-" + gr3, "trtor-" + gr2, "foreign-port"} {
		if !strings.Contains(ports, "("+want+")") {
			t.Errorf("router %s lacks port %s after the restarted client's Apply:\n%s", tr, want, ports)
		}
	}
	if got := e.nbctl("lrp-list", "foreign-router"); !strings.Contains(got, "(foreign-port2)") {
		t.Errorf("the other client's router lost its port:\n%s", got)
	}
	if ops := e.apply(d); ops != 0 {
		t.Errorf("a second Apply wrote %d operations, want 0", ops)
	}
}
