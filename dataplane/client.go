// Package dataplane programs OVN for udnkit's networks with libovsdb: it
// computes the desired Northbound rows of each topology piece from plain inputs
// and applies the difference against the live database: in one transaction, or
// for a large difference in a sequence of bounded transactions that each leave
// a consistent topology (package txn). The client also notices when the database
// loses or changes the rows it owns without an Apply of its own (a replaced
// database, another client's edit) and asks its controllers to re-apply those
// networks (resync.go).
package dataplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-logr/logr"
	"github.com/ovn-kubernetes/libovsdb/cache"
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/udnkit/udnkit/dataplane/internal/index"
	"github.com/udnkit/udnkit/dataplane/internal/plan"
	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/sbdb"
)

// Config says where the OVN databases are and how to reach them.
type Config struct {
	// NBAddress and SBAddress are the --ovn-nb-address and --ovn-sb-address
	// flags: one OVSDB endpoint, or the comma-separated endpoints of a RAFT
	// cluster ("ssl:a:6641,ssl:b:6641,ssl:c:6641"), each "unix:/abs/path",
	// "tcp:host:port" or "ssl:host:port". With several endpoints the client
	// talks to the cluster's leader only, and follows leadership changes.
	NBAddress, SBAddress string
	// TLS is what ssl: endpoints use; required when any endpoint is ssl:.
	TLS TLS
	// ConnectTimeout bounds one connection attempt, from the dial to the
	// monitor's initial copy of the tables (0: DefaultConnectTimeout). That
	// copy grows with the database: it must fit the zone's largest.
	ConnectTimeout time.Duration
}

// DefaultConnectTimeout is Config.ConnectTimeout's default
// (--ovn-connect-timeout). The monitor's initial copy of a zone's Northbound
// grows with its rows (tens of microseconds each; a full-size `make scale`
// zone holds about a million), and a connect that times out is retried from
// the start, so the default leaves room for the largest zone on a slow
// machine.
const DefaultConnectTimeout = 5 * time.Minute

// TLS holds the PEM files of the client side of ssl: connections (OVN's
// ovsdb-server requires a client certificate signed by a CA it trusts).
type TLS struct {
	// CertFile and KeyFile are the client certificate and its private key.
	// They are read again at every connection, so a rotated Secret is picked
	// up at the next reconnect.
	CertFile, KeyFile string
	// CAFile holds the CA certificates the servers' certificates must chain
	// to; read once, when the client is created.
	CAFile string
	// NBServerName and SBServerName, when set, are the names the servers'
	// certificates are checked against (a DNS name in their subjectAltName)
	// instead of each endpoint's host.
	NBServerName, SBServerName string
}

// Client holds one reconnecting libovsdb connection to each OVN database, with
// a monitor-backed cache of the tables udnkit reads.
type Client struct {
	NB client.Client
	SB client.Client
	// applying serialises the Applies of one network (by its OVN name
	// prefix, which every row name of the network starts with): a piece plans
	// against a cache that shows every earlier Apply of its network, so two
	// pieces sharing a missing router or switch (Shared) never both create
	// it. Networks share no rows, so different networks apply concurrently:
	// a large network's transaction never delays another's.
	applying KeyLocks
	// ahead lets Applies of one transaction go before the next transaction
	// of a split (large) Apply.
	ahead priority
	// yieldAtMost, when set (by tests), replaces the package's yieldAtMost.
	yieldAtMost time.Duration
	// MaxTransactionOps bounds one transaction of an Apply: its operations
	// plus the child references they add or remove. A larger plan is sent
	// as a sequence of transactions of at most two thirds of this size
	// (rows that belong together, such as one node's, are never split). 0 means
	// DefaultMaxTransactionOps; a negative value never splits. Set it before
	// the first Apply.
	MaxTransactionOps int
	// beforeTransact, when set (by benchmarks and tests), runs in Apply after
	// planning (and a split Apply's yield), with the network's lock held,
	// just before the first transaction is sent.
	beforeTransact func(Owner)
	// afterTransaction, when set (by tests), runs in Apply after transaction
	// k of n has committed.
	afterTransaction func(o Owner, k, n int)
	// observe, when set (by benchmarks), is told how long each step of an
	// Apply took: "lock" (waiting for the network's lock), "plan",
	// "split" (cutting a large plan into transactions), "transact" (the
	// round trip of a transaction), "yield" (a split Apply letting others go
	// first) and "visible" (waiting for the client's cache to show the
	// result).
	observe func(o Owner, step string, d time.Duration)
	// memos remember, per topology piece, the keys of its cached rows
	// between Applies (planner.go).
	memos plan.Memos
	// index holds the Northbound rows plans read (index.go).
	index *index.Index
	// healing finds the networks whose rows the database lost or another
	// client changed (resync.go).
	healing healer

	dbs []*database
	// connecting is set once Connect runs (on the leader, in the manager).
	connecting atomic.Bool
	stopWatch  chan struct{}
	watchOnce  sync.Once
	closeOnce  sync.Once
}

// database is one of the client's two connections.
type database struct {
	label     string // "nb" or "sb": the db label of udnkit_ovn_connected
	flag      string // the flag that configured it, for messages
	address   string
	api       client.Client
	schema    *schemaCheck
	monitor   []client.MonitorOption
	monitored atomic.Bool
	lastErr   atomic.Pointer[error]
	// timeout bounds one connection attempt (Config.ConnectTimeout).
	timeout time.Duration
	// index and events, when set, follow the cache's events from the first
	// connection on.
	index     *index.Index
	events    cache.EventHandler
	indexOnce sync.Once
}

// New validates cfg and builds a client that is not connected yet: Connect
// connects it. Only the configuration is checked (endpoint syntax, TLS files
// and CA); nothing is dialled.
func New(cfg Config) (*Client, error) {
	var tlsNB, tlsSB *tls.Config
	if cfg.TLS != (TLS{}) {
		base, err := cfg.TLS.config()
		if err != nil {
			return nil, err
		}
		tlsNB, tlsSB = base.Clone(), base.Clone()
		tlsNB.ServerName, tlsSB.ServerName = cfg.TLS.NBServerName, cfg.TLS.SBServerName
	}
	ix := index.New(up, plan.ChangedBound)
	timeout := cfg.ConnectTimeout
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
	}
	nb, err := newDatabase("nb", "--ovn-nb-address", cfg.NBAddress, tlsNB, timeout, nbModel, ix, schema.Monitor(schema.Northbound)...)
	if err != nil {
		return nil, err
	}
	sb, err := newDatabase("sb", "--ovn-sb-address", cfg.SBAddress, tlsSB, timeout, sbModel, nil, schema.Monitor(schema.Southbound)...)
	if err != nil {
		return nil, err
	}
	c := &Client{NB: nb.api, SB: sb.api, index: ix, dbs: []*database{nb, sb}, stopWatch: make(chan struct{})}
	nb.events = &c.healing
	return c, nil
}

// startWatching starts watch and healLoop, once.
func (c *Client) startWatching() {
	c.watchOnce.Do(func() {
		go c.watch()
		go c.healLoop()
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
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	c, err := New(cfg)
	if err != nil {
		return nil, err
	}
	c.connecting.Store(true)
	for _, db := range c.dbs {
		if err := db.connect(ctx); err != nil {
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
		bo := backoff.NewExponentialBackOff()
		bo.InitialInterval = 200 * time.Millisecond
		bo.MaxInterval = 30 * time.Second
		bo.MaxElapsedTime = 0
		attempt := 0
		err := backoff.Retry(func() error {
			attempt++
			err := db.connect(ctx)
			if err != nil && ctx.Err() == nil {
				logger.Info("OVN database not reachable yet, retrying", "db", db.label, "address", db.address,
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
		logger.Info("connected to the OVN database", "db", db.label, "endpoint", db.api.CurrentEndpoint())
	}
	return nil
}

// Connected says whether both databases are connected with filled caches.
func (c *Client) Connected() bool {
	for _, db := range c.dbs {
		if !db.monitored.Load() || !up(db.api) {
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
		if db.monitored.Load() && up(db.api) {
			continue
		}
		msg := fmt.Sprintf("OVN %s database %s: not connected", strings.ToUpper(db.label), db.address)
		if err := db.lastErr.Load(); err != nil {
			msg += ": " + (*err).Error()
		}
		problems = append(problems, msg)
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
			db.api.Close()
			connected.WithLabelValues(db.label).Set(0)
		}
	})
}

// Echo probes: a server that stops answering (a partitioned host keeps the
// TCP connection open) is disconnected, so that libovsdb reconnects, to the
// new leader of a cluster.
const (
	probeInterval = 30 * time.Second
	probeTimeout  = 10 * time.Second
)

// watch keeps udnkit_ovn_connected{db} in step with the connections, logs
// every change and probes idle connections with echo, until Close.
func (c *Client) watch() {
	logger := log.Log.WithName("ovn")
	was := make([]bool, len(c.dbs))
	probed := make([]time.Time, len(c.dbs))
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		for i, db := range c.dbs {
			now := db.monitored.Load() && up(db.api)
			if now != was[i] {
				if now {
					logger.Info("OVN database connection up", "db", db.label, "endpoint", db.api.CurrentEndpoint())
				} else if db.monitored.Load() {
					logger.Info("OVN database connection lost, reconnecting", "db", db.label, "address", db.address)
				}
				probed[i] = time.Now()
			}
			was[i] = now
			connected.WithLabelValues(db.label).Set(map[bool]float64{true: 1}[now])
			if now && time.Since(probed[i]) > probeInterval {
				probed[i] = time.Now()
				go func(db *database) {
					ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
					defer cancel()
					if err := db.api.Echo(ctx); err != nil && up(db.api) {
						logger.Info("OVN database does not answer echo, reconnecting", "db", db.label,
							"endpoint", db.api.CurrentEndpoint(), "error", err.Error())
						db.api.Disconnect()
					}
				}(db)
			}
		}
		select {
		case <-c.stopWatch:
			return
		case <-tick.C:
		}
	}
}

// up says whether api is connected with a resynchronised cache, so that a
// plan made now sees every committed transaction. libovsdb's Connected()
// alone does not: it stays true while libovsdb reconnects (after a lost
// connection or leader), when the cache may miss the last transactions.
// CurrentEndpoint is empty until the reconnect is complete: it waits for the
// lock libovsdb holds while it reconnects and restarts the monitors (which
// bring the cache up to date), and is empty while there is no connection.
func up(api client.Client) bool {
	return api.Connected() && api.CurrentEndpoint() != ""
}

func nbModel() (model.ClientDBModel, error) { return nbdb.FullDatabaseModel() }
func sbModel() (model.ClientDBModel, error) { return sbdb.FullDatabaseModel() }

// ParseEndpoints splits an --ovn-*-address value into its endpoints and
// checks each one's syntax; flag names the flag in errors.
func ParseEndpoints(flag, address string) ([]string, error) {
	if strings.TrimSpace(address) == "" {
		return nil, fmt.Errorf("%s is empty", flag)
	}
	var out []string
	for _, ep := range strings.Split(address, ",") {
		ep = strings.TrimSpace(ep)
		scheme, rest, _ := strings.Cut(ep, ":")
		switch scheme {
		case "unix":
			if !strings.HasPrefix(rest, "/") {
				return nil, fmt.Errorf("%s %q: endpoint %q: the socket path must be absolute", flag, address, ep)
			}
		case "tcp", "ssl":
			host, port, err := net.SplitHostPort(rest)
			if err != nil || host == "" || port == "" {
				return nil, fmt.Errorf("%s %q: endpoint %q: want %s:HOST:PORT (IPv6 in brackets)", flag, address, ep, scheme)
			}
		default:
			return nil, fmt.Errorf("%s %q: must start with unix:, tcp: or ssl: (comma-separated for a RAFT cluster)", flag, address)
		}
		out = append(out, ep)
	}
	return out, nil
}

func newDatabase(label, flag, address string, tlsConfig *tls.Config, timeout time.Duration, dbModel func() (model.ClientDBModel, error),
	ix *index.Index, monitor ...client.MonitorOption) (*database, error) {
	endpoints, err := ParseEndpoints(flag, address)
	if err != nil {
		return nil, err
	}
	m, err := dbModel()
	if err != nil {
		return nil, err
	}
	logger := log.Log.WithName("libovsdb").WithValues("db", label)
	if ix != nil {
		logger = logr.New(newDropSink(logger.GetSink(), ix.Dropped))
	}
	// After the first connection libovsdb reconnects by itself: a lost
	// connection (or a leader that steps down) is retried with backoff and the
	// monitors are re-established before transactions flow again, so every
	// plan after a reconnect reads a resynchronised cache. (Not
	// WithInactivityCheck: in libovsdb v0.8.1 a disconnect during a
	// transaction then panics with "send on closed channel", libovsdb#464;
	// Client.watch probes with echo instead.)
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
	return &database{label: label, flag: flag, address: address, api: api, schema: schema, monitor: monitor, index: ix, timeout: timeout}, nil
}

// connect makes one attempt to connect (a no-op when connected) and to start
// the monitor that fills the cache (once; libovsdb restarts it after every
// reconnect).
func (db *database) connect(ctx context.Context) error {
	err := db.connectOnce(ctx)
	if err != nil {
		db.lastErr.Store(&err)
	}
	return err
}

func (db *database) connectOnce(ctx context.Context) error {
	if db.monitored.Load() {
		return nil
	}
	attempt, cancel := context.WithTimeout(ctx, db.timeout)
	defer cancel()
	if err := db.api.Connect(attempt); err != nil {
		if old := db.schema.tooOld(attempt); old != nil {
			err = old
		}
		return fmt.Errorf("%s %q: connect: %w", db.flag, db.address, err)
	}
	db.schema.connected()
	if db.index != nil {
		// The cache exists from the first connection on; the monitor fills it.
		db.indexOnce.Do(func() {
			db.api.Cache().AddEventHandler(db.index)
			if db.events != nil {
				db.api.Cache().AddEventHandler(db.events)
			}
		})
	}
	if _, err := db.api.Monitor(attempt, db.api.NewMonitor(db.monitor...)); err != nil {
		return fmt.Errorf("%s %q: monitor: %w", db.flag, db.address, err)
	}
	db.monitored.Store(true)
	return nil
}

// config builds the client TLS configuration: the CA pool now, the client
// key pair at every handshake.
func (t TLS) config() (*tls.Config, error) {
	if t.CertFile == "" || t.KeyFile == "" || t.CAFile == "" {
		return nil, errors.New("OVN TLS needs all of --ovn-client-cert, --ovn-client-key and --ovn-ca-cert")
	}
	pem, err := os.ReadFile(t.CAFile)
	if err != nil {
		return nil, fmt.Errorf("--ovn-ca-cert: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--ovn-ca-cert %s: no PEM certificate found", t.CAFile)
	}
	// Fail now on a missing or mismatched key pair rather than at each dial.
	if _, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile); err != nil {
		return nil, fmt.Errorf("--ovn-client-cert/--ovn-client-key: %w", err)
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		RootCAs:    pool,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			pair, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
			if err != nil {
				return nil, fmt.Errorf("OVN client certificate: %w", err)
			}
			return &pair, nil
		},
	}, nil
}

// connected is 1 while the client's connection to a database is up with its
// cache filled, 0 while it connects or reconnects.
var connected = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "udnkit_ovn_connected",
	Help: "Whether the dataplane is connected to the OVN database (db: nb or sb), with its cache filled: 1 connected, 0 connecting or reconnecting.",
}, []string{"db"})

func init() { metrics.Registry.MustRegister(connected) }

// KeyLocks is one mutex per key (a network), existing only while someone
// holds or waits for it; the zero value is ready. Different keys never wait
// for each other.
type KeyLocks struct {
	mu    sync.Mutex
	locks map[string]*keyLock
}

type keyLock struct {
	sync.Mutex
	users int
}

// Waiting is how many wait for key (for tests).
func (l *KeyLocks) Waiting(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if nl := l.locks[key]; nl != nil {
		return nl.users - 1
	}
	return 0
}

// Lock locks key and returns its unlock.
func (l *KeyLocks) Lock(key string) func() {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*keyLock{}
	}
	nl := l.locks[key]
	if nl == nil {
		nl = &keyLock{}
		l.locks[key] = nl
	}
	nl.users++
	l.mu.Unlock()
	nl.Lock()
	return func() {
		nl.Unlock()
		l.mu.Lock()
		if nl.users--; nl.users == 0 {
			delete(l.locks, key)
		}
		l.mu.Unlock()
	}
}
