// Package dataplane programs OVN for udnkit's networks with libovsdb: it
// computes the desired Northbound rows of each topology piece from plain inputs
// and applies the difference against the live database in one transaction.
package dataplane

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/sbdb"
)

// Client holds one reconnecting libovsdb connection to each OVN database, with
// a monitor-backed cache of the tables udnkit reads.
type Client struct {
	NB client.Client
	SB client.Client
	// apply serialises Apply: a piece plans against a cache that shows every
	// earlier Apply, so two pieces sharing a missing router or switch
	// (Shared) never both create it.
	apply sync.Mutex
}

// NewClient connects to the OVN Northbound and Southbound databases. Addresses
// are libovsdb endpoints: "unix:/abs/path.sock" or "tcp:host:port". The
// connections reconnect by themselves (with backoff) and resynchronise their
// caches; transactions issued while disconnected wait for the reconnect or ctx.
func NewClient(ctx context.Context, nbAddress, sbAddress string) (*Client, error) {
	nb, err := connect(ctx, "--ovn-nb-address", nbAddress, nbModel,
		&nbdb.LogicalRouter{}, &nbdb.LogicalRouterPort{}, &nbdb.LogicalSwitch{}, &nbdb.LogicalSwitchPort{},
		&nbdb.LogicalRouterStaticRoute{}, &nbdb.LogicalRouterPolicy{}, &nbdb.NAT{}, &nbdb.DHCPOptions{})
	if err != nil {
		return nil, err
	}
	sb, err := connect(ctx, "--ovn-sb-address", sbAddress, sbModel, &sbdb.PortBinding{}, &sbdb.Encap{}, &sbdb.Chassis{})
	if err != nil {
		nb.Close()
		return nil, err
	}
	return &Client{NB: nb, SB: sb}, nil
}

// Close disconnects from both databases.
func (c *Client) Close() {
	c.NB.Close()
	c.SB.Close()
}

func nbModel() (model.ClientDBModel, error) { return nbdb.FullDatabaseModel() }
func sbModel() (model.ClientDBModel, error) { return sbdb.FullDatabaseModel() }

func connect(ctx context.Context, flag, address string, dbModel func() (model.ClientDBModel, error), tables ...model.Model) (client.Client, error) {
	if !strings.HasPrefix(address, "unix:") && !strings.HasPrefix(address, "tcp:") {
		return nil, fmt.Errorf("%s %q: must start with unix: or tcp:", flag, address)
	}
	m, err := dbModel()
	if err != nil {
		return nil, err
	}
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval = 50 * time.Millisecond
	bo.MaxInterval = time.Second
	bo.MaxElapsedTime = 0 // keep trying for as long as the manager runs
	c, err := client.NewOVSDBClient(m, client.WithEndpoint(address), client.WithReconnect(5*time.Second, bo))
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", flag, address, err)
	}
	if err := c.Connect(ctx); err != nil {
		return nil, fmt.Errorf("%s %q: connect: %w", flag, address, err)
	}
	monitors := make([]client.MonitorOption, 0, len(tables))
	for _, t := range tables {
		monitors = append(monitors, client.WithTable(t))
	}
	if _, err := c.Monitor(ctx, c.NewMonitor(monitors...)); err != nil {
		c.Close()
		return nil, fmt.Errorf("%s %q: monitor: %w", flag, address, err)
	}
	return c, nil
}
