package ovsconn

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-logr/logr"
	"github.com/ovn-kubernetes/libovsdb/cache"
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// DB is one reconnecting libovsdb connection to an OVN database, with a
// monitor-backed cache.
type DB struct {
	// Label is "nb" or "sb": the db label of udnkit_ovn_connected.
	Label string
	flag  string // the flag that configured it, for messages
	// Address is the flag's value; API the libovsdb client.
	Address   string
	API       client.Client
	schema    *schemaCheck
	monitor   []client.MonitorOption
	monitored atomic.Bool
	lastErr   atomic.Pointer[error]
	// Timeout bounds one connection attempt (Config.ConnectTimeout).
	Timeout time.Duration
	// handlers follow the cache's events from the first connection on.
	handlers     []cache.EventHandler
	handlersOnce sync.Once
	// beforeMonitor is Options.BeforeMonitor.
	beforeMonitor func(client.Client)
}

// Options say how Open connects to one database.
type Options struct {
	// Label is "nb" or "sb"; Flag and Address the flag that configured the
	// endpoints and its value (ParseEndpoints).
	Label, Flag, Address string
	// TLS is what ssl: endpoints use (nil: none).
	TLS *tls.Config
	// Timeout bounds one connection attempt.
	Timeout time.Duration
	// Model is the database's model; Monitor what the cache holds of it.
	Model   func() (model.ClientDBModel, error)
	Monitor []client.MonitorOption
	// Handlers follow the cache's events, in this order, from the first
	// connection on.
	Handlers []cache.EventHandler
	// Dropped, when set, is told when the cache drops an event (its event
	// buffer was full: the cache's log says so, dropsink.go).
	Dropped func()
	// BeforeMonitor, when set, is called with the client once Connect has
	// connected it, just before Connect starts the monitor that fills the
	// cache: a request it sends is answered while the monitor's initial
	// copy is read.
	BeforeMonitor func(client.Client)
}

// Open validates o and builds a connection that is not connected yet.
func Open(o Options) (*DB, error) {
	label, flag, address, tlsConfig, timeout := o.Label, o.Flag, o.Address, o.TLS, o.Timeout
	endpoints, err := ParseEndpoints(flag, address)
	if err != nil {
		return nil, err
	}
	m, err := o.Model()
	if err != nil {
		return nil, err
	}
	logger := log.Log.WithName("libovsdb").WithValues("db", label)
	if o.Dropped != nil {
		logger = logr.New(newDropSink(logger.GetSink(), o.Dropped))
	}
	// After the first connection libovsdb reconnects by itself: a lost
	// connection (or a leader that steps down) is retried with backoff and the
	// monitors are re-established before transactions flow again, so every
	// plan after a reconnect reads a resynchronised cache. (Not
	// WithInactivityCheck: in libovsdb v0.8.1 a disconnect during a
	// transaction then panics with "send on closed channel", libovsdb#464;
	// Watch probes with echo instead.)
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval = 50 * time.Millisecond
	// OVN-Kubernetes retries without any pause; a new RAFT leader is found
	// within a quarter second of its election here.
	bo.MaxInterval = 250 * time.Millisecond
	bo.MaxElapsedTime = 0 // keep trying for as long as the manager runs
	opts := []client.Option{
		client.WithLogger(&logger),
		// A clustered database is written through its leader only: a
		// follower may lag behind, and planning against a lagging cache
		// would recreate or resurrect rows.
		client.WithLeaderOnly(len(endpoints) > 1),
	}
	for _, ep := range endpoints {
		if strings.HasPrefix(ep, "ssl:") && tlsConfig == nil {
			return nil, fmt.Errorf("%s %q: ssl: endpoints need --ovn-client-cert, --ovn-client-key and --ovn-ca-cert", flag, address)
		}
		opts = append(opts, client.WithEndpoint(ep))
	}
	if tlsConfig != nil {
		opts = append(opts, client.WithTLSConfig(tlsConfig))
	}
	schema, err := newSchemaCheck(label, m, opts)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", flag, address, err)
	}
	api, err := client.NewOVSDBClient(m, append(opts, client.WithReconnect(timeout, bo))...)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", flag, address, err)
	}
	return &DB{Label: label, flag: flag, Address: address, API: api, schema: schema, monitor: o.Monitor, handlers: o.Handlers, Timeout: timeout,
		beforeMonitor: o.BeforeMonitor}, nil
}

// Connect makes one attempt to connect (a no-op when connected) and to start
// the monitor that fills the cache (once; libovsdb restarts it after every
// reconnect).
func (db *DB) Connect(ctx context.Context) error {
	err := db.connectOnce(ctx)
	if err != nil {
		db.lastErr.Store(&err)
	}
	return err
}

func (db *DB) connectOnce(ctx context.Context) error {
	if db.monitored.Load() {
		return nil
	}
	attempt, cancel := context.WithTimeout(ctx, db.Timeout)
	defer cancel()
	if err := db.API.Connect(attempt); err != nil {
		if old := db.schema.tooOld(attempt); old != nil {
			err = old
		}
		return fmt.Errorf("%s %q: connect: %w", db.flag, db.Address, err)
	}
	db.schema.connected()
	// The cache exists from the first connection on; the monitor fills it.
	db.handlersOnce.Do(func() {
		for _, h := range db.handlers {
			db.API.Cache().AddEventHandler(h)
		}
	})
	if db.beforeMonitor != nil {
		db.beforeMonitor(db.API)
	}
	if _, err := db.API.Monitor(attempt, db.API.NewMonitor(db.monitor...)); err != nil {
		return fmt.Errorf("%s %q: monitor: %w", db.flag, db.Address, err)
	}
	db.monitored.Store(true)
	return nil
}

// ConnectRetrying connects, retrying with exponential backoff (up to 30 s
// apart) until the database is connected and its cache filled, or ctx ends
// (then it returns ctx's error). Each failed attempt is logged.
func (db *DB) ConnectRetrying(ctx context.Context, logger logr.Logger) error {
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval = 200 * time.Millisecond
	bo.MaxInterval = 30 * time.Second
	bo.MaxElapsedTime = 0
	attempt := 0
	err := backoff.Retry(func() error {
		attempt++
		err := db.Connect(ctx)
		if err != nil && ctx.Err() == nil {
			logger.Info("OVN database not reachable yet, retrying", "db", db.Label, "address", db.Address,
				"attempt", attempt, "error", err.Error())
		}
		if ctx.Err() != nil {
			return backoff.Permanent(ctx.Err())
		}
		return err
	}, backoff.WithContext(bo, ctx))
	if err != nil {
		return err
	}
	logger.Info("connected to the OVN database", "db", db.Label, "endpoint", db.API.CurrentEndpoint())
	return nil
}

// Up says whether the database is connected with a filled, resynchronised
// cache.
func (db *DB) Up() bool { return db.monitored.Load() && Up(db.API) }

// Problem says why the database is not Up ("" when it is): its address and
// the last connection error.
func (db *DB) Problem() string {
	if db.Up() {
		return ""
	}
	msg := fmt.Sprintf("OVN %s database %s: not connected", strings.ToUpper(db.Label), db.Address)
	if err := db.lastErr.Load(); err != nil {
		msg += ": " + (*err).Error()
	}
	return msg
}

// Close disconnects; the connection does not reconnect.
func (db *DB) Close() {
	db.API.Close()
	connected.WithLabelValues(db.Label).Set(0)
}
