package dataplane

import (
	"context"
	"strings"
	"testing"
	"time"
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

// ovn-northd accepts the programmed Northbound database: the routers and the
// switch become datapaths with the requested tunnel keys and their ports get
// port bindings. (23.03's northd treats remote transit router ports as plain
// patch ports, so only what it implements is asserted.)
func TestNorthdAcceptsLayer2Topology(t *testing.T) {
	e := newEnv(t)
	e.startNorthd()
	net, nodes := exampleV4()
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
	bindings := lines(e.sbctl("--columns=logical_port", "--data=bare", "--no-headings", "list", "Port_Binding"))
	want := []string{"rtotr-" + gr1, rtos, "stotr-" + sw, "trtor-" + gr1, "trtor-" + gr2, "trtor-" + gr3}
	for _, w := range want {
		found := false
		for _, b := range bindings {
			found = found || b == w
		}
		if !found {
			t.Errorf("no Port_Binding for %s; have %v", w, bindings)
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
		ops, err := e.c.Plan(d)
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
