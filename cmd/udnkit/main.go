// Command udnkit is the udnkit manager: admission webhooks, reconcilers and
// the OVN dataplane controller, selected with --controllers.
package main

import (
	"flag"
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/udnkit/udnkit/cmd/udnkit/app"
)

func main() {
	opts := app.NewOptions()
	opts.BindFlags(flag.CommandLine)
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	app.SetMemoryLimitFromCgroup("/", ctrl.Log.WithName("setup"))

	cfg, err := ctrl.GetConfig()
	if err != nil {
		fmt.Fprintf(os.Stderr, "udnkit: %v\n", err)
		os.Exit(1)
	}
	if err := app.Run(ctrl.SetupSignalHandler(), cfg, opts); err != nil {
		fmt.Fprintf(os.Stderr, "udnkit: %v\n", err)
		os.Exit(1)
	}
}
