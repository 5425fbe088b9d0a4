// Package nbtest serves the Northbound schema from libovsdb's in-memory
// database (pure Go: no ovsdb-server) and connects engines to it the way
// the dataplane's client does: the same models, monitors and cache event
// handlers (package ovsconn). It lets the engine's layers be tested under
// -short. Only tests import it.
package nbtest

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/ovn-kubernetes/libovsdb/cache"
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/database/inmemory"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"
	"github.com/ovn-kubernetes/libovsdb/server"

	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/dataplane/internal/ovsconn"
	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// Serve starts an empty Northbound database (its one NB_Global row, as
// ovn-nbctl init leaves it) served on a unix socket in a temporary
// directory, stopped when tb ends, and returns its address ("unix:…").
func Serve(tb testing.TB) string {
	tb.Helper()
	clientModel, err := nbdb.FullDatabaseModel()
	if err != nil {
		tb.Fatal(err)
	}
	dbModel, errs := model.NewDatabaseModel(nbdb.Schema(), clientModel)
	if len(errs) > 0 {
		tb.Fatal(errs)
	}
	logger := logr.Discard()
	db := inmemory.NewDatabase(map[string]model.ClientDBModel{clientModel.Name(): clientModel}, &logger)
	srv, err := server.NewOvsdbServer(db, &logger, dbModel)
	if err != nil {
		tb.Fatal(err)
	}
	sock := filepath.Join(tb.TempDir(), "nb.sock")
	served := make(chan error, 1)
	go func() { served <- srv.Serve("unix", sock) }()
	deadline := time.Now().Add(10 * time.Second)
	for !srv.Ready() {
		select {
		case err := <-served:
			tb.Fatalf("in-memory Northbound server: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatal("in-memory Northbound server: not ready within 10 s")
		}
		time.Sleep(time.Millisecond)
	}
	tb.Cleanup(srv.Close)
	addr := "unix:" + sock
	Transact(tb, addr, ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.NBGlobalTable, Row: ovsdb.Row{}})
	return addr
}

// Dial connects to addr as the dataplane's client connects to the
// Northbound database: its model, its monitors, handlers following the
// cache's events (and dropped, when set, told of a dropped event). The
// connection closes when tb ends.
func Dial(tb testing.TB, addr string, dropped func(), handlers ...cache.EventHandler) client.Client {
	tb.Helper()
	db := open(tb, addr, dropped, handlers)
	connect(tb, db)
	return db.API
}

// open builds the connection Dial connects.
func open(tb testing.TB, addr string, dropped func(), handlers []cache.EventHandler) *ovsconn.DB {
	tb.Helper()
	db, err := ovsconn.Open(ovsconn.Options{Label: "nb", Flag: "--ovn-nb-address", Address: addr, Timeout: 10 * time.Second,
		Model: nbdb.FullDatabaseModel, Monitor: schema.Monitor(schema.Northbound), Handlers: handlers, Dropped: dropped})
	if err != nil {
		tb.Fatal(err)
	}
	return db
}

// connect connects db until tb ends.
func connect(tb testing.TB, db *ovsconn.DB) {
	tb.Helper()
	if err := db.Connect(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(db.Close)
}

// Engine is an engine connected to the database at addr as the
// dataplane's client connects one (hooks: the tests', nil for none): its
// NB is set before the first event.
func Engine(tb testing.TB, addr string, hooks *engine.Hooks) *engine.Engine {
	tb.Helper()
	e := engine.New(hooks)
	db := open(tb, addr, e.Index.Dropped, []cache.EventHandler{e.Index, e.Healer()})
	e.NB = db.API
	connect(tb, db)
	return e
}

// Transact sends ops to the database at addr on a connection of its own
// (another client's edit) and fails tb unless every one succeeds.
func Transact(tb testing.TB, addr string, ops ...ovsdb.Operation) []ovsdb.OperationResult {
	tb.Helper()
	c := plainClient(tb, addr)
	res, err := c.Transact(context.Background(), ops...)
	if err == nil {
		_, err = ovsdb.CheckOperationResults(res, ops)
	}
	if err != nil {
		tb.Fatalf("transact %v: %v", ops, err)
	}
	return res
}

// plainClient is a connection to addr with no monitor, closed when tb ends.
func plainClient(tb testing.TB, addr string) client.Client {
	tb.Helper()
	m, err := nbdb.FullDatabaseModel()
	if err != nil {
		tb.Fatal(err)
	}
	c, err := client.NewOVSDBClient(m, client.WithEndpoint(addr))
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	return c
}

// Rows are a database's rows as a test compares them: by table, one string
// per row of its columns but _uuid, with every UUID a row refers to replaced
// by the referred row's own contents (recursively), sorted.
type Rows map[string][]string

// Snapshot reads every Northbound table's rows from the database at addr.
func Snapshot(tb testing.TB, addr string) Rows {
	tb.Helper()
	c := plainClient(tb, addr)
	defer c.Close()
	if _, err := c.MonitorAll(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return snapshot(tb, c)
}

// String is the rows, one table per paragraph, for a failure message.
func (r Rows) String() string {
	var out string
	for _, t := range sortedKeys(r) {
		out += fmt.Sprintf("%s (%d):\n", t, len(r[t]))
		for _, row := range r[t] {
			out += "  " + row + "\n"
		}
	}
	return out
}

// SwitchPorts reads each switch of the database at addr: its name, counted
// (a name held by two switches counts two), and its ports' names, sorted.
func SwitchPorts(tb testing.TB, addr string) (count map[string]int, ports map[string][]string) {
	tb.Helper()
	c := plainClient(tb, addr)
	defer c.Close()
	if _, err := c.MonitorAll(context.Background()); err != nil {
		tb.Fatal(err)
	}
	names := map[string]string{}
	for uuid, m := range c.Cache().Table(nbdb.LogicalSwitchPortTable).Rows() {
		names[uuid] = m.(*nbdb.LogicalSwitchPort).Name
	}
	count, ports = map[string]int{}, map[string][]string{}
	for _, m := range c.Cache().Table(nbdb.LogicalSwitchTable).Rows() {
		sw := m.(*nbdb.LogicalSwitch)
		count[sw.Name]++
		for _, u := range sw.Ports {
			ports[sw.Name] = append(ports[sw.Name], names[u])
		}
		slices.Sort(ports[sw.Name])
	}
	return count, ports
}
