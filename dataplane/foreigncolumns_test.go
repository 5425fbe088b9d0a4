package dataplane

import (
	"testing"
)

// udnkit updates a row by naming the columns it manages: a column its cache
// does not monitor (a router's enabled) or does not manage (a router port's
// enabled) keeps the value another client gave it when udnkit updates that
// row to repair a managed column.
func TestOwnershipKeepsColumnsItDoesNotManage(t *testing.T) {
	e := newEnv(t)
	net, nodes := exampleV4()
	d := mustLayer2(t, net, nodes)
	e.apply(d)
	wantOptions := e.nbctl("get", "Logical_Router", tr, "options")
	wantMAC := e.nbctl("get", "Logical_Router_Port", "trtor-"+gr2, "mac")
	e.nbctl("set", "Logical_Router", tr, "enabled=false", "options:foreign=1")
	e.nbctl("set", "Logical_Router_Port", "trtor-"+gr2, "enabled=false", `mac="00:00:00:00:00:09"`)
	e.settle()
	if ops := e.apply(d); ops == 0 {
		t.Fatal("the Apply repaired nothing: the foreign edits of managed columns stay")
	}
	if got := e.nbctl("get", "Logical_Router", tr, "options"); got != wantOptions {
		t.Errorf("router options = %s, want udnkit's %s", got, wantOptions)
	}
	if got := e.nbctl("get", "Logical_Router_Port", "trtor-"+gr2, "mac"); got != wantMAC {
		t.Errorf("router port mac = %s, want udnkit's %s", got, wantMAC)
	}
	if got := e.nbctl("get", "Logical_Router", tr, "enabled"); got != "false" {
		t.Errorf("router enabled = %q after udnkit updated the row, want the other client's false", got)
	}
	if got := e.nbctl("get", "Logical_Router_Port", "trtor-"+gr2, "enabled"); got != "false" {
		t.Errorf("router port enabled = %q after udnkit updated the row, want the other client's false", got)
	}
}
