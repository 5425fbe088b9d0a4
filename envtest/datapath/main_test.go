package datapath_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/udnkit/udnkit/envtest/datapath"
	"github.com/udnkit/udnkit/internal/testenv"
)

// The cluster every packet test shares: three nodes, each its own zone.
var (
	cluster  *datapath.Cluster
	startErr error
	stopOnce sync.Once
)

func stop() {
	stopOnce.Do(func() {
		if cluster != nil {
			cluster.Stop()
		}
	})
}

// clusterParts is what the cluster runs on.
const clusterParts = "network namespaces, ovs-vswitchd and ovn-controller"

// preflightChild marks the unprivileged copy of this test binary that
// TestPreflightRefusesAnUnprivilegedUser runs: it only reports Preflight.
const preflightChild = "UDNK_PREFLIGHT_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(preflightChild) != "" {
		fmt.Println(datapath.Preflight())
		os.Exit(0)
	}
	flag.Parse()
	if testing.Short() {
		// No cluster: the tests that need it skip (needCluster).
		os.Exit(m.Run())
	}
	ctrl.SetLogger(logr.Discard())
	start := time.Now()
	cluster, startErr = datapath.Start(context.Background(), "node-a", "node-b", "node-c")
	if startErr == nil {
		fmt.Printf("datapath cluster %s: 3 nodes up in %s\n", cluster.Run, time.Since(start).Round(time.Millisecond))
	}
	// Ctrl-C or a termination stops the cluster before the process goes.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		stop()
		os.Exit(130)
	}()
	code := m.Run()
	stop()
	os.Exit(code)
}

// needCluster skips the test under -short, and fails it with what the
// machine lacks when the cluster could not start (no /dev/net/tun, no
// permission for namespaces, no OVN).
func needCluster(t testing.TB) *datapath.Cluster {
	t.Helper()
	testenv.Real(t, clusterParts)
	if startErr != nil {
		t.Fatalf("the packet suite cannot run on this machine: %v", startErr)
	}
	return cluster
}
