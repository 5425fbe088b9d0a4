package dataplane

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/ovsdbserver"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/internal/testenv"
)

// Without a logger, controller-runtime warns once on the output 30 s after
// the first log call, which can land inside a benchmark's result line.
func init() { ctrllog.SetLogger(logr.Discard()) }

// indexedTables: the tables the index follows (package schema).
var indexedTables = schema.Indexed()

// env is one fresh pair of real OVN databases and a connected client.
type env struct {
	t   testing.TB
	dir string
	db  *ovsdbserver.Pair
	c   *Client
	ctx context.Context
	// hooks are the client's (engine.Hooks): a test sets them between
	// Applies.
	hooks *engine.Hooks
}

func newEnv(t testing.TB) *env {
	testenv.Real(t, "ovsdb-server")
	t.Helper()
	// Unix socket paths are limited to ~108 bytes: keep the directory short.
	dir, err := os.MkdirTemp("", "ovn")
	if err != nil {
		t.Fatal(err)
	}
	// A benchmark runs as many iterations as fit its -benchtime, each with
	// setup outside the timer (a large network applied and removed): the
	// faster its Applies, the longer it runs.
	timeout := 2 * time.Minute
	if _, ok := t.(*testing.B); ok {
		timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	db, err := ovsdbserver.StartPair(ctx, dir)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	hooks := &engine.Hooks{}
	c, err := dial(ctx, Config{NBAddress: db.NB.Address(), SBAddress: db.SB.Address()}, hooks)
	if err != nil {
		db.Stop()
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		db.Stop()
		cancel()
		_ = os.RemoveAll(dir)
	})
	return &env{t: t, dir: dir, db: db, c: c, ctx: ctx, hooks: hooks}
}

// apply applies and fails the test on error; it returns the operation count.
func (e *env) apply(d *rows.Desired) int {
	e.t.Helper()
	e.settle()
	res, err := e.c.Apply(e.ctx, d)
	if err != nil {
		e.t.Fatalf("apply: %v", err)
	}
	return res.Operations
}

// nbctl runs ovn-nbctl against the test's Northbound database, as a user would.
func (e *env) nbctl(args ...string) string {
	e.t.Helper()
	return run(e.t, "ovn-nbctl", append([]string{"--db=" + e.db.NB.Address()}, args...)...)
}

func (e *env) sbctl(args ...string) string {
	e.t.Helper()
	return run(e.t, "ovn-sbctl", append([]string{"--db=" + e.db.SB.Address()}, args...)...)
}

func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := ovsdbserver.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// rows lists a table's named rows as "name -> column values" with ovn-nbctl,
// e.g. rows("Logical_Router_Port", "mac", "networks", "peer", "options").
func (e *env) rows(table string, columns ...string) map[string]string {
	e.t.Helper()
	out := e.nbctl("--format=csv", "--data=bare", "--no-headings",
		"--columns=name,"+strings.Join(columns, ","), "list", table)
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if line == "" {
			continue
		}
		name, rest, _ := strings.Cut(line, ",")
		m[name] = rest
	}
	return m
}

// lines splits ovn-nbctl output into trimmed, whitespace-normalised, sorted lines.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		l = strings.Join(strings.Fields(l), " ")
		if l != "" {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

func wantRows(t *testing.T, what string, got map[string]string, want map[string]string) {
	t.Helper()
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("%s: row %q missing; have %v", what, name, keys(got))
			continue
		}
		if g != w {
			t.Errorf("%s %q:\n got %s\nwant %s", what, name, g, w)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: unexpected row %q: %s", what, name, got[name])
		}
	}
}

func wantLines(t *testing.T, what, got string, want ...string) {
	t.Helper()
	g := lines(got)
	w := lines(strings.Join(want, "\n"))
	if strings.Join(g, "\n") != strings.Join(w, "\n") {
		t.Errorf("%s:\n got:\n  %s\nwant:\n  %s", what, strings.Join(g, "\n  "), strings.Join(w, "\n  "))
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// mustLayer2 computes a Layer2 topology that the test expects to be valid.
func mustLayer2(t testing.TB, net topology.Layer2Network, nodes []topology.Layer2Node) *rows.Desired {
	t.Helper()
	d, err := topology.Layer2Topology(net, nodes)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// startNorthd runs ovn-northd between the test's databases until the test ends.
func (e *env) startNorthd() {
	e.t.Helper()
	northd, err := ovsdbserver.StartNorthd(e.dir, e.db.NB, e.db.SB)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(northd.Stop)
}

// settle waits until the client's cache holds as many rows as the database
// for every table udnkit writes, and its index as many as the cache (in
// tests: the same rows), so rows a test created with ovn-nbctl (another
// client) are visible to the next plan.
func (e *env) settle() {
	e.t.Helper()
	for _, table := range []string{"Logical_Router", "Logical_Router_Port", "Logical_Switch", "Logical_Switch_Port",
		"Logical_Router_Static_Route", "Logical_Router_Policy", "NAT", "DHCP_Options", "Address_Set", "Gateway_Chassis"} {
		out := e.nbctl("--columns=_uuid", "--data=bare", "--no-headings", "list", table)
		want := len(strings.Fields(out))
		for deadline := time.Now().Add(30 * time.Second); e.c.eng.NB.Cache().Table(table).Len() != want; {
			if time.Now().After(deadline) {
				e.t.Fatalf("cache holds %d %s rows, the database %d", e.c.eng.NB.Cache().Table(table).Len(), table, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if _, ok := e.t.(*testing.T); ok {
		waitIndexed(e.t, e.c)
		return
	}
	// Benchmarks: the index catches up (comparing it row by row would take
	// longer than the Applies measured).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		unlock := e.c.eng.Index.Read(e.c.eng.NB)
		behind := ""
		for _, table := range indexedTables {
			if n, want := e.c.eng.Index.Len(table), e.c.eng.NB.Cache().Table(table).Len(); n != want {
				behind = fmt.Sprintf("the index holds %d %s rows, the cache %d", n, table, want)
			}
		}
		unlock()
		if behind == "" {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatal(behind)
		}
	}
}

// dstIPRoute is a dst-ip static route to prefix through nexthop.
func dstIPRoute(prefix, nexthop string) nbdb.LogicalRouterStaticRoute {
	policy := nbdb.LogicalRouterStaticRoutePolicyDstIP
	return nbdb.LogicalRouterStaticRoute{IPPrefix: prefix, Nexthop: nexthop, Policy: &policy}
}
