// Package manager runs the udnkit manager in-process for the suites, with
// flags parsed as cmd/udnkit parses them (Start, Options), in the
// background (internal/testmgr.Run). It is its own package because it
// imports cmd/udnkit/app, which imports webhooks, whose tests import the
// envtest harness: the harness itself cannot import app. A test that needs
// any other manager uses internal/testmgr, which links no stage.
package manager

import (
	"context"
	"flag"
	"io"
	"testing"

	"k8s.io/client-go/rest"
	ctrlmanager "sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/udnkit/udnkit/cmd/udnkit/app"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/internal/testmgr"
)

// Options parses args as cmd/udnkit does, after --metrics-bind-address=0
// and --health-probe-bind-address=0 (args may set them again), and allows
// several managers in one process (SkipControllerNameValidation).
func Options(args []string) (*app.Options, error) {
	o := app.NewOptions()
	fs := flag.NewFlagSet("udnkit", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.BindFlags(fs)
	if err := fs.Parse(append([]string{"--metrics-bind-address=0", "--health-probe-bind-address=0"}, args...)); err != nil {
		return nil, err
	}
	o.SkipControllerNameValidation = true
	return o, nil
}

// WaitForWebhooks waits until the manager serves env's webhooks over TLS,
// for up to testenv.EventuallyTimeout.
func WaitForWebhooks(ctx context.Context, env *envtest.Environment) error {
	ctx, cancel := context.WithTimeout(ctx, testenv.EventuallyTimeout)
	defer cancel()
	return env.WaitForWebhookServer(ctx)
}

// ServeWebhooks is a configure function for New and Start: the manager
// serves its webhooks where env's webhook configurations call.
func ServeWebhooks(env *envtest.Environment) func(*app.Options) {
	return func(o *app.Options) {
		ws := env.Webhook.WebhookServerOptions()
		o.WebhookServer = &ws
	}
}

// New builds the udnkit manager as cfg's user from args (Options); configure,
// when set, adjusts the parsed options (the webhook server, say).
func New(ctx context.Context, cfg *rest.Config, args []string, configure func(*app.Options)) (ctrlmanager.Manager, error) {
	o, err := Options(args)
	if err != nil {
		return nil, err
	}
	if configure != nil {
		configure(o)
	}
	return app.New(ctx, cfg, o)
}

// Start runs the udnkit manager as cfg's user with args (New) until the
// test ends. A manager that stops with an error fails the test.
func Start(ctx context.Context, t testing.TB, cfg *rest.Config, args []string, configure func(*app.Options)) *testmgr.Running {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	mgr, err := New(ctx, cfg, args, configure)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	r := testmgr.Run(ctx, mgr)
	t.Cleanup(func() {
		defer cancel()
		if err := r.Stop(); err != nil {
			t.Errorf("manager %v: %v", args, err)
		}
	})
	return r
}
