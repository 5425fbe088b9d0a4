package dataplane

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ovn-kubernetes/libovsdb/cache"
	"github.com/ovn-kubernetes/libovsdb/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/dataplane/internal/ovsconn"
	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/sbdb"
)

// Client holds one reconnecting libovsdb connection to each OVN database, with
// a monitor-backed cache of the tables udnkit reads, and the engine that
// applies desired rows through the Northbound one (apply.go forwards to it).
type Client struct {
	// eng applies desired rows through the Northbound connection.
	eng *engine.Engine
	// sb is the Southbound connection (SetPortEncaps); encaps follows the
	// bindings SetPortEncaps set (encapwatch.go).
	sb     client.Client
	encaps *encapWatch

	dbs []*ovsconn.DB
	// connecting is set once Connect runs (on the leader, in the manager).
	connecting atomic.Bool
	stopWatch  chan struct{}
	watchOnce  sync.Once
	closeOnce  sync.Once
}

// New validates cfg and builds a client that is not connected yet: Connect
// connects it. Only the configuration is checked (endpoint syntax, TLS files
// and CA); nothing is dialled.
func New(cfg Config) (*Client, error) { return newClient(cfg, nil) }

// newClient is New with the hooks tests pass in (nil: none).
func newClient(cfg Config, hooks *engine.Hooks) (*Client, error) {
	tlsNB, tlsSB, err := ovsconn.TLSConfigs(cfg)
	if err != nil {
		return nil, err
	}
	timeout := cfg.ConnectTimeout
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
	}
	eng := engine.New(hooks)
	ix := eng.Index
	nb, err := ovsconn.Open(ovsconn.Options{Label: "nb", Flag: "--ovn-nb-address", Address: cfg.NBAddress, TLS: tlsNB,
		Timeout: timeout, Model: nbdb.FullDatabaseModel, Monitor: schema.Monitor(schema.Northbound),
		Handlers: []cache.EventHandler{ix, eng.Healer()}, Dropped: ix.Dropped,
		BeforeMonitor: func(api client.Client) { ix.Prefetch(api) }})
	if err != nil {
		return nil, err
	}
	encaps := &encapWatch{lost: eng.ForeignEdit}
	sb, err := ovsconn.Open(ovsconn.Options{Label: "sb", Flag: "--ovn-sb-address", Address: cfg.SBAddress, TLS: tlsSB,
		Timeout: timeout, Model: sbdb.FullDatabaseModel, Monitor: schema.Monitor(schema.Southbound), Handlers: []cache.EventHandler{encaps}})
	if err != nil {
		return nil, err
	}
	eng.NB, encaps.sb = nb.API, sb.API
	return &Client{eng: eng, sb: sb.API, encaps: encaps, dbs: []*ovsconn.DB{nb, sb}, stopWatch: make(chan struct{})}, nil
}

// startWatching starts the connection watch and healLoop, once.
func (c *Client) startWatching() {
	c.watchOnce.Do(func() {
		go ovsconn.Watch(c.dbs, c.stopWatch)
		go c.eng.HealLoop(c.stopWatch)
	})
}

// NewClient connects to the OVN Northbound and Southbound databases and
// fails at once when either cannot be reached (tests and tools; the manager
// uses New and Connect, which retry). The connections reconnect by
// themselves (with backoff) and resynchronise their caches; transactions
// issued while disconnected wait for the reconnect or ctx.
func NewClient(ctx context.Context, nbAddress, sbAddress string) (*Client, error) {
	return Dial(ctx, Config{NBAddress: nbAddress, SBAddress: sbAddress})
}

// Dial is New followed by one connection attempt to each database.
func Dial(ctx context.Context, cfg Config) (*Client, error) { return dial(ctx, cfg, nil) }

// dial is Dial with the hooks tests pass in (nil: none).
func dial(ctx context.Context, cfg Config, hooks *engine.Hooks) (*Client, error) {
	c, err := newClient(cfg, hooks)
	if err != nil {
		return nil, err
	}
	c.connecting.Store(true)
	for _, db := range c.dbs {
		if err := db.Connect(ctx); err != nil {
			c.Close()
			return nil, err
		}
	}
	c.startWatching()
	return c, nil
}

// Connect connects to both databases, retrying with exponential backoff
// (up to 30 s apart) until both are connected and their caches filled, or ctx
// ends (then it returns ctx's error). Each failed attempt is logged. From then
// on libovsdb reconnects by itself; udnkit_ovn_connected{db} follows the
// connection state.
func (c *Client) Connect(ctx context.Context) error {
	c.connecting.Store(true)
	logger := log.FromContext(ctx).WithName("ovn")
	c.startWatching()
	for _, db := range c.dbs {
		if err := db.ConnectRetrying(ctx, logger); err != nil {
			return err
		}
	}
	return nil
}

// Connected says whether both databases are connected with filled caches.
func (c *Client) Connected() bool {
	for _, db := range c.dbs {
		if !db.Up() {
			return false
		}
	}
	return true
}

// Check is a health check (healthz.Checker) for the dataplane: nil while
// both databases are connected or while the client does not try to connect
// (a replica that is not the leader), otherwise an error that names the
// database that is not connected and the last connection error.
func (c *Client) Check(_ *http.Request) error {
	if !c.connecting.Load() {
		return nil
	}
	var problems []string
	for _, db := range c.dbs {
		if p := db.Problem(); p != "" {
			problems = append(problems, p)
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// Close disconnects from both databases; the client does not reconnect.
func (c *Client) Close() {
	c.closeOnce.Do(func() {
		close(c.stopWatch)
		for _, db := range c.dbs {
			db.Close()
		}
	})
}
