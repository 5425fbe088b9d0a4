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
	start, end := ephemeralRange()
	lo, hi := portRange()
	if !(hi < start || lo > end) {
		t.Fatalf("portRange %d-%d overlaps the ephemeral range %d-%d", lo, hi, start, end)
	}
	for _, c := range []struct{ start, end, lo, hi int }{
		{32768, 60999, 20000, 32767}, // the kernel's default: below it
		{15000, 60000, 60001, 65535}, // no room below: above it
		{1024, 65000, 1024, 65535},   // no room either side
	} {
		if lo, hi := outside(c.start, c.end); lo != c.lo || hi != c.hi {
			t.Errorf("outside(%d, %d) = %d-%d, want %d-%d", c.start, c.end, lo, hi, c.lo, c.hi)
		}
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
