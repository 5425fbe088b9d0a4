package controllers

import (
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	ovsdbclient "github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ovn-kubernetes/libovsdb/cache"

	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/ovnk"
)

// BenchmarkLayer2NetworksCreatedTogether answers "when N Primary Layer2
// UDNs are created at once, does the last one wait for the others?": the
// NADs of N networks (one namespace each) are created together and the
// figure is the time from the first create to the last Northbound row any
// of them gets, through every dataplane controller of a zone on a real
// apiserver and ovsdb-server (three nodes, one local). The baseline is one
// network created alone: a dataplane that programs networks one after
// another takes about N times the baseline; one that programs them
// concurrently takes what the machine's CPUs need for N networks' rows.
// Every sample checks that each network got the rows a network created
// alone gets; ns/op is the median of the samples (samplesPerOp per
// operation), min-ns and max-ns their spread. delete-ns is the median
// time from issuing the N NADs' deletes (concurrently, as the creates) to
// the last Northbound change that removes their rows, once no row of any
// of them is left, delete-min-ns and delete-max-ns its spread; the
// baseline-one-network case's delete-ns is one network deleted alone.
func BenchmarkLayer2NetworksCreatedTogether(b *testing.B) {
	s := newStack(b)
	o := s.dualStackOpts("node-a")
	o.Policy.EgressIP = true
	if _, err := Setup(s.ctx, s.mgr, o); err != nil {
		b.Fatal(err)
	}
	s.start()
	for i, name := range []string{"node-a", "node-b", "node-c"} {
		s.create(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			ovnk.AnnotationNodeID: fmt.Sprint(i + 2), ovnk.AnnotationLayer2TopologyVersion: "2.0",
			ovnk.AnnotationL3GatewayConfig: node1Gateway}}})
	}
	w := watchNB(b, s)
	// A network created alone first: the rows every network must get.
	w.createAndDelete(b, s, bulkNADs(b, s, 0, 1))
	var round atomic.Int64
	for _, c := range []struct {
		name string
		n    int
	}{{"baseline-one-network", 1}, {"20-networks", 20}, {"100-networks", 100}} {
		b.Run(c.name, func(b *testing.B) {
			var samples, deletes []time.Duration
			for range b.N * samplesPerOp {
				b.StopTimer()
				nads := bulkNADs(b, s, int(round.Add(1)), c.n)
				created, deleted := w.createAndDelete(b, s, nads)
				samples, deletes = append(samples, created), append(deletes, deleted)
				b.StartTimer()
			}
			reportSamples(b, samples, c.n)
			slices.Sort(deletes)
			b.ReportMetric(float64(deletes[len(deletes)/2].Nanoseconds()), "delete-ns")
			b.ReportMetric(float64(deletes[0].Nanoseconds()), "delete-min-ns")
			b.ReportMetric(float64(deletes[len(deletes)-1].Nanoseconds()), "delete-max-ns")
		})
	}
}

// samplesPerOp is how many times each benchmark operation creates its
// networks: one operation (what `make bench` runs) gives a median and spread.
const samplesPerOp = 5

// bulkNADs creates the namespaces and owner UDNs of n networks of round r
// and returns their NADs, not created yet.
func bulkNADs(b *testing.B, s *stack, r, n int) []*nadv1.NetworkAttachmentDefinition {
	var nads []*nadv1.NetworkAttachmentDefinition
	for i := range n {
		ns := fmt.Sprintf("b%d-%d", r, i)
		id := (r*100+i)%4000 + 1
		s.create(namespace(ns))
		nad := &nadv1.NetworkAttachmentDefinition{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "net",
				Labels: map[string]string{ovnk.LabelUserDefinedNetwork: ""},
				Annotations: map[string]string{ovnk.AnnotationNetworkID: fmt.Sprint(id),
					ovnk.AnnotationTunnelKeys: fmt.Sprintf("[%d,%d]", 16711685+2*id, 16711686+2*id)}},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: fmt.Sprintf(`{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay",`+
				`"name":"%s_net","netAttachDefName":"%s/net","topology":"layer2","role":"primary",`+
				`"subnets":"10.150.0.0/16,2001:db8:150::/60","mtu":1400}`, ns, ns)},
		}
		own(b, s.ctx, s.c, nad)
		nads = append(nads, nad)
	}
	return nads
}

// nbWatch is a connection of its own to the Northbound database that
// notes when the last change arrived.
type nbWatch struct {
	c    ovsdbclient.Client
	last atomic.Int64 // UnixNano of the last event
	// want is how many rows a network gets (0: not known yet).
	want int
}

func watchNB(b *testing.B, s *stack) *nbWatch {
	m, err := nbdb.FullDatabaseModel()
	if err != nil {
		b.Fatal(err)
	}
	c, err := ovsdbclient.NewOVSDBClient(m, ovsdbclient.WithEndpoint(s.db.NB.Address()))
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Connect(s.ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	w := &nbWatch{c: c}
	note := func() { w.last.Store(time.Now().UnixNano()) }
	c.Cache().AddEventHandler(&cache.EventHandlerFuncs{
		AddFunc:    func(string, model.Model) { note() },
		UpdateFunc: func(string, model.Model, model.Model) { note() },
		DeleteFunc: func(string, model.Model) { note() },
	})
	if _, err := c.MonitorAll(s.ctx); err != nil {
		b.Fatal(err)
	}
	return w
}

// quiet is how long the database must not change for the networks to count
// as programmed; no controller waits that long between two of a network's
// writes.
const quiet = 2 * time.Second

// settle waits until the database has not changed for quiet and done
// (nil: always) holds for the rows each network owns.
func (w *nbWatch) settle(b *testing.B, done func(counts map[string]int) bool) map[string]int {
	b.Helper()
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if time.Since(time.Unix(0, w.last.Load())) >= quiet {
			counts := w.counts()
			if done == nil || done(counts) {
				return counts
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("the Northbound database did not settle: rows per network %v (a network created alone: %d)", w.counts(), w.want)
		}
	}
}

// counts is how many rows the cache holds per benchmark network (by
// external_ids; the zone's own rows are left out).
func (w *nbWatch) counts() map[string]int {
	out := map[string]int{}
	for _, table := range w.c.Cache().Tables() {
		for _, m := range w.c.Cache().Table(table).Rows() {
			if _, ids, _, ok := schema.RowFields(table, m); ok && strings.HasSuffix(ids[ovnk.ExternalIDNetwork], "_net") {
				out[ids[ovnk.ExternalIDNetwork]]++
			}
		}
	}
	return out
}

// createAndDelete creates the NADs at once and returns the time from the
// first create to the networks' last Northbound change, once the database
// is quiet and every network has the rows a network created alone gets;
// then (untimed) it deletes them, all at once too, and returns the time
// from the start of the deletes to the last change, once their rows are
// gone.
func (w *nbWatch) createAndDelete(b *testing.B, s *stack, nads []*nadv1.NetworkAttachmentDefinition) (created, deleted time.Duration) {
	b.StopTimer()
	w.settle(b, nil)
	b.StartTimer()
	start := time.Now()
	apiCalls(b, nads, func(nad *nadv1.NetworkAttachmentDefinition) error { return s.c.Create(s.ctx, nad) })
	// A network short of rows after a quiet spell is waited for (a
	// controller's requeue may come later); the settle fails in the end.
	counts := w.settle(b, func(counts map[string]int) bool {
		if len(counts) != len(nads) {
			return false
		}
		for _, n := range counts {
			if w.want != 0 && n != w.want {
				return false
			}
		}
		return true
	})
	took := time.Unix(0, w.last.Load()).Sub(start)
	b.StopTimer()
	if w.want == 0 {
		w.want = counts[nads[0].Namespace+"_"+nads[0].Name]
	}
	stop := deleteProfile(b, len(nads))
	start = time.Now()
	apiCalls(b, nads, func(nad *nadv1.NetworkAttachmentDefinition) error { return s.c.Delete(s.ctx, nad) })
	w.settle(b, func(counts map[string]int) bool { return len(counts) == 0 })
	stop()
	return took, time.Unix(0, w.last.Load()).Sub(start)
}

// apiCalls makes call for every NAD at once (as N users would), so the
// time measured is the dataplane's rather than N round trips to the
// apiserver one after another; it fails the benchmark on any error.
func apiCalls(b *testing.B, nads []*nadv1.NetworkAttachmentDefinition, call func(*nadv1.NetworkAttachmentDefinition) error) {
	var wg sync.WaitGroup
	errs := make([]error, len(nads))
	for i, nad := range nads {
		wg.Go(func() { errs[i] = call(nad) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

// deleteProfileEnv names a file prefix: set, each deletion of 100
// networks writes the CPU profile of its deletes (until the rows are gone)
// to prefix.1, prefix.2 … (merge them with go tool pprof), so the profile
// holds the deletion path alone, without the creates.
const deleteProfileEnv = "UDNKIT_BENCH_DELETE_CPUPROFILE"

var deleteProfiles atomic.Int32

// deleteProfile starts the CPU profile of a deletion of n networks when
// deleteProfileEnv asks for it, and returns its stop.
func deleteProfile(b *testing.B, n int) func() {
	prefix := os.Getenv(deleteProfileEnv)
	if prefix == "" || n != 100 {
		return func() {}
	}
	f, err := os.Create(fmt.Sprintf("%s.%d", prefix, deleteProfiles.Add(1)))
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// reportSamples sets ns/op to the median sample and adds the spread and
// the median per network.
func reportSamples(b *testing.B, samples []time.Duration, n int) {
	slices.Sort(samples)
	p50 := samples[len(samples)/2]
	b.ReportMetric(float64(p50.Nanoseconds()), "ns/op")
	b.ReportMetric(float64(samples[0].Nanoseconds()), "min-ns")
	b.ReportMetric(float64(samples[len(samples)-1].Nanoseconds()), "max-ns")
	b.ReportMetric(float64(p50.Nanoseconds())/float64(n), "ns/network")
}
