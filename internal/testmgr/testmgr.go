// Package testmgr builds and runs controller-runtime managers for tests:
// New makes one with the test options (no metrics or health endpoints,
// several managers per process), Run starts one in the background until
// stopped. It imports controller-runtime and client-go only, so every
// stage's tests can use it without linking the others.
package testmgr

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/config"
	ctrlmanager "sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Options are the manager options of a test manager with scheme: metrics
// and health probes off, and controller names not checked for uniqueness
// (a test process starts several managers with the same controllers).
func Options(scheme *runtime.Scheme) ctrlmanager.Options {
	return ctrlmanager.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	}
}

// New builds an unstarted manager for cfg with Options(scheme).
func New(cfg *rest.Config, scheme *runtime.Scheme) (ctrlmanager.Manager, error) {
	return ctrlmanager.New(cfg, Options(scheme))
}

// Running is a manager started by Run.
type Running struct {
	Manager ctrlmanager.Manager
	cancel  context.CancelFunc
	done    chan error
	stopped bool
	err     error
}

// Run starts mgr in the background until Stop or ctx ends.
func Run(ctx context.Context, mgr ctrlmanager.Manager) *Running {
	ctx, cancel := context.WithCancel(ctx)
	r := &Running{Manager: mgr, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- mgr.Start(ctx) }()
	return r
}

// Exited returns whether the manager has already stopped on its own, and
// its error.
func (r *Running) Exited() (bool, error) {
	if r.stopped {
		return true, r.err
	}
	select {
	case r.err = <-r.done:
		r.stopped = true
		return true, r.err
	default:
		return false, nil
	}
}

// Stop stops the manager, waits for it, and returns the error it stopped
// with.
func (r *Running) Stop() error {
	r.cancel()
	if !r.stopped {
		r.err, r.stopped = <-r.done, true
	}
	return r.err
}
