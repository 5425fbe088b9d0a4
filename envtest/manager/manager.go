// Package manager runs the udnkit manager in-process for the end-to-end
// suites, with flags parsed as cmd/udnkit parses them. It is its own package
// because it imports cmd/udnkit/app, which imports webhooks, whose tests
// import the envtest harness: the harness itself cannot import app.
package manager

import (
	"context"
	"flag"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/udnkit/udnkit/cmd/udnkit/app"
)

// Start runs the manager as cfg's user with args (metrics and health probes
// off) until the test ends; configure, when set, adjusts the parsed options
// (the webhook server, say). A manager that stops with an error fails the test.
func Start(ctx context.Context, t testing.TB, cfg *rest.Config, args []string, configure func(*app.Options)) {
	t.Helper()
	o := app.NewOptions()
	fs := flag.NewFlagSet("udnkit", flag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse(append([]string{"--metrics-bind-address=0", "--health-probe-bind-address=0"}, args...)); err != nil {
		t.Fatal(err)
	}
	// The suites start several managers in one process.
	o.SkipControllerNameValidation = true
	if configure != nil {
		configure(o)
	}
	ctx, cancel := context.WithCancel(ctx)
	mgr, err := app.New(ctx, cfg, o)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager %v: %v", args, err)
		}
	})
}
