// Package testenv separates the project's pure tests from those that need
// real parts: a kube-apiserver and etcd, ovsdb-server and ovn-northd, or a
// `go build` of a binary. `go test -short ./...` runs only the pure tests;
// `make test` (no -short) runs everything, and there a missing part fails
// the test instead of skipping it.
package testenv

import "testing"

// Real marks tb as needing the real parts named in what ("kube-apiserver",
// "ovsdb-server", …): under -short it is skipped with that reason.
func Real(tb testing.TB, what string) {
	tb.Helper()
	if testing.Short() {
		tb.Skipf("needs %s (run without -short)", what)
	}
}
