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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/udnkit/udnkit/apis/scheme"
	"github.com/udnkit/udnkit/cmd/udnkit/app"
	dataplanecontroller "github.com/udnkit/udnkit/dataplane/controller"
	"github.com/udnkit/udnkit/ovnk"
)

type childFlags struct {
	role, kubeconfig            string
	webhookHost, webhookCertDir string
	webhookPort                 int
	metrics                     string
	nb, sb, zoneNode            string
	controllers                 string
	cpuProfile                  string
}

// runChild runs one child process until SIGTERM. A manager child is
// cmd/udnkit's manager (app.New) with the -controllers components, as
// `make run` runs it: an unthrottled client against the local apiserver. The
// dataplane child runs the dataplane controllers with one node in its OVN
// zone (app has no zone option yet), so every other node is a remote port.
func runChild(c childFlags) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return err
	}
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
	switch c.role {
	case "manager":
		opts := app.NewOptions()
		fs := flag.NewFlagSet("udnkit", flag.ContinueOnError)
		opts.BindFlags(fs)
		for name, value := range map[string]string{
			"controllers":               c.controllers,
			"metrics-bind-address":      c.metrics,
			"metrics-secure":            "false",
			"health-probe-bind-address": "0",
			// As the chart runs it: under leader election (so the one writer
			// skips the after-write verification), unthrottled like make run.
			"leader-elect":              "true",
			"leader-election-namespace": "default",
			"leader-election-id":        "udnkit-scale-" + c.role + "-" + strings.ReplaceAll(c.controllers, ",", "-"),
			"kube-api-qps":              "-1",
			"kube-api-burst":            "-1",
		} {
			if err := fs.Set(name, value); err != nil {
				return fmt.Errorf("--%s: %w", name, err)
			}
		}
		opts.WebhookServer = &webhook.Options{Host: c.webhookHost, Port: c.webhookPort, CertDir: c.webhookCertDir}
		return app.Run(ctx, cfg, opts)
	case "dataplane":
		mgr, err := ctrl.NewManager(cfg, ctrl.Options{
			Scheme:                 scheme.New(),
			Metrics:                metricsserver.Options{BindAddress: c.metrics},
			HealthProbeBindAddress: "0",
		})
		if err != nil {
			return err
		}
		cluster := ovnk.DefaultClusterConfig()
		if _, err := dataplanecontroller.Setup(ctx, mgr, dataplanecontroller.Options{
			NBAddress: c.nb, SBAddress: c.sb, Cluster: cluster,
			Local: func(n *corev1.Node) bool { return n.Name == c.zoneNode },
		}); err != nil {
			return err
		}
		return mgr.Start(ctx)
	}
	return fmt.Errorf("unknown -role %q", c.role)
}
