package ovsconn

import (
	"context"
	"fmt"
	"time"

	"github.com/ovn-kubernetes/libovsdb/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Echo probes: a server that stops answering (a partitioned host keeps the
// TCP connection open) is disconnected, so that libovsdb reconnects, to the
// new leader of a cluster.
const (
	probeInterval = 30 * time.Second
	probeTimeout  = 10 * time.Second
)

// Watch keeps udnkit_ovn_connected{db} in step with the connections, logs
// every change and probes idle connections with echo, until stop is closed.
func Watch(dbs []*DB, stop <-chan struct{}) {
	logger := log.Log.WithName("ovn")
	was := make([]bool, len(dbs))
	probed := make([]time.Time, len(dbs))
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		for i, db := range dbs {
			now := db.Up()
			if now != was[i] {
				if now {
					logger.Info("OVN database connection up", "db", db.Label, "endpoint", db.API.CurrentEndpoint())
				} else if db.monitored.Load() {
					logger.Info("OVN database connection lost, reconnecting", "db", db.Label, "address", db.Address)
				}
				probed[i] = time.Now()
			}
			was[i] = now
			connected.WithLabelValues(db.Label).Set(map[bool]float64{true: 1}[now])
			if now && time.Since(probed[i]) > probeInterval {
				probed[i] = time.Now()
				go func(db *DB) {
					ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
					defer cancel()
					if err := db.API.Echo(ctx); err != nil && Up(db.API) {
						logger.Info("OVN database does not answer echo, reconnecting", "db", db.Label,
							"endpoint", db.API.CurrentEndpoint(), "error", err.Error())
						db.API.Disconnect()
					}
				}(db)
			}
		}
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

// Up says whether api is connected with a resynchronised cache, so that a
// plan made now sees every committed transaction. libovsdb's Connected()
// alone does not: it stays true while libovsdb reconnects (after a lost
// connection or leader), when the cache may miss the last transactions.
// CurrentEndpoint is empty until the reconnect is complete: it waits for the
// lock libovsdb holds while it reconnects and restarts the monitors (which
// bring the cache up to date), and is empty while there is no connection.
func Up(api client.Client) bool {
	return api.Connected() && api.CurrentEndpoint() != ""
}

// WaitUp waits until api is Up, or ctx ends.
func WaitUp(ctx context.Context, c client.Client) error {
	for !Up(c) {
		select {
		case <-ctx.Done():
			// (CurrentEndpoint is empty until libovsdb is connected again.)
			return fmt.Errorf("waiting for the OVN database %s to reconnect: %w", c.Schema().Name, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}
