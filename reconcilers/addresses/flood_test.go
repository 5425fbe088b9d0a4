package addresses_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/internal/testmgr"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers/addresses"
)

// floodRig is an apiserver and an admin client for the flood tests, which
// run outside the Ginkgo suite (a benchmark cannot use its BeforeSuite).
type floodRig struct {
	env *envtest.Environment
	c   client.WithWatch
	// runs numbers the namespaces of successive floods.
	runs int
}

func startFloodRig(tb testing.TB) *floodRig {
	tb.Helper()
	testenv.Real(tb, "kube-apiserver")
	env, err := envtest.Start(envtest.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = env.Stop() })
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		tb.Fatal(err)
	}
	return &floodRig{env: env, c: c}
}

// startManager runs a manager with the address controller only, with its
// fair queue or (fifo) controller-runtime's default queue, and returns once
// its caches are synced.
func (r *floodRig) startManager(tb testing.TB, fifo bool) (stop func()) {
	tb.Helper()
	mgr, err := testmgr.New(r.env.Config, r.env.Scheme)
	if err != nil {
		tb.Fatal(err)
	}
	setup := addresses.SetupWithManager
	if fifo {
		setup = addresses.SetupWithManagerFIFO
	}
	if err := setup(mgr, ovnk.DefaultClusterConfig()); err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	running := testmgr.Run(ctx, mgr)
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		cancel()
		_ = running.Stop()
		tb.Fatal("the manager's caches did not sync")
	}
	return func() {
		defer cancel()
		if err := running.Stop(); err != nil {
			tb.Error(err)
		}
	}
}

// network makes a namespace with a Primary Layer2 UDN big enough for any flood.
func (r *floodRig) network(tb testing.TB, prefix string) string {
	tb.Helper()
	ns := fmt.Sprintf("%s-%d", prefix, r.runs)
	ctx := context.Background()
	if err := r.c.Create(ctx, testobj.MakeNamespace(ns).Primary().Obj()); err != nil {
		tb.Fatal(err)
	}
	udn := testobj.MakeUDN(ns, "net").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.128.0.0/16")).Obj()
	if err := r.c.Create(ctx, udn); err != nil {
		tb.Fatal(err)
	}
	return ns
}

func floodPod(ns, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			NodeName:   "node-a",
			Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
}

// floodResult is what one flood saw. The counts come from one watch of both
// namespaces, so they are in the order the apiserver wrote the pods.
type floodResult struct {
	// quietLatency runs from the quiet namespace's pod create to the watch
	// event that shows it addressed.
	quietLatency time.Duration
	// floodTotal runs from the first flood create to the last flood pod
	// addressed (0 without a flood).
	floodTotal time.Duration
	// floodPending is how many flood pods were created but not yet
	// addressed when the quiet pod was created; floodAddressedMeanwhile is
	// how many of the flood got addressed between its create and its
	// addresses.
	floodPending, floodAddressedMeanwhile int
}

// podEvents counts, from one watch, the flood's pods created and addressed,
// and snapshots the counts when the quiet pod appears and when it is
// addressed.
type podEvents struct {
	flood, quiet string
	n            int

	mu                   sync.Mutex
	seen, addressed      map[string]bool
	created, done        int // the flood's pods seen and addressed
	atQuiet, atQuietDone [2]int
	quietAt, floodLast   time.Time
	quietDone, floodDone chan struct{}
}

func (e *podEvents) observe(p *metav1.PartialObjectMetadata) {
	if p.Namespace != e.flood && p.Namespace != e.quiet || p.Name == warmPod {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	key := p.Namespace + "/" + p.Name
	quiet := p.Namespace == e.quiet
	if !e.seen[key] {
		e.seen[key] = true
		if quiet {
			e.atQuiet = [2]int{e.created, e.done}
		} else {
			e.created++
		}
	}
	if _, ok := p.Annotations[ovnk.AnnotationPodNetworks]; !ok || e.addressed[key] {
		return
	}
	e.addressed[key] = true
	switch {
	case quiet:
		e.quietAt = time.Now()
		e.atQuietDone = [2]int{e.created, e.done}
		close(e.quietDone)
	default:
		if e.done++; e.done == e.n {
			e.floodLast = time.Now()
			close(e.floodDone)
		}
	}
}

// warmPod is the pod warm makes.
const warmPod = "warm"

// warm creates a pod in ns and waits for its addresses.
func (r *floodRig) warm(tb testing.TB, ns string) {
	tb.Helper()
	ctx := context.Background()
	p := floodPod(ns, warmPod)
	if err := r.c.Create(ctx, p); err != nil {
		tb.Fatal(err)
	}
	testenv.Eventually(tb, "the pod "+ns+"/"+warmPod+" addressed", func() error {
		if err := r.c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		if _, ok := p.Annotations[ovnk.AnnotationPodNetworks]; !ok {
			return fmt.Errorf("no %s annotation", ovnk.AnnotationPodNetworks)
		}
		return nil
	})
}

// watch feeds ev every pod event from now until ctx ends. It watches
// metadata only (the annotation is all it reads), and watches again from
// the last event's resourceVersion when the apiserver ends the watch (it
// drops a watcher that falls behind a flood).
func (r *floodRig) watch(ctx context.Context, tb testing.TB, ev *podEvents) {
	tb.Helper()
	kind := metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}
	list := &metav1.PartialObjectMetadataList{TypeMeta: kind}
	if err := r.c.List(ctx, list, client.Limit(1)); err != nil {
		tb.Fatal(err)
	}
	rv := list.ResourceVersion
	go func() {
		for ctx.Err() == nil {
			w, err := r.c.Watch(ctx, &metav1.PartialObjectMetadataList{TypeMeta: kind},
				&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
			if err != nil {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			for e := range w.ResultChan() {
				p, ok := e.Object.(*metav1.PartialObjectMetadata)
				if !ok {
					continue
				}
				rv = p.ResourceVersion
				if e.Type == watch.Added || e.Type == watch.Modified {
					ev.observe(p)
				}
			}
			w.Stop()
		}
	}()
}

// flood creates n pods in a fresh namespace, 32 at a time (faster than one
// worker addresses them), then one pod in another fresh namespace, and
// waits until every pod is addressed. n = 0 times the quiet pod alone.
func (r *floodRig) flood(tb testing.TB, fifo bool, n int) floodResult {
	tb.Helper()
	r.runs++
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	floodNS, quietNS := r.network(tb, "flood"), r.network(tb, "quiet")
	stop := r.startManager(tb, fifo)
	defer func() {
		stop()
		// The next run's manager starts with an empty queue.
		for _, ns := range []string{floodNS, quietNS} {
			if err := r.c.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0)); err != nil {
				tb.Error(err)
			}
		}
	}()
	// Both networks' allocators are built, and the controller's worker
	// runs, before anything is timed.
	r.warm(tb, floodNS)
	r.warm(tb, quietNS)
	ev := &podEvents{flood: floodNS, quiet: quietNS, n: n, seen: map[string]bool{}, addressed: map[string]bool{},
		quietDone: make(chan struct{}), floodDone: make(chan struct{})}
	if n == 0 {
		close(ev.floodDone)
	}
	r.watch(ctx, tb, ev)

	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := r.c.Create(ctx, floodPod(floodNS, fmt.Sprintf("p%04d", i))); err != nil {
				tb.Error(err)
			}
		})
	}
	wg.Wait()
	quietStart := time.Now()
	if err := r.c.Create(ctx, floodPod(quietNS, "mine")); err != nil {
		tb.Fatal(err)
	}
	deadline := time.After(testenv.EventuallyTimeout + time.Duration(n)*50*time.Millisecond)
	for _, ch := range []chan struct{}{ev.quietDone, ev.floodDone} {
		select {
		case <-ch:
		case <-deadline:
			ev.mu.Lock()
			defer ev.mu.Unlock()
			tb.Fatalf("not every pod addressed in time: %d of %d flood pods, quiet pod: %v", ev.done, n, !ev.quietAt.IsZero())
		}
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	res := floodResult{
		quietLatency:            ev.quietAt.Sub(quietStart),
		floodPending:            ev.atQuiet[0] - ev.atQuiet[1],
		floodAddressedMeanwhile: ev.atQuietDone[1] - ev.atQuiet[1],
	}
	if n > 0 {
		res.floodTotal = ev.floodLast.Sub(start)
	}
	return res
}

// A flood of pods in one namespace does not hold up another namespace's
// pod: of the flood's pods still waiting when the other pod is created,
// fewer than a quarter get their addresses before it does, since the
// address controller's queue serves namespaces in turn. (With one FIFO the
// other pod waits for all of them.)
func TestPodFloodInOneNamespaceDoesNotHoldUpAnother(t *testing.T) {
	const n = 400
	r := startFloodRig(t)
	res := r.flood(t, false, n)
	t.Logf("after %d pods created in one namespace, another's pod was addressed in %s; %d of the flood waited at its create, %d were addressed before it; the flood took %s",
		n, res.quietLatency.Round(time.Millisecond), res.floodPending, res.floodAddressedMeanwhile, res.floodTotal.Round(time.Millisecond))
	if res.floodPending < n/10 {
		t.Fatalf("only %d of the flood's %d pods waited when the other pod was created: the flood did not outpace the controller, so this run shows nothing", res.floodPending, n)
	}
	if res.floodAddressedMeanwhile > res.floodPending/4 {
		t.Errorf("the other namespace's pod waited for %d of the %d flood pods queued before it, want at most %d",
			res.floodAddressedMeanwhile, res.floodPending, res.floodPending/4)
	}
}

// BenchmarkPodFloodFairness: a pod created in a quiet namespace right after
// 2,000 pods were created in another, with the address controller's fair
// queue and with controller-runtime's default queue, and the quiet pod
// alone as the same run's baseline. It reports the quiet pod's time to its
// addresses, the flood's total time to the last of its pods' addresses, and
// how many flood pods were addressed while the quiet pod waited.
func BenchmarkPodFloodFairness(b *testing.B) {
	const n = 2000
	r := startFloodRig(b)
	run := func(name string, fifo bool, n int) {
		b.Run(name, func(b *testing.B) {
			var quiet, total time.Duration
			var meanwhile, runs int
			for b.Loop() {
				res := r.flood(b, fifo, n)
				quiet += res.quietLatency
				total += res.floodTotal
				meanwhile += res.floodAddressedMeanwhile
				runs++
			}
			b.ReportMetric(quiet.Seconds()/float64(runs), "quiet-pod-s")
			if n > 0 {
				b.ReportMetric(total.Seconds()/float64(runs), "flood-total-s")
				b.ReportMetric(float64(meanwhile)/float64(runs), "flood-pods-before")
			}
		})
	}
	// The baseline runs last, against an apiserver as warm as the floods'.
	run("fair-queue", false, n)
	run("default-queue", true, n)
	run("no-flood", false, 0)
}
