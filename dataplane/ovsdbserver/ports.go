package ovsdbserver

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// A server keeps its TCP, SSL and RAFT ports across restarts (its peers and
// clients know it by them). A port the kernel hands out for "127.0.0.1:0"
// comes from the ephemeral range, which every other process uses too: the
// kernel gives it to the next process that binds port 0 or connects out as
// soon as the member holding it dies. Under `make test` (packages in
// parallel: apiservers, etcds, webhook servers, other clusters) a killed RAFT
// member's port was taken in the second before its restart; the member came
// back without its RAFT port (the cluster lost its quorum at the next kill)
// or its clients reached another process's TLS listener and hung until their
// timeout. So ports are picked outside the ephemeral range, where the kernel
// never assigns one, and reserved for the life of this process with a lock
// file that every process using this package honours.

// portDir holds one lock file per port reserved by some process.
var portDir = filepath.Join(os.TempDir(), "udnkit-ovsdb-ports")

// reserved are the lock files this process holds (closing one would release
// its port; they are released when the process exits).
var reserved = struct {
	sync.Mutex
	files []*os.File
}{}

// freePort returns "127.0.0.1:PORT" with a port outside the kernel's
// ephemeral range that no other process using this package holds and that
// is free now; it stays reserved for this process.
func freePort() (string, error) {
	lo, hi := pickRange()
	if err := os.MkdirAll(portDir, 0o1777); err != nil {
		return "", fmt.Errorf("ovsdbserver: reserving a port: %w", err)
	}
	reserved.Lock()
	defer reserved.Unlock()
	for range 200 {
		port := lo + rand.IntN(hi-lo+1)
		f, err := os.OpenFile(filepath.Join(portDir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			return "", fmt.Errorf("ovsdbserver: reserving a port: %w", err)
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			_ = f.Close() // another process holds it
			continue
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			_ = f.Close() // something that does not reserve ports uses it
			continue
		}
		_ = l.Close()
		reserved.files = append(reserved.files, f)
		return addr, nil
	}
	return "", fmt.Errorf("ovsdbserver: no free port in %d-%d after 200 tries", lo, hi)
}

// pickRange is portRange (tests narrow it).
var pickRange = portRange

// portRange is where freePort picks: outside the kernel's ephemeral range.
func portRange() (lo, hi int) { return outside(ephemeralRange()) }

// ephemeralRange is net.ipv4.ip_local_port_range (the kernel's default
// when it cannot be read).
func ephemeralRange() (start, end int) {
	start, end = 32768, 60999
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			s, err1 := strconv.Atoi(f[0])
			e, err2 := strconv.Atoi(f[1])
			if err1 == nil && err2 == nil && s <= e {
				start, end = s, e
			}
		}
	}
	return start, end
}

// outside is a range of at least 1000 ports clear of [start, end]: from
// 20000 up to start, or above end when start leaves no room below it; the
// whole unprivileged range when neither side has room (the lock files then
// still keep this package's users apart).
func outside(start, end int) (lo, hi int) {
	switch {
	case start-1 >= 20000+1000:
		return 20000, start - 1
	case 65535-end >= 1000:
		return end + 1, 65535
	default:
		return 1024, 65535
	}
}
