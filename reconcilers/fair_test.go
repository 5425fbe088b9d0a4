package reconcilers_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/reconcilers"
	"github.com/udnkit/udnkit/reconcilers/internal/rtest"
)

// floodResult is what floodThenOne saw.
type floodResult struct {
	// toNAD and toStatus run from the quiet namespace's UDN create to its
	// NAD and to its NetworkCreated=True.
	toNAD, toStatus time.Duration
	// floodNADs is how many of the flood's NADs existed when the quiet
	// UDN's NAD appeared.
	floodNADs int
}

// floodThenOne starts a manager with cfg, creates n Secondary UDNs in one
// namespace (32 at a time, faster than the reconcilers drain them), then
// one in another namespace, and times that one. It leaves the manager
// stopped and both namespaces empty (what the flood left is removed with
// its finalizers, not reconciled away: that would take minutes).
func floodThenOne(tb testing.TB, cfg reconcilers.Config, n int) floodResult {
	tb.Helper()
	if err := startManagerB(cfg); err != nil {
		tb.Fatal(err)
	}
	flood, quiet := floodNamespace(tb, "flood"), floodNamespace(tb, "quiet")
	defer func() {
		stopManager()
		purge(tb, flood, quiet)
	}()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := k8s.Create(ctx, testobj.MakeUDN(flood, fmt.Sprintf("f%04d", i)).Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.100.0.0/16")).Obj()); err != nil {
				tb.Error(err)
			}
		})
	}
	wg.Wait()
	u := testobj.MakeUDN(quiet, "mine").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.100.0.0/16")).Obj()
	start := time.Now()
	if err := k8s.Create(ctx, u); err != nil {
		tb.Fatal(err)
	}
	var res floodResult
	for deadline := start.Add(timeout + time.Duration(n)*100*time.Millisecond); ; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("UDN %s/mine: no NAD and NetworkCreated=True after %s", quiet, time.Since(start))
		}
		if res.toNAD == 0 && k8s.Get(ctx, client.ObjectKey{Namespace: quiet, Name: "mine"}, &nadv1.NetworkAttachmentDefinition{}) == nil {
			res.toNAD = time.Since(start)
			var nads nadv1.NetworkAttachmentDefinitionList
			if err := k8s.List(ctx, &nads, client.InNamespace(flood)); err != nil {
				tb.Fatal(err)
			}
			res.floodNADs = len(nads.Items)
		}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			tb.Fatal(err)
		}
		if meta.IsStatusConditionTrue(u.Status.Conditions, udnv1.ConditionNetworkCreated) && res.toNAD > 0 {
			res.toStatus = time.Since(start)
			return res
		}
	}
}

// purge removes every UDN and NAD of namespaces, finalizers first.
func purge(tb testing.TB, namespaces ...string) {
	tb.Helper()
	var objs []client.Object
	for _, ns := range namespaces {
		var udns udnv1.UserDefinedNetworkList
		var nads nadv1.NetworkAttachmentDefinitionList
		if err := k8s.List(ctx, &udns, client.InNamespace(ns)); err != nil {
			tb.Fatal(err)
		}
		if err := k8s.List(ctx, &nads, client.InNamespace(ns)); err != nil {
			tb.Fatal(err)
		}
		for i := range udns.Items {
			objs = append(objs, &udns.Items[i])
		}
		for i := range nads.Items {
			objs = append(objs, &nads.Items[i])
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for _, o := range objs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			patch := client.MergeFrom(o.DeepCopyObject().(client.Object))
			o.SetFinalizers(nil)
			if err := k8s.Patch(ctx, o, patch); client.IgnoreNotFound(err) != nil {
				tb.Error(err)
			}
			if err := k8s.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
				tb.Error(err)
			}
		})
	}
	wg.Wait()
}

func floodNamespace(tb testing.TB, prefix string) string {
	tb.Helper()
	return suite.NewNamespace(tb, prefix, nil)
}

// A flood of UDNs in one namespace does not hold up another namespace's:
// its NAD appears while most of the flood still waits, as the UDN
// controller's queue serves namespaces in turn.
func TestFloodInOneNamespaceDoesNotHoldUpAnother(t *testing.T) {
	rtest.Require(t)
	const n = 200
	defer restartManager(t, reconcilers.DefaultConfig())
	res := floodThenOne(t, reconcilers.DefaultConfig(), n)
	t.Logf("after %d UDNs in one namespace, another's UDN: NAD in %s, NetworkCreated in %s, with %d of the flood's NADs written",
		n, res.toNAD.Round(time.Millisecond), res.toStatus.Round(time.Millisecond), res.floodNADs)
	if res.floodNADs > n/2 {
		t.Errorf("the quiet namespace's NAD appeared after %d of the flood's %d NADs, want at most %d", res.floodNADs, n, n/2)
	}
}

// BenchmarkFloodFairness: after 1,000 UDNs created at once in one namespace,
// how long another namespace's new UDN waits for its NAD and its status,
// with the UDN controller's fair queue and with controller-runtime's default
// queue, in one run.
func BenchmarkFloodFairness(b *testing.B) {
	rtest.Require(b)
	const n = 1000
	b.Cleanup(func() { stopManager(); _ = startManager(reconcilers.DefaultConfig()) })
	for _, fair := range []bool{true, false} {
		name := "fair-queue"
		if !fair {
			name = "default-queue"
		}
		b.Run(name, func(b *testing.B) {
			cfg := reconcilers.DefaultConfig()
			cfg.FairQueue = fair
			var toNAD, toStatus time.Duration
			var done int
			runs := 0
			for b.Loop() {
				res := floodThenOne(b, cfg, n)
				toNAD += res.toNAD
				toStatus += res.toStatus
				done += res.floodNADs
				runs++
			}
			b.ReportMetric(toNAD.Seconds()/float64(runs), "other-ns-NAD-s")
			b.ReportMetric(toStatus.Seconds()/float64(runs), "other-ns-status-s")
			b.ReportMetric(float64(done)/float64(runs), "flood-NADs-before")
		})
	}
}
