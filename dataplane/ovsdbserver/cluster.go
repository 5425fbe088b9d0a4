package ovsdbserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// schemaName is the database name inside each schema, which clustered
// ovsdb-tool commands need.
func (db Database) schemaName() string {
	if db == Southbound {
		return "OVN_Southbound"
	}
	return "OVN_Northbound"
}

// Cluster is one OVN database served by a RAFT cluster of ovsdb-server
// processes on 127.0.0.1, as OVN-Kubernetes' central deployments run it.
// Member i lives in dir/m<i>, serves clients on a unix socket and a TCP port,
// and talks RAFT to its peers on another TCP port.
type Cluster struct {
	DB      Database
	Members []*Server
}

// StartCluster creates an n-member cluster (ovsdb-tool create-cluster on the
// first member, join-cluster on the others) in dir, which must be absolute,
// starts every member and waits until the cluster has a leader.
func StartCluster(ctx context.Context, dir string, db Database, n int) (*Cluster, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("ovsdbserver: directory %q must be an absolute path", dir)
	}
	c := &Cluster{DB: db}
	var raft []string
	for i := range n {
		mdir := filepath.Join(dir, fmt.Sprintf("m%d", i+1))
		if err := os.MkdirAll(mdir, 0o755); err != nil {
			return nil, err
		}
		client, err := freePort()
		if err != nil {
			return nil, err
		}
		peer, err := freePort()
		if err != nil {
			return nil, err
		}
		raft = append(raft, "tcp:"+peer)
		s := &Server{db: db, dir: mdir, tcp: client,
			file:   filepath.Join(mdir, "ovn"+string(db)+".db"),
			socket: filepath.Join(mdir, "ovn"+string(db)+".sock")}
		var args []string
		if i == 0 {
			args = []string{"create-cluster", s.file, SchemaFile(db), raft[0]}
		} else {
			args = []string{"join-cluster", s.file, db.schemaName(), raft[i], raft[0]}
		}
		if out, err := CommandContext(ctx, "ovsdb-tool", args...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("ovsdb-tool %s: %v: %s", strings.Join(args, " "), err, out)
		}
		c.Members = append(c.Members, s)
	}
	for _, s := range c.Members {
		if err := s.start(ctx); err != nil {
			c.Stop()
			return nil, err
		}
	}
	if _, err := c.Leader(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// Address is the cluster's endpoints for clients:
// "tcp:127.0.0.1:P1,tcp:127.0.0.1:P2,tcp:127.0.0.1:P3".
func (c *Cluster) Address() string {
	var eps []string
	for _, s := range c.Members {
		eps = append(eps, s.TCPAddress())
	}
	return strings.Join(eps, ",")
}

// Leader waits (up to 30 s, or ctx) until a running member reports itself
// leader (ovs-appctl cluster/status) and returns its index.
func (c *Cluster) Leader(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		for i, s := range c.Members {
			if s.cmd == nil {
				continue
			}
			out, err := CommandContext(ctx, "ovs-appctl", "-t", filepath.Join(s.dir, "ovn"+string(s.db)+".ctl"),
				"cluster/status", c.DB.schemaName()).CombinedOutput()
			if err == nil && strings.Contains(string(out), "Role: leader") {
				return i, nil
			}
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("no leader in the %s cluster: %w", c.DB.schemaName(), ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Stop kills every member; the database files stay.
func (c *Cluster) Stop() {
	for _, s := range c.Members {
		s.Stop()
	}
}
