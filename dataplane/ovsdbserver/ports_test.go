package ovsdbserver

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Ports come from outside the kernel's ephemeral range, differ from call to
// call, and skip a port another process has reserved or bound; when none is
// left the error names the range.
func TestFreePortReservesOutsideTheEphemeralRange(t *testing.T) {
	lo, hi := portRange()
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skip("no /proc/sys/net/ipv4/ip_local_port_range")
	}
	f := strings.Fields(string(b))
	start, _ := strconv.Atoi(f[0])
	end, _ := strconv.Atoi(f[1])
	if !(hi < start || lo > end) {
		t.Fatalf("portRange %d-%d overlaps the ephemeral range %d-%d", lo, hi, start, end)
	}
	seen := map[string]bool{}
	for range 5 {
		addr, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		_, p, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(p)
		if port < lo || port > hi || seen[addr] {
			t.Fatalf("freePort = %s: outside %d-%d or handed out twice (%v)", addr, lo, hi, seen)
		}
		seen[addr] = true
	}

	// A range of three ports: one reserved by another process (a lock on
	// its own open file, as another process's would be), one bound by a
	// process that does not reserve, one free.
	dir := t.TempDir()
	oldDir, oldRange := portDir, pickRange
	t.Cleanup(func() { portDir, pickRange = oldDir, oldRange })
	portDir = dir
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	bound := l.Addr().(*net.TCPAddr).Port
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	free := other.Addr().(*net.TCPAddr).Port
	other.Close()
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	locked := held.Addr().(*net.TCPAddr).Port
	held.Close()
	lock, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(locked)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	for _, p := range []int{bound, free, locked} {
		pickRange = func() (int, int) { return p, p }
		addr, err := freePort()
		switch {
		case p == free && addr != "127.0.0.1:"+strconv.Itoa(free):
			t.Fatalf("the only free port %d: got %q, %v", free, addr, err)
		case p != free && (err == nil || !strings.Contains(err.Error(), strconv.Itoa(p))):
			t.Fatalf("port %d is taken: got %q, %v; want an error naming the range", p, addr, err)
		}
	}
	// Reserved by this process now: not handed out again.
	pickRange = func() (int, int) { return free, free }
	if addr, err := freePort(); err == nil {
		t.Fatalf("port %d handed out twice: %s", free, addr)
	}
}
