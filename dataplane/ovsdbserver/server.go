// Package ovsdbserver starts real OVN databases (ovsdb-server with the OVN
// Northbound and Southbound schemas) and ovn-northd of OVNVersion as child
// processes, for tests, benchmarks and the local `make run` environment.
package ovsdbserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Database names one of OVN's two databases.
type Database string

const (
	// Northbound is OVN_Northbound (ovn-nb.ovsschema).
	Northbound Database = "nb"
	// Southbound is OVN_Southbound (ovn-sb.ovsschema).
	Southbound Database = "sb"
)

// Server is one ovsdb-server process serving one database file on a unix socket.
type Server struct {
	tcp    string // "127.0.0.1:PORT" when also served over TCP
	ssl    string // "127.0.0.1:PORT" when also served over SSL
	pki    *PKI   // the server's certificate, key and CA for ssl
	db     Database
	dir    string
	file   string
	socket string
	cmd    *exec.Cmd
	done   chan error
}

// Start creates a fresh database file in dir from the OVN schema (unless it
// already exists) and serves it on dir/ovn<db>.sock. dir must be absolute.
func Start(ctx context.Context, dir string, db Database) (*Server, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("ovsdbserver: directory %q must be an absolute path", dir)
	}
	s := &Server{
		db:     db,
		dir:    dir,
		file:   filepath.Join(dir, "ovn"+string(db)+".db"),
		socket: filepath.Join(dir, "ovn"+string(db)+".sock"),
	}
	if _, err := os.Stat(s.file); errors.Is(err, os.ErrNotExist) {
		if out, err := CommandContext(ctx, "ovsdb-tool", "create", s.file, SchemaFile(db)).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("ovsdb-tool create %s: %v: %s", s.file, err, out)
		}
	}
	return s, s.start(ctx)
}

func (s *Server) start(ctx context.Context) error {
	_ = os.Remove(s.socket)
	base := filepath.Join(s.dir, "ovn"+string(s.db))
	args := []string{s.file,
		"--remote=punix:" + s.socket,
		"--unixctl=" + base + ".ctl",
		"--log-file=" + base + ".log",
		"--no-chdir", "-vconsole:off", "-vfile:info"}
	if s.tcp != "" {
		host, port, _ := net.SplitHostPort(s.tcp)
		args = append(args, "--remote=ptcp:"+port+":"+host)
	}
	if s.ssl != "" {
		host, port, _ := net.SplitHostPort(s.ssl)
		args = append(args, "--remote=pssl:"+port+":"+host,
			"--private-key="+s.pki.ServerKey, "--certificate="+s.pki.ServerCert, "--ca-cert="+s.pki.CACert)
	}
	s.cmd = Command("ovsdb-server", args...)
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start ovsdb-server for %s: %w", s.file, err)
	}
	s.done = make(chan error, 1)
	go func(cmd *exec.Cmd, done chan error) { done <- cmd.Wait() }(s.cmd, s.done)
	if err := waitForSocket(ctx, s.socket, s.done); err != nil {
		s.Stop()
		return err
	}
	// ovsdb-server does not exit when it cannot bind a remote (it logs and
	// retries): a port taken by another process would leave it unreachable
	// there, so a start is done when every remote answers.
	for _, addr := range []string{s.tcp, s.ssl} {
		if addr == "" {
			continue
		}
		if err := waitForSocket(ctx, "tcp:"+addr, s.done); err != nil {
			s.Stop()
			return err
		}
	}
	return nil
}

// ServeTCP makes the server also listen on 127.0.0.1 at a free port from its
// next (re)start on; TCPAddress then returns "tcp:127.0.0.1:PORT".
func (s *Server) ServeTCP(ctx context.Context) error {
	addr, err := freePort()
	if err != nil {
		return err
	}
	s.tcp = addr
	return s.Restart(ctx)
}

// ServeSSL makes the server also listen for SSL on 127.0.0.1 at a free port
// from its next (re)start on, with pki's server certificate; it accepts
// clients whose certificate chains to pki's CA. SSLAddress then returns
// "ssl:127.0.0.1:PORT".
func (s *Server) ServeSSL(ctx context.Context, pki *PKI) error {
	addr, err := freePort()
	if err != nil {
		return err
	}
	s.ssl, s.pki = addr, pki
	return s.Restart(ctx)
}

// SSLAddress is the database's SSL endpoint ("" unless ServeSSL was called).
func (s *Server) SSLAddress() string {
	if s.ssl == "" {
		return ""
	}
	return "ssl:" + s.ssl
}

// TCPAddress is the database's TCP endpoint ("" unless ServeTCP was called).
func (s *Server) TCPAddress() string {
	if s.tcp == "" {
		return ""
	}
	return "tcp:" + s.tcp
}

// Address is the database's endpoint in libovsdb/ovn-nbctl form: unix:/abs/path.
func (s *Server) Address() string { return "unix:" + s.socket }

// Pid is the running server's process ID (0 when stopped), for reading its
// resource use.
func (s *Server) Pid() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// File is the database file (for ovsdb-tool while the server is stopped).
func (s *Server) File() string { return s.file }

// Stop kills the server (SIGKILL, as a crash would) and waits for it; the
// database file stays.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
	}
	s.cmd = nil
}

// Restart stops the server and serves the same database file again on the same
// socket, as an operator restarting ovsdb-server would: clients see a disconnect.
func (s *Server) Restart(ctx context.Context) error {
	s.Stop()
	return s.start(ctx)
}

// Northd is one ovn-northd process translating a Northbound into a Southbound database.
type Northd struct {
	cmd  *exec.Cmd
	done chan error
}

// StartNorthd runs ovn-northd between the two databases; its control socket and
// log live in dir.
func StartNorthd(dir string, nb, sb *Server) (*Northd, error) {
	cmd := Command("ovn-northd",
		"--ovnnb-db="+nb.Address(), "--ovnsb-db="+sb.Address(),
		"--unixctl="+filepath.Join(dir, "ovn-northd.ctl"),
		"--log-file="+filepath.Join(dir, "ovn-northd.log"),
		"--no-chdir", "-vconsole:off")
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start ovn-northd: %w", err)
	}
	n := &Northd{cmd: cmd, done: make(chan error, 1)}
	go func() { n.done <- cmd.Wait() }()
	return n, nil
}

// Stop terminates ovn-northd and waits for it.
func (n *Northd) Stop() {
	_ = n.cmd.Process.Kill()
	<-n.done
}

// Pair is a Northbound and a Southbound database started together in one directory.
type Pair struct {
	NB, SB *Server
}

// StartPair starts both OVN databases in dir.
func StartPair(ctx context.Context, dir string) (*Pair, error) {
	nb, err := Start(ctx, dir, Northbound)
	if err != nil {
		return nil, err
	}
	sb, err := Start(ctx, dir, Southbound)
	if err != nil {
		nb.Stop()
		return nil, err
	}
	return &Pair{NB: nb, SB: sb}, nil
}

// Stop stops both databases.
func (p *Pair) Stop() {
	p.NB.Stop()
	p.SB.Stop()
}

// waitForSocket waits until socket (a unix socket's path, or "tcp:HOST:PORT")
// accepts a connection, the process exits or 20 s pass.
func waitForSocket(ctx context.Context, socket string, exited <-chan error) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		network, address := "unix", socket
		if a, ok := strings.CutPrefix(socket, "tcp:"); ok {
			network, address = "tcp", a
		}
		if c, err := net.Dial(network, address); err == nil {
			_ = c.Close()
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("ovsdb-server for %s exited before serving: %v", socket, err)
		case <-ctx.Done():
			return fmt.Errorf("ovsdb-server socket %s not ready: %w", socket, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Local is the OVN control plane `make run` starts: the NB and SB databases on
// dir/ovnnb.sock and dir/ovnsb.sock plus ovn-northd, so that
// `ovn-nbctl --db=unix:<dir>/ovnnb.sock show` shows what udnkit programs.
type Local struct {
	Pair
	Northd *Northd
}

// StartLocal starts (or restarts on existing database files) NB, SB and
// ovn-northd in dir, which is created when missing and must be absolute.
func StartLocal(ctx context.Context, dir string) (*Local, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	p, err := StartPair(ctx, dir)
	if err != nil {
		return nil, err
	}
	n, err := StartNorthd(dir, p.NB, p.SB)
	if err != nil {
		p.Stop()
		return nil, err
	}
	return &Local{Pair: *p, Northd: n}, nil
}

// Stop stops ovn-northd and both databases; the database files stay.
func (l *Local) Stop() {
	l.Northd.Stop()
	l.Pair.Stop()
}
