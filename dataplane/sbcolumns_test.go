package dataplane

import (
	"strings"
	"testing"
	"time"

	"github.com/udnkit/udnkit/dataplane/topology/multivtep"
)

// The Southbound cache holds two columns of a Port_Binding (logical_port,
// encap): SetPortEncaps still finds the binding, sets its encap, and leaves
// every column ovn-northd wrote, which the cache does not hold, as it was;
// its next call finds nothing to change.
func TestSetPortEncapsKeepsColumnsItDoesNotMonitor(t *testing.T) {
	e := newEnv(t)
	e.startNorthd()
	e.nbctl("ls-add", sw)
	e.nbctl("lsp-add", sw, "ns_pod-a", "--", "lsp-set-type", "ns_pod-a", "remote",
		"--", "lsp-set-addresses", "ns_pod-a", "0a:58:cb:cb:00:05 203.203.0.5",
		"--", "lsp-set-options", "ns_pod-a", "requested-chassis=node-a")
	e.sbctl("chassis-add", "node-a", "geneve", "10.0.0.2")
	e.sbctl("--", "--id=@e", "create", "Encap", "type=geneve", `ip="10.0.0.3"`, "chassis_name=node-a",
		"options:csum=true", "--", "add", "Chassis", "node-a", "encaps", "@e")
	e.nbctl("--timeout=60", "--wait=sb", "sync")
	columns := []string{"datapath", "tunnel_key", "type", "mac", "options", "logical_port"}
	binding := func() string {
		return e.sbctl("--columns="+strings.Join(columns, ","), "list", "Port_Binding", "ns_pod-a")
	}
	before := binding()
	if !strings.Contains(before, "0a:58:cb:cb:00:05") || !strings.Contains(before, "remote") {
		t.Fatalf("ovn-northd's binding lacks the port's columns:\n%s", before)
	}
	ports := map[string]multivtep.PortEncap{"ns_pod-a": {Chassis: "node-a", EncapIP: "10.0.0.3"}}
	e.setPortEncapsOnceBound(ports)
	want := e.sbctl("--bare", "--columns=_uuid", "find", "Encap", `ip="10.0.0.3"`)
	if got := e.sbctl("get", "Port_Binding", "ns_pod-a", "encap"); got != want {
		t.Errorf("Port_Binding encap = %s, want the 10.0.0.3 Encap %s", got, want)
	}
	if after := binding(); after != before {
		t.Errorf("SetPortEncaps changed columns it does not set:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if n, err := e.c.SetPortEncaps(e.ctx, "net", ports); err != nil || n != 0 {
		t.Errorf("second SetPortEncaps = %d, %v; want 0 operations", n, err)
	}
}

// setPortEncapsOnceBound calls SetPortEncaps until ovn-northd has bound the
// ports and the Southbound cache shows their bindings, and fails the test
// unless it then sets one binding.
func (e *env) setPortEncapsOnceBound(ports map[string]multivtep.PortEncap) {
	e.t.Helper()
	var (
		n   int
		err error
	)
	for try := 0; try < 200; try++ { // the SB monitor may trail northd's sync by a moment
		n, err = e.c.SetPortEncaps(e.ctx, "net", ports)
		if err == nil || !strings.Contains(err.Error(), "no ") {
			break
		}
		e.nbctl("--wait=sb", "sync")
		time.Sleep(25 * time.Millisecond)
	}
	if err != nil || n != 1 {
		e.t.Fatalf("SetPortEncaps = %d, %v", n, err)
	}
}
