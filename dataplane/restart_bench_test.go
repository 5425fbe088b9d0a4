package dataplane

import (
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/internal/benchgoal"
	"github.com/udnkit/udnkit/ovnk"
)

// restartNetworks builds n Primary networks of nodes nodes each, half
// Layer2 and half Layer3, as a zone's dataplane programs them (the first
// node local).
func restartNetworks(b *testing.B, n, nodes int) []*rows.Desired {
	var out []*rows.Desired
	for i := range n {
		name := "ns" + strconv.Itoa(i) + "_net"
		var d *rows.Desired
		var err error
		if i%2 == 0 {
			net := benchNetwork()
			net.Name = name
			net.SwitchTunnelKey = 16711685 + 2*i
			net.TransitRouterTunnelKey = 16711686 + 2*i
			d, err = topology.Layer2Topology(net, manyNodes(nodes))
		} else {
			net := topology.Layer3Network{Name: name, Subnets: []netip.Prefix{pfx("10.128.0.0/14")}, JoinSubnets: []netip.Prefix{pfx("100.65.0.0/16")},
				ClusterIPv4: true, TransitSubnets: []netip.Prefix{ovnk.DefaultTransitSubnetV4}, TransitSwitchTunnelKey: 16711685 + 2*i,
				GatewayMasqueradeIPs: []netip.Addr{addr("169.254.0.13")}, ManagementMasqueradeIPs: []netip.Addr{addr("169.254.0.14")},
				MasqueradeSubnets: []netip.Prefix{pfx("169.254.0.0/17")}}
			l3 := make([]topology.Layer3Node, nodes)
			for j := range l3 {
				node := "node" + strconv.Itoa(j+1)
				l3[j] = topology.Layer3Node{Name: node, ID: j + 2, Local: j == 0, Chassis: chassisOf(node), NoGateway: true,
					HostSubnets: []netip.Prefix{netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(128 + j/256), byte(j % 256), 0}), 24)}}
			}
			d, err = topology.Layer3Topology(net, l3)
		}
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// replan applies every network with the zone controllers' default number
// of workers; each Apply must find nothing to write.
func replan(b *testing.B, ctx context.Context, c *Client, nets []*rows.Desired, wantNoOps bool) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, len(nets))
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(nets) {
					return
				}
				res, err := c.Apply(ctx, nets[i])
				if err == nil && wantNoOps && res.Operations != 0 {
					b.Errorf("network %d: re-plan after restart wrote %d operations, want 0", i, res.Operations)
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// heapObjects is the heap's bytes in objects, live or not yet swept: what
// the process holds between collections.
func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// liveHeap collects and returns the live heap.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	return heapObjects()
}

// restartSamples is how many restarts one benchmark iteration times: the
// figures are medians of at least this many.
const restartSamples = 5

// The restart's goals: "≤ 1.2× the dump, peak ≤ 1.5× converged".
const (
	// restartDumpGoal bounds the restart's time over ovsdb-client dump's.
	restartDumpGoal = 1.2
	// restartPeakGoal bounds the restart's heap peak over the converged
	// client's live heap.
	restartPeakGoal = 1.5
)

// restartFigures are one restart benchmark's samples.
type restartFigures struct {
	restarts, connects, dumps, raws []time.Duration
	// cpus: the process's CPU time during each restart (every goroutine's,
	// the garbage collector's included): less moved by a busy machine
	// than the restart's wall time.
	cpus                       []time.Duration
	peaks, connectPeaks, lives []float64
}

// BenchmarkRestart64Networks is a zone's dataplane restarting on a
// Northbound database that holds 64 networks of 100 nodes (half Layer2,
// half Layer3) as udnkit wrote them: a fresh client connects, copies the
// database into its cache and plans every network again (nothing to
// write). The baselines of the same sample are `ovsdb-client dump` of the
// same database (dump-ms) and the monitor request the client's cache
// sends, read as bytes from a plain connection (raw-monitor-ms: the
// server's part of the initial copy). It reports the restart (restart-ms:
// connect-ms, the initial copy and the index built from it, then replan-ms;
// restart-cpu-ms, the process's CPU time meanwhile) and restart/dump; the heap the
// restart peaked at over the heap before it (peak-MB, connect-peak-MB while
// connecting), the live heap of the converged client (live-MB) and
// peak/live; restart/dump and peak/live beside their goals. Each iteration
// takes restartSamples samples.
func BenchmarkRestart64Networks(b *testing.B) {
	e := newEnv(b)
	nets := restartNetworks(b, 64, 100)
	replan(b, e.ctx, e.c, nets, false)
	e.c.Close()
	f := &restartFigures{}
	for b.Loop() {
		for range restartSamples {
			f.sample(b, e, nets)
		}
	}
	f.report(b)
}

// sample times the baselines, then one restart, sampling the heap every
// millisecond while it runs.
func (f *restartFigures) sample(b *testing.B, e *env, nets []*rows.Desired) {
	start := time.Now()
	if out, err := exec.Command("ovsdb-client", "dump", e.db.NB.Address(), schema.Northbound).CombinedOutput(); err != nil {
		b.Fatalf("ovsdb-client dump: %v: %s", err, out)
	}
	f.dumps = append(f.dumps, time.Since(start))
	start = time.Now()
	rawMonitor(b, e.db.NB.Address())
	f.raws = append(f.raws, time.Since(start))

	base := liveHeap()
	var peak atomic.Uint64
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			if h := heapObjects(); h > peak.Load() {
				peak.Store(h)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	mb := func(h uint64) float64 { return float64(h-base) / (1 << 20) }
	var c *Client
	// The restart's goroutines (libovsdb's included) carry the label
	// phase=restart: -cpuprofile's samples of it alone are
	// `go tool pprof -tagfocus phase=restart`.
	cpu0 := processCPU(b)
	pprof.Do(e.ctx, pprof.Labels("phase", "restart"), func(context.Context) {
		start = time.Now()
		var err error
		if c, err = dial(e.ctx, Config{NBAddress: e.db.NB.Address(), SBAddress: e.db.SB.Address()}, nil); err != nil {
			b.Fatal(err)
		}
		f.connects = append(f.connects, time.Since(start))
		f.connectPeaks = append(f.connectPeaks, mb(max(peak.Load(), heapObjects())))
		replan(b, e.ctx, c, nets, true)
		f.restarts = append(f.restarts, time.Since(start))
	})
	f.cpus = append(f.cpus, processCPU(b)-cpu0)
	close(stop)
	<-sampled
	live := liveHeap()
	f.peaks = append(f.peaks, mb(peak.Load()))
	f.lives = append(f.lives, mb(live))
	c.Close()
}

// report reports the medians, and logs every sample's ratios (the spread).
func (f *restartFigures) report(b *testing.B) {
	ratios := make([]float64, len(f.restarts))
	for i := range f.restarts {
		ratios[i] = float64(f.restarts[i]) / float64(f.dumps[i])
	}
	mem := make([]float64, len(f.peaks))
	for i := range f.peaks {
		mem[i] = f.peaks[i] / f.lives[i]
	}
	b.ReportMetric(medianMs(f.restarts), "restart-ms")
	b.ReportMetric(medianMs(f.connects), "connect-ms")
	replans := make([]time.Duration, len(f.restarts))
	for i := range f.restarts {
		replans[i] = f.restarts[i] - f.connects[i]
	}
	b.ReportMetric(medianMs(replans), "replan-ms")
	b.ReportMetric(medianMs(f.cpus), "restart-cpu-ms")
	b.ReportMetric(medianMs(f.dumps), "dump-ms")
	b.ReportMetric(medianMs(f.raws), "raw-monitor-ms")
	benchgoal.Report(b, "restart/dump", median(ratios), restartDumpGoal)
	b.ReportMetric(median(f.peaks), "peak-MB")
	b.ReportMetric(median(f.connectPeaks), "connect-peak-MB")
	b.ReportMetric(median(f.lives), "live-MB")
	benchgoal.Report(b, "peak/live", median(mem), restartPeakGoal)
	b.Logf("restart/dump %.2f; peak/live %.2f", sorted(ratios), sorted(mem))
}

// processCPU is the process's user and system CPU time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rawMonitor sends the Northbound monitor request udnkit's cache sends (every
// table, every column) on a plain connection and reads its reply as bytes:
// what the server takes to compose and send the initial copy, and a client
// to receive it, with no decoding.
func rawMonitor(b *testing.B, address string) {
	conn, err := net.Dial("unix", strings.TrimPrefix(address, "unix:"))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	tables := map[string]any{}
	for _, t := range schema.Tables() {
		if t.DB == schema.Northbound && t.Monitor != nil {
			tables[t.Name] = []any{map[string]any{}}
		}
	}
	req := map[string]any{"id": 1, "method": "monitor_cond_since",
		"params": []any{schema.Northbound, nil, tables, "00000000-0000-0000-0000-000000000000"}}
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		b.Fatal(err)
	}
	var reply struct {
		ID     any             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  any             `json:"error"`
	}
	if err := json.NewDecoder(conn).Decode(&reply); err != nil || reply.Error != nil || len(reply.Result) == 0 {
		b.Fatalf("monitor_cond_since: %v %v", err, reply.Error)
	}
}

func sorted(xs []float64) []float64 {
	out := append([]float64(nil), xs...)
	sort.Float64s(out)
	return out
}

func median(xs []float64) float64 {
	s := sorted(xs)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func medianMs(ds []time.Duration) float64 {
	ms := make([]float64, len(ds))
	for i, d := range ds {
		ms[i] = float64(d) / float64(time.Millisecond)
	}
	return median(ms)
}
