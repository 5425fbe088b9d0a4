// Command udnkit-scale is `make scale`, the scale suite. For each size
// it starts the embedded control plane (envtest's kube-apiserver and etcd,
// with the webhook configurations and policies the chart installs), runs the
// manager's control-plane components (admission, nad, nodes, ipam) as a child
// process so that its RSS and CPU are its own, creates Nodes, namespaces with
// UDNs and CUDNs (Layer2 and Layer3, Primary and Secondary) and pods as fast
// as the apiserver takes them, and measures: the time to all NADs, network
// IDs, host subnets and pod addresses; the manager's RSS and CPU; the
// apiserver's requests by verb and resource (its own apiserver_request_total);
// the time from a manager restart to converged; and then the dataplane (a
// second child process) programming one zone's real ovsdb-server: the time to
// all OVN rows and their number. It writes a Markdown table (-out).
//
// The sizes are fractions of the full size (-networks, -pods); the node
// count stays -nodes in every run, so each run doubles only the networks and
// pods. The same binary is the two child processes (-role manager|dataplane).
// It exits 1 when a figure misses its target in thresholds.yaml.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
)

func main() {
	var d driverFlags
	var c childFlags
	flag.StringVar(&c.role, "role", "", "internal: run as the manager (manager) or dataplane (dataplane) child process")
	flag.StringVar(&c.kubeconfig, "child-kubeconfig", "", "internal: the child's kubeconfig")
	flag.StringVar(&c.webhookHost, "webhook-host", "", "internal: the manager child's webhook host")
	flag.IntVar(&c.webhookPort, "webhook-port", 0, "internal: the manager child's webhook port")
	flag.StringVar(&c.webhookCertDir, "webhook-cert-dir", "", "internal: the manager child's webhook certificate directory")
	flag.StringVar(&c.metrics, "metrics", "", "internal: the child's plain-HTTP metrics address")
	flag.StringVar(&c.nb, "nb", "", "internal: the dataplane child's OVN Northbound address")
	flag.StringVar(&c.sb, "sb", "", "internal: the dataplane child's OVN Southbound address")
	flag.StringVar(&c.controllers, "controllers", "", "internal: the manager child's components")
	flag.StringVar(&c.zoneNode, "zone-node", "", "internal: the one node of the dataplane child's OVN zone")
	flag.StringVar(&c.cpuProfile, "child-cpuprofile", "", "internal: where the child writes its CPU profile when it stops")
	flag.StringVar(&c.peakHeapProfile, "child-peakheapprofile", "", "internal: where the child writes its heap profile at its largest live heap")

	flag.IntVar(&d.nodes, "nodes", 500, "Nodes in every run")
	flag.IntVar(&d.networks, "networks", 4095, "networks at full size (fraction 1)")
	flag.IntVar(&d.pods, "pods", 20000, "pods at full size (fraction 1)")
	fractions := flag.String("fractions", "1/64,1/32,1/16", "comma-separated fractions of -networks and -pods, one run each")
	flag.IntVar(&d.workers, "workers", 32, "concurrent creates")
	flag.BoolVar(&d.dataplane, "dataplane", true, "also measure the dataplane on a real ovsdb-server")
	flag.BoolVar(&d.dataplaneLive, "dataplane-live", false, "also run a second zone's dataplane from before the first create, following the creation as a cluster's does "+
		"(it competes with the control plane for this machine's cores: the control plane's figures of such a run are not comparable to those of a run without it)")
	flag.DurationVar(&d.timeout, "timeout", 0, "give up waiting for one phase after this long (0: 20 minutes)")
	flag.StringVar(&d.out, "out", "bin/scale-report.md", "where the Markdown report goes")
	flag.StringVar(&d.stateDir, "state-dir", "bin/scale", "kubeconfigs, OVN databases and child logs")
	flag.BoolVar(&d.cpuProfile, "cpuprofile", false, "write each child's CPU profile (manager.pprof, manager-restart.pprof, webhooks.pprof, dataplane.pprof) beside its log, and the kube-apiserver's and the driver's from the first create to converged (apiserver-NNN.pprof, 5 s each; driver.pprof), and each child's heap profile at its largest live heap (manager.heap, …)")
	thresholdsFile := flag.String("thresholds", "", "YAML file of the figures' targets (default: the embedded "+defaultThresholdsName+"); a figure that misses its target fails the run")
	flag.Parse()

	if c.role != "" {
		if err := runChild(c); err != nil {
			fmt.Fprintf(os.Stderr, "udnkit-scale %s: %v\n", c.role, err)
			os.Exit(1)
		}
		return
	}
	for _, f := range strings.Split(*fractions, ",") {
		num, den, ok := strings.Cut(strings.TrimSpace(f), "/")
		n, err1 := strconv.Atoi(num)
		m, err2 := strconv.Atoi(den)
		if !ok || err1 != nil || err2 != nil || n <= 0 || m <= 0 {
			fmt.Fprintf(os.Stderr, "udnkit-scale: -fractions: %q is not a fraction like 1/16\n", f)
			os.Exit(2)
		}
		d.fractions = append(d.fractions, [2]int{n, m})
	}
	th, err := loadThresholds(*thresholdsFile)
	if err != nil {
		fmt.Fprintf(os.Stderr, "udnkit-scale: -thresholds: %v\n", err)
		os.Exit(2)
	}
	d.targets = th
	// The driver prints its own progress; its informers' and watches'
	// logs would only interleave with it (and controller-runtime prints a
	// stack trace once when no logger is set).
	ctrl.SetLogger(logr.Discard())
	if err := runDriver(d); err != nil {
		fmt.Fprintf(os.Stderr, "udnkit-scale: %v\n", err)
		os.Exit(1)
	}
}
