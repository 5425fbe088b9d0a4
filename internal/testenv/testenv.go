// Package testenv separates the project's pure tests from those that need
// real parts: a kube-apiserver and etcd, ovsdb-server and ovn-northd, or a
// `go build` of a binary. `go test -short ./...` runs only the pure tests;
// `make test` (no -short) runs everything, and there a missing part fails
// the test instead of skipping it.
package testenv

import (
	"testing"
	"time"
)

// Real marks tb as needing the real parts named in what ("kube-apiserver",
// "ovsdb-server", …): under -short it is skipped with that reason.
func Real(tb testing.TB, what string) {
	tb.Helper()
	if testing.Short() {
		tb.Skipf("needs %s (run without -short)", what)
	}
}

// Skipping reports whether Real skips (under -short): a test with a pure
// half and a half that needs real parts runs the pure half either way.
func Skipping() bool { return testing.Short() }

// EventuallyTimeout bounds Eventually: a bound on a loaded 2-core machine
// running every package's apiserver at once, not a performance figure.
const EventuallyTimeout = 60 * time.Second

// Eventually retries f every PollInterval until it returns nil, and fails
// tb with what and f's last error once EventuallyTimeout has passed (Poll).
// Tests that wait for a controller, or for the apiserver to enforce a
// policy, use it.
func Eventually(tb testing.TB, what string, f func() error) {
	tb.Helper()
	if err := Poll(what, f); err != nil {
		tb.Fatal(err)
	}
}
