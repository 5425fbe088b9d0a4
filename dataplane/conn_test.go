package dataplane

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/ovsdbserver"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/ovnk"
)

// The client reaches ovsdb-server over ssl: with a client certificate and a
// CA made here; a CA that did not sign the server's certificate, a server
// name the certificate does not carry and a client certificate the server
// does not trust are all refused.
func TestClientOverSSL(t *testing.T) {
	e := newEnv(t)
	pki, err := ovsdbserver.NewPKI(e.dir, "ovn")
	if err != nil {
		t.Fatal(err)
	}
	other, err := ovsdbserver.NewPKI(e.dir, "other")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.db.NB.ServeSSL(e.ctx, pki); err != nil {
		t.Fatal(err)
	}
	if err := e.db.SB.ServeSSL(e.ctx, pki); err != nil {
		t.Fatal(err)
	}
	good := TLS{CertFile: pki.ClientCert, KeyFile: pki.ClientKey, CAFile: pki.CACert}
	cfg := Config{NBAddress: e.db.NB.SSLAddress(), SBAddress: e.db.SB.SSLAddress(), TLS: good}

	c, err := Dial(e.ctx, cfg)
	if err != nil {
		t.Fatalf("ssl with the right CA and client certificate: %v", err)
	}
	net, nodes := exampleV4()
	d := mustLayer2(t, net, nodes)
	if res, err := c.Apply(e.ctx, d); err != nil || res.Operations == 0 {
		t.Fatalf("apply over ssl: %+v, %v", res, err)
	}
	c.Close()
	if _, ok := e.rows("Logical_Router_Port")["trtor-"+gr3]; !ok {
		t.Error("rows applied over ssl are not in the database")
	}

	named := cfg
	named.TLS.NBServerName, named.TLS.SBServerName = ovsdbserver.ServerDNSName, ovsdbserver.ServerDNSName
	if c, err := Dial(e.ctx, named); err != nil {
		t.Errorf("ssl checking the certificate's DNS name: %v", err)
	} else {
		c.Close()
	}

	for name, tc := range map[string]struct {
		tls  TLS
		want string
	}{
		"wrong CA":          {TLS{CertFile: pki.ClientCert, KeyFile: pki.ClientKey, CAFile: other.CACert}, "unknown authority"},
		"wrong server name": {TLS{CertFile: pki.ClientCert, KeyFile: pki.ClientKey, CAFile: pki.CACert, NBServerName: "ovnsb.elsewhere"}, "ovnsb.elsewhere"},
		"untrusted client":  {TLS{CertFile: other.ClientCert, KeyFile: other.ClientKey, CAFile: pki.CACert}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			bad := cfg
			bad.TLS = tc.tls
			c, err := Dial(e.ctx, bad)
			if err == nil {
				c.Close()
				t.Fatal("connected")
			}
			if !strings.Contains(err.Error(), "--ovn-nb-address") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q should name --ovn-nb-address and %q", err, tc.want)
			}
		})
	}

	// The manager's path: Connect retries, Check reports why it cannot connect.
	bad := cfg
	bad.TLS.CAFile = other.CACert
	c, err = New(bad)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Check(nil); err != nil {
		t.Errorf("a client that does not try to connect (a standby replica) reports %v", err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 1500*time.Millisecond)
	defer cancel()
	if err := c.Connect(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Connect with a wrong CA returned %v, want the context's deadline", err)
	}
	if err := c.Check(nil); err == nil || !strings.Contains(err.Error(), "OVN NB database ssl:127.0.0.1:") ||
		!strings.Contains(err.Error(), "unknown authority") {
		t.Errorf("Check while the CA is wrong: %v", err)
	}
	if c.Connected() {
		t.Error("Connected with a wrong CA")
	}
}

func TestConfigRejectsBadTLS(t *testing.T) {
	dir := t.TempDir()
	pki, err := ovsdbserver.NewPKI(dir, "ovn")
	if err != nil {
		t.Fatal(err)
	}
	garbage := dir + "/garbage.pem"
	if err := os.WriteFile(garbage, []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	ssl := "ssl:127.0.0.1:6641"
	for name, tc := range map[string]struct {
		cfg  Config
		want string
	}{
		"ssl without TLS":  {Config{NBAddress: ssl, SBAddress: "unix:/x"}, "ssl: endpoints need --ovn-client-cert"},
		"missing key":      {Config{NBAddress: ssl, SBAddress: ssl, TLS: TLS{CertFile: pki.ClientCert, CAFile: pki.CACert}}, "needs all of"},
		"missing CA file":  {Config{NBAddress: ssl, SBAddress: ssl, TLS: TLS{CertFile: pki.ClientCert, KeyFile: pki.ClientKey, CAFile: dir + "/nope.pem"}}, "--ovn-ca-cert"},
		"CA not PEM":       {Config{NBAddress: ssl, SBAddress: ssl, TLS: TLS{CertFile: pki.ClientCert, KeyFile: pki.ClientKey, CAFile: garbage}}, "no PEM certificate"},
		"key of other crt": {Config{NBAddress: ssl, SBAddress: ssl, TLS: TLS{CertFile: pki.ClientCert, KeyFile: pki.ServerKey, CAFile: pki.CACert}}, "--ovn-client-cert/--ovn-client-key"},
		"relative socket":  {Config{NBAddress: "unix:ovnnb.sock", SBAddress: "unix:/x"}, "must be absolute"},
		"no port":          {Config{NBAddress: "tcp:127.0.0.1:6641,tcp:127.0.0.2", SBAddress: "unix:/x"}, `endpoint "tcp:127.0.0.2"`},
		"unknown scheme":   {Config{NBAddress: "udp:127.0.0.1:6641", SBAddress: "unix:/x"}, "must start with unix:, tcp: or ssl:"},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := New(tc.cfg)
			if err == nil {
				c.Close()
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
	eps, err := ParseEndpoints("--ovn-nb-address", "ssl:10.0.0.1:6641, ssl:[fd00::2]:6641,unix:/run/ovn/nb.sock")
	if err != nil || len(eps) != 3 || eps[1] != "ssl:[fd00::2]:6641" {
		t.Errorf("ParseEndpoints: %q, %v", eps, err)
	}
}

// raftNodes are n nodes starting at node offset+1; every tenth is local, so
// the topology has several gateway routers (Logical_Router has no name index:
// a stale cache would duplicate them).
func raftNodes(offset, n int) []topology.Layer2Node {
	nodes := make([]topology.Layer2Node, n)
	for i := range nodes {
		k := offset + i + 1
		nodes[i] = topology.Layer2Node{Name: "node" + strconv.Itoa(k), Chassis: chassisOf("node" + strconv.Itoa(k)), ID: k + 1, TopologyVersion: ovnk.Layer2TopologyVersionTransitRouter, Local: k%10 == 1}
	}
	return nodes
}

// raftEnv is a 3-member RAFT Northbound cluster, a plain Southbound and a
// client using the cluster's endpoint list.
type raftEnv struct {
	cluster *ovsdbserver.Cluster
	cfg     Config
	c       *Client
	ctx     context.Context
}

func newRaftEnv(tb testing.TB) *raftEnv {
	testenv.Real(tb, "ovsdb-server")
	tb.Helper()
	dir, err := os.MkdirTemp("", "ovnr")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	tb.Cleanup(func() { cancel(); _ = os.RemoveAll(dir) })
	cluster, err := ovsdbserver.StartCluster(ctx, dir, ovsdbserver.Northbound, 3)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(cluster.Stop)
	sb, err := ovsdbserver.Start(ctx, dir, ovsdbserver.Southbound)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(sb.Stop)
	cfg := Config{NBAddress: cluster.Address(), SBAddress: sb.Address()}
	c, err := Dial(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	return &raftEnv{cluster: cluster, cfg: cfg, c: c, ctx: ctx}
}

// failover is what one leader loss costs.
type failover struct {
	leader int
	// inflight is the result of the apply during which the leader died.
	inflight error
	// elected and converged are measured from the kill: a member reports
	// itself leader; the client is connected to it and applying d again
	// (as a reconciler would, retrying on error) plans nothing.
	elected, converged time.Duration
	applies            int
}

// killLeaderDuring starts applying d, SIGKILLs the leader after delay, and
// applies d again until it converges; then it restarts the killed member.
func (e *raftEnv) killLeaderDuring(tb testing.TB, d *rows.Desired, delay time.Duration) failover {
	tb.Helper()
	leader, err := e.cluster.Leader(e.ctx)
	if err != nil {
		tb.Fatal(err)
	}
	f := failover{leader: leader}
	dead := e.cluster.Members[leader].TCPAddress()
	inflight := make(chan error, 1)
	go func() {
		_, err := e.c.Apply(e.ctx, d)
		inflight <- err
	}()
	time.Sleep(delay)
	e.cluster.Members[leader].Stop()
	killed := time.Now()
	elected := make(chan time.Duration, 1)
	go func() {
		_, _ = e.cluster.Leader(e.ctx)
		elected <- time.Since(killed)
	}()
	f.inflight = <-inflight
	for {
		f.applies++
		ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
		res, err := e.c.Apply(ctx, d)
		cancel()
		if err == nil && res.Operations == 0 && e.c.Connected() && e.c.eng.NB.CurrentEndpoint() != dead {
			break
		}
		if e.ctx.Err() != nil {
			tb.Fatalf("no convergence after the leader's loss: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // a reconciler's requeue
	}
	f.converged = time.Since(killed)
	f.elected = <-elected
	if err := e.cluster.Members[leader].Restart(e.ctx); err != nil {
		tb.Fatalf("restarting the killed member: %v", err)
	}
	return f
}

// A 3-member RAFT Northbound cluster loses its leader (SIGKILL) while an
// apply is in flight, four times at different moments of the apply. Applying
// again as a reconciler would (retry on error) converges to exactly the
// desired rows: a new client planning against the new leader has nothing to
// do, and every table holds exactly the desired number of rows (no duplicate
// left by a transaction that committed after all, none stale). The times
// are logged, not asserted.
func TestRaftLeaderLossMidApplyConverges(t *testing.T) {
	e := newRaftEnv(t)
	net := benchNetwork()
	const n, shift = 300, 150
	if _, err := e.c.Apply(e.ctx, mustLayer2(t, net, raftNodes(0, n))); err != nil {
		t.Fatal(err)
	}
	// The duration of one apply that moves the window by shift nodes on a
	// healthy cluster: the kills below land at fractions of it.
	started := time.Now()
	if _, err := e.c.Apply(e.ctx, mustLayer2(t, net, raftNodes(shift, n))); err != nil {
		t.Fatal(err)
	}
	full := time.Since(started)
	t.Logf("apply moving %d of %d nodes on a healthy 3-member cluster: %v", shift, n, full.Round(time.Millisecond))

	for round, at := range []float64{0.1, 0.4, 0.7, 1.0} {
		// Each round moves the node window: nodes leave (rows deleted), nodes
		// join (rows inserted), the local nodes change (routers come and go).
		d := mustLayer2(t, net, raftNodes(shift*(round+2), n))
		f := e.killLeaderDuring(t, d, time.Duration(at*float64(full)))
		t.Logf("round %d: leader m%d killed at %.0f%% of an apply (the in-flight apply %s); new leader after %v, converged %v after the kill, %d applies",
			round, f.leader+1, at*100, errString(f.inflight), f.elected.Round(time.Millisecond), f.converged.Round(time.Millisecond), f.applies)
		checkExactly(t, e.ctx, e.cfg, d)
	}
}

// BenchmarkRaftLeaderFailover measures what a leader loss in the middle of
// an apply of a 300-node Layer2 topology costs: s-to-leader (RAFT election,
// ovsdb-server's default 1 s election timer) and s-to-converge (until the
// client is on the new leader and has nothing left to apply).
func BenchmarkRaftLeaderFailover(b *testing.B) {
	e := newRaftEnv(b)
	net := benchNetwork()
	const n, shift = 300, 150
	if _, err := e.c.Apply(e.ctx, mustLayer2(b, net, raftNodes(0, n))); err != nil {
		b.Fatal(err)
	}
	var elected, converged time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f := e.killLeaderDuring(b, mustLayer2(b, net, raftNodes(shift*(i+1), n)), 30*time.Millisecond)
		elected += f.elected
		converged += f.converged
	}
	b.ReportMetric(elected.Seconds()/float64(b.N), "s-to-leader")
	b.ReportMetric(converged.Seconds()/float64(b.N), "s-to-converge")
}

func errString(err error) string {
	if err == nil {
		return "succeeded"
	}
	if len(err.Error()) > 120 {
		return "failed: " + err.Error()[:120] + "..."
	}
	return "failed: " + err.Error()
}

// checkExactly connects a fresh client (its cache comes straight from the
// current leader) and checks that the database holds exactly d.
func checkExactly(t *testing.T, ctx context.Context, cfg Config, d *rows.Desired) {
	t.Helper()
	fresh, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if err := fresh.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if ops, err := fresh.eng.Plan(d); err != nil || len(ops) != 0 {
		t.Errorf("a fresh client plans %d operations (%v), want 0", len(ops), err)
	}
	want := map[string]int{nbdb.LogicalRouterTable: len(d.Routers), nbdb.LogicalSwitchTable: len(d.Switches),
		nbdb.DHCPOptionsTable: len(d.DHCPOptions)}
	for _, r := range d.Routers {
		want[nbdb.LogicalRouterPortTable] += len(r.Ports)
		want[nbdb.LogicalRouterStaticRouteTable] += len(r.Routes)
		want[nbdb.LogicalRouterPolicyTable] += len(r.Policies)
		want[nbdb.NATTable] += len(r.NATs)
	}
	for _, s := range d.Switches {
		want[nbdb.LogicalSwitchPortTable] += len(s.Ports)
	}
	for table, n := range want {
		if got := fresh.eng.NB.Cache().Table(table).Len(); got != n {
			t.Errorf("%s holds %d rows, want exactly %d", table, got, n)
		}
	}
	names := map[string]int{}
	for _, m := range fresh.eng.NB.Cache().Table(nbdb.LogicalRouterTable).RowsShallow() {
		names[m.(*nbdb.LogicalRouter).Name]++
	}
	for name, k := range names {
		if k != 1 {
			t.Errorf("router %s exists %d times", name, k)
		}
	}
}

// The database changes while the client is disconnected (here: edited
// offline with ovsdb-tool while the server is down, as a restore or another
// writer could). An Apply issued during the outage waits for the reconnect
// and plans against the resynchronised cache: it repairs the change instead
// of trusting the cache from before the outage (libovsdb's Connected() stays
// true while it reconnects, and that cache says nothing needs doing).
func TestApplyDuringOutagePlansAgainstResynchronisedCache(t *testing.T) {
	e := newEnv(t)
	net, nodes := exampleV4()
	d := mustLayer2(t, net, nodes)
	e.apply(d)
	wantMAC := e.rows("Logical_Router_Port", "mac")[rtos]

	e.db.NB.Stop()
	txn := `["OVN_Northbound",{"op":"update","table":"Logical_Router_Port","where":[["name","==","` + rtos + `"]],"row":{"mac":"0a:58:00:00:00:99"}}]`
	if out, err := ovsdbserver.Command("ovsdb-tool", "transact", e.db.NB.File(), txn).CombinedOutput(); err != nil {
		t.Fatalf("ovsdb-tool transact: %v: %s", err, out)
	}
	done := make(chan engine.Result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(e.ctx, time.Minute)
		defer cancel()
		res, err := e.c.Apply(ctx, d)
		if err != nil {
			t.Errorf("apply during the outage: %v", err)
		}
		done <- res
	}()
	time.Sleep(300 * time.Millisecond) // the apply starts while the server is down
	if err := e.db.NB.Restart(e.ctx); err != nil {
		t.Fatal(err)
	}
	if res := <-done; res.Operations == 0 {
		t.Error("the apply during the outage planned nothing: it trusted the cache from before the outage")
	}
	if got := e.rows("Logical_Router_Port", "mac")[rtos]; got != wantMAC {
		t.Errorf("%s mac after the apply: %s, want %s", rtos, got, wantMAC)
	}
}

// One connection attempt is bounded by Config.ConnectTimeout: against a
// server that accepts and never answers (a hung ovsdb-server) Dial gives up
// after it, naming the flag; unset, the bound is DefaultConnectTimeout,
// which leaves room for the initial copy of a large database.
func TestConnectTimeoutBoundsAnAttempt(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		var held []net.Conn // read nothing, answer nothing
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	hung := "tcp:" + l.Addr().String()
	started := time.Now()
	_, err = Dial(context.Background(), Config{NBAddress: hung, SBAddress: hung, ConnectTimeout: 500 * time.Millisecond})
	took := time.Since(started)
	if err == nil || !strings.Contains(err.Error(), `--ovn-nb-address "`+hung+`": connect`) {
		t.Errorf("Dial to a server that never answers: %v", err)
	}
	if took < 400*time.Millisecond || took > 5*time.Second {
		t.Errorf("Dial gave up after %v, want about the 500ms ConnectTimeout", took)
	}
	c, err := New(Config{NBAddress: hung, SBAddress: hung})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, db := range c.dbs {
		if db.Timeout != DefaultConnectTimeout {
			t.Errorf("%s: timeout %v without ConnectTimeout, want %v", db.Label, db.Timeout, DefaultConnectTimeout)
		}
	}
}
