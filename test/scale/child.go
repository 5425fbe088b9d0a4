package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"

	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/udnkit/udnkit/cmd/udnkit/app"
	"github.com/udnkit/udnkit/test/scale/internal/profile"
)

type childFlags struct {
	role, kubeconfig            string
	webhookHost, webhookCertDir string
	webhookPort                 int
	metrics                     string
	nb, sb, zoneNode            string
	controllers                 string
	cpuProfile                  string
	peakHeapProfile             string
}

// runChild runs one child process until SIGTERM. A manager child is
// cmd/udnkit's manager (app.New) with the -controllers components, as
// `make run` runs it: an unthrottled client against the local apiserver. The
// dataplane child is cmd/udnkit's dataplane component with one node in its
// OVN zone (--zone), so every other node is a remote port.
func runChild(c childFlags) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return err
	}
	// Unthrottled like make run (app keeps the config's rate unless
	// --kube-api-qps/--kube-api-burst are positive).
	cfg.QPS, cfg.Burst = -1, -1
	if c.cpuProfile != "" {
		f, err := os.Create(c.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if c.peakHeapProfile != "" {
		go profile.PeakHeap(ctx, c.peakHeapProfile)
	}
	flags := map[string]string{
		"metrics-bind-address":      c.metrics,
		"metrics-secure":            "false",
		"health-probe-bind-address": "0",
		// As the chart runs it: under leader election (so the one writer
		// skips the after-write verification).
		"leader-elect":              "true",
		"leader-election-namespace": "default",
	}
	switch c.role {
	case "manager":
		flags["controllers"] = c.controllers
	case "dataplane":
		// cmd/udnkit's dataplane component as a node's zone runs it: one
		// node in its zone, every other node a remote port.
		flags["controllers"] = "dataplane"
		flags["ovn-nb-address"] = c.nb
		flags["ovn-sb-address"] = c.sb
		flags["zone"] = c.zoneNode
		// With EgressIP, as the reference cluster runs (and as every
		// scale run before the flag's default turned off did): the
		// Layer3 cluster router's subnet policies are what the driver
		// waits for, and are written only with it.
		flags["enable-egress-ip"] = "true"
	default:
		return fmt.Errorf("unknown -role %q", c.role)
	}
	flags["leader-election-id"] = "udnkit-scale-" + c.role + "-" + strings.ReplaceAll(flags["controllers"], ",", "-")
	opts := app.NewOptions()
	fs := flag.NewFlagSet("udnkit", flag.ContinueOnError)
	opts.BindFlags(fs)
	for name, value := range flags {
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("--%s: %w", name, err)
		}
	}
	opts.WebhookServer = &webhook.Options{Host: c.webhookHost, Port: c.webhookPort, CertDir: c.webhookCertDir}
	return app.Run(ctx, cfg, opts)
}
