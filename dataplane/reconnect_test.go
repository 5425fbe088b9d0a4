package dataplane

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/udnkit/udnkit/dataplane/ovsdbserver"
)

// ovsdb-server restarts between and during applies: the client reconnects,
// resynchronises its cache and converges without duplicating rows.
func TestClientReconnectsAndConverges(t *testing.T) {
	e := newEnv(t)
	net, nodes := exampleV4()
	d := mustLayer2(t, net, nodes)
	e.apply(d)

	if err := e.db.NB.Restart(e.ctx); err != nil {
		t.Fatal(err)
	}
	if ops := e.apply(d); ops != 0 {
		t.Errorf("apply after a restart sent %d operations, want 0 (cache resynchronised)", ops)
	}

	// The server is down when the apply starts; it comes back while Apply waits.
	e.db.NB.Stop()
	d = mustLayer2(t, net, nodes[:2])
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(e.ctx, time.Minute)
		defer cancel()
		_, err := e.c.Apply(ctx, d)
		done <- err
	}()
	if err := e.db.NB.Restart(e.ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("apply across a restart: %v", err)
	}
	ports := e.rows("Logical_Router_Port")
	if _, ok := ports["trtor-"+gr3]; ok {
		t.Error("node3's port survived the apply across the restart")
	}
	if len(ports) != 4 {
		t.Errorf("router ports after the restart: %v, want rtos, trtor x2, rtotr", keys(ports))
	}
	if ops := e.apply(d); ops != 0 {
		t.Errorf("second apply sent %d operations, want 0", ops)
	}
}

func TestClientRejectsBadAddresses(t *testing.T) {
	for _, addr := range []string{"/var/run/ovnnb.sock", "ssl:127.0.0.1:6641", ""} {
		if _, err := NewClient(context.Background(), addr, "unix:/x"); err == nil {
			t.Errorf("NewClient(%q) accepted", addr)
		}
	}
}

// ovn-northd accepts the programmed Northbound database and makes the
// transit router what OVN defines: the routers and the switch become
// datapaths with the requested tunnel keys, the local trtor- port is a patch
// port, and each remote trtor- port, whose requested-chassis names a chassis
// registered as remote (other_config:is-remote=true), is bound as a "remote"
// port to that chassis with its key (10 + node ID).
func TestNorthdAcceptsLayer2Topology(t *testing.T) {
	e := newEnv(t)
	e.startNorthd()
	net, nodes := exampleV4()
	for _, n := range nodes[1:] {
		if err := ovsdbserver.AddChassis(e.db.SB, n.Chassis, n.Name, true, "172.18.0."+strconv.Itoa(n.ID)); err != nil {
			t.Fatal(err)
		}
	}
	d := mustLayer2(t, net, nodes)
	e.apply(d)
	e.nbctl("--timeout=60", "--wait=sb", "sync")
	datapaths := lines(e.sbctl("--columns=external_ids,tunnel_key", "--format=csv", "--data=bare", "--no-headings", "list", "Datapath_Binding"))
	for name, key := range map[string]string{gr1: "", sw: ",16711685", tr: ",16715780"} {
		found := false
		for _, dp := range datapaths {
			found = found || (strings.Contains(dp, "name="+name+",") || strings.Contains(dp, "name="+name+" ")) && strings.HasSuffix(dp, key)
		}
		if !found {
			t.Errorf("no datapath for %s with tunnel key %q; have %v", name, key, datapaths)
		}
	}
	if len(datapaths) != 3 {
		t.Errorf("datapaths: %v, want the GR, the switch and the transit router", datapaths)
	}
	chassisUUID := func(name string) string {
		return e.sbctl("--bare", "--columns=_uuid", "find", "Chassis", "name="+name)
	}
	want := map[string]string{
		"rtotr-" + gr1: "l3gateway", rtos: "patch 1", "stotr-" + sw: "patch",
		"trtor-" + gr1: "patch 12",
		"trtor-" + gr2: "remote 13 " + chassisUUID(nodes[1].Chassis),
		"trtor-" + gr3: "remote 14 " + chassisUUID(nodes[2].Chassis),
	}
	for port, w := range want {
		got := strings.Join(strings.Fields(e.sbctl("--bare", "--columns=type,tunnel_key,chassis", "find", "Port_Binding", "logical_port="+port)), " ")
		if !strings.HasPrefix(got+" ", w+" ") || (strings.HasPrefix(w, "remote") && got != w) {
			t.Errorf("Port_Binding %s: %q, want %q", port, got, w)
		}
	}
}

// The client speaks tcp: endpoints too (--ovn-nb-address=tcp:HOST:PORT).
func TestClientOverTCP(t *testing.T) {
	e := newEnv(t)
	if err := e.db.NB.ServeTCP(e.ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.db.SB.ServeTCP(e.ctx); err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(e.ctx, e.db.NB.TCPAddress(), e.db.SB.TCPAddress())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	net, nodes := exampleV4()
	d := mustLayer2(t, net, nodes)
	res, err := c.Apply(e.ctx, d)
	if err != nil || res.Operations == 0 {
		t.Fatalf("apply over TCP: %+v, %v", res, err)
	}
	if _, ok := e.rows("Logical_Router_Port")["trtor-"+gr3]; !ok {
		t.Error("rows applied over TCP are not in the database")
	}
	// The unix-socket client's monitor receives the same rows: nothing left to do.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ops, err := e.c.eng.Plan(d)
		if err != nil {
			t.Fatal(err)
		}
		if len(ops) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the unix-socket client still plans %d operations after the TCP apply", len(ops))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
