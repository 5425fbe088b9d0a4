package datapath_test

import (
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udnkit/udnkit/envtest/datapath/netns"
	"github.com/udnkit/udnkit/internal/benchgoal"
)

// The benchmarks' networks: IDs and subnets no test uses, one network per
// rolling-upgrade sample (a node's move is one-way).
const (
	benchMigrationNetworkID = 90
	benchUpgradeFirstID     = 91
)

// probeGoals bound a benchmark's worst sample: its longest gap between two
// echo replies and its echo requests lost.
type probeGoals struct {
	maxGap  time.Duration
	maxLost float64
}

// The goals "keep or improve" the gap and the loss measured so far: no
// sample worse than the worst of them.
const (
	// "The live-migration gap (61–231 ms, 2–9 packets at 50/s)".
	migrationMaxGapGoal  = 231 * time.Millisecond
	migrationMaxLostGoal = 9
	// "the rolling-upgrade loss (2–4 of ~106, gap 57–74 ms)".
	upgradeMaxGapGoal  = 74 * time.Millisecond
	upgradeMaxLostGoal = 4
)

// benchUpgrades numbers the rolling-upgrade networks made so far.
var benchUpgrades atomic.Int64

// BenchmarkLiveMigrationGap live-migrates a VM on a Primary Layer2 network
// from node-a to node-b (TestKubeVirtLiveMigration's steps: target pod up,
// switch-over, source pod gone) while a pod on node-c pings it every 20 ms
// and holds a TCP connection to it; each sample is one migration of a new
// VM. ns/op is the median of the longest gap between two echo replies; it
// also reports the largest gap, the echo requests lost and the longest TCP
// stall. The baseline is the same probe across the same steps with the VM
// staying put, the same reconciles running in every zone at the same
// moments: the same path, probe and load, so what remains of the gap
// beyond the baseline's is what the migration itself costs (a pod-to-pod
// path would leave out the VM's bridge and the reconciles' load).
func BenchmarkLiveMigrationGap(b *testing.B) {
	c := needCluster(b)
	// The parent's cleanups run after both sub-benchmarks.
	net, client := kubevirtNetwork(b, c, "bench-kv", benchMigrationNetworkID, "10.190.0.0/16")
	b.Run("migrate-node-a-to-node-b", func(b *testing.B) {
		var samples []migrationTraffic
		for i := range b.N {
			inSample(b, func(t testing.TB) {
				m := startServingVM(t, c, net, "vm"+strconv.Itoa(i), client)
				samples = append(samples, m.underTraffic(t, client, true))
			})
		}
		reportMigration(b, samples, &probeGoals{maxGap: migrationMaxGapGoal, maxLost: migrationMaxLostGoal})
	})
	b.Run("baseline-vm-stays-put", func(b *testing.B) {
		var samples []migrationTraffic
		inSample(b, func(t testing.TB) {
			m := startServingVM(t, c, net, "vm-stays", client)
			for range b.N {
				samples = append(samples, m.underTraffic(t, client, false))
			}
		})
		reportMigration(b, samples, nil)
	})
}

// BenchmarkRollingUpgradeLoss moves node-a of a Primary Layer2 network from
// OVN-Kubernetes' old topology to the transit router (TestLayer2RollingUpgrade:
// node-a drained, udnkit's reconciles in node-a's and node-b's zones, a pod
// back on node-a) while node-b's pod pings node-a's gateway router at its
// join IP every 20 ms; each sample is a new network. ns/op is the median
// of the longest gap between two echo replies; it also reports the largest
// gap and the echo requests lost. The baseline is the same probe across the
// same reconciles with node-a keeping its pod, so nothing moves: what
// remains beyond it is what the upgrade itself costs.
func BenchmarkRollingUpgradeLoss(b *testing.B) {
	c := needCluster(b)
	upgrade := func(t testing.TB) *rollingUpgrade {
		k := int(benchUpgrades.Add(1)) - 1
		if k > 255 {
			t.Fatalf("more than 256 rolling-upgrade networks in one process")
		}
		return setUpRollingUpgrade(t, c, fmt.Sprintf("bench-up-%d", k), benchUpgradeFirstID+k, fmt.Sprintf("10.200.%d.0/24", k))
	}
	b.Run("move-node-a", func(b *testing.B) {
		var samples []netns.ProbeResult
		for range b.N {
			inSample(b, func(t testing.TB) {
				u := upgrade(t)
				result, _, _ := u.move(t, true)
				samples = append(samples, result)
			})
		}
		reportProbes(b, samples, &probeGoals{maxGap: upgradeMaxGapGoal, maxLost: upgradeMaxLostGoal}, nil)
	})
	b.Run("baseline-no-move", func(b *testing.B) {
		var samples []netns.ProbeResult
		inSample(b, func(t testing.TB) {
			u := upgrade(t)
			for range b.N {
				result, _, _ := u.move(t, false)
				samples = append(samples, result)
			}
		})
		reportProbes(b, samples, nil, nil)
	})
}

// sampleScope runs a benchmark sample's cleanups when the sample ends
// rather than when the benchmark does, so the next sample starts from the
// same cluster (a new VM may take the same addresses).
type sampleScope struct {
	testing.TB
	cleanups []func()
}

func (s *sampleScope) Cleanup(f func()) { s.cleanups = append(s.cleanups, f) }

// inSample runs sample, then its cleanups, last first.
func inSample(b *testing.B, sample func(t testing.TB)) {
	b.Helper()
	s := &sampleScope{TB: b}
	defer func() {
		for _, f := range slices.Backward(s.cleanups) {
			f()
		}
	}()
	sample(s)
}

// reportMigration reports the migrations' probes (reportProbes, against
// goals if not nil) and the median of the longest TCP stall.
func reportMigration(b *testing.B, samples []migrationTraffic, goals *probeGoals) {
	b.Helper()
	probes := make([]netns.ProbeResult, len(samples))
	stalls := make([]float64, len(samples))
	for i, s := range samples {
		probes[i], stalls[i] = s.icmp, float64(s.tcp.LongestStall)
	}
	reportProbes(b, probes, goals, func(i int) string {
		s := samples[i]
		return fmt.Sprintf("; switch-over written in %d ms, the longest gap from %+d ms of it; TCP longest stall %d ms", s.switched.Milliseconds(),
			s.icmp.GapStart.Sub(s.switchStart).Milliseconds(), s.tcp.LongestStall.Milliseconds())
	})
	b.ReportMetric(median(stalls), "p50-tcp-stall-ns")
}

// reportProbes reports, over the samples, the median of the longest gap
// between two echo replies as ns/op (benchreport's ratio to the baseline),
// the largest gap, the median and largest outage (ProbeResult.LongestOutage:
// what the network lost, without the prober's own stalls), and the median
// and largest count of echo requests lost in a sample; the largest gap and
// loss beside goals if not nil. note, if not nil, adds to each sample's log
// line.
func reportProbes(b *testing.B, samples []netns.ProbeResult, goals *probeGoals, note func(i int) string) {
	b.Helper()
	if len(samples) == 0 {
		b.Fatal("no samples")
	}
	n := len(samples)
	gaps, outages, lost, sent := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i, r := range samples {
		if r.Answered == 0 {
			b.Fatalf("sample %d: %s: nothing answered", i, r)
		}
		gaps[i], outages[i], lost[i], sent[i] = float64(r.LongestGap), float64(r.LongestOutage), float64(r.Lost()), float64(r.Sent)
		extra := ""
		if note != nil {
			extra = note(i)
		}
		b.Logf("sample %d: %s%s", i, r, extra)
	}
	b.ReportMetric(median(gaps), "ns/op")
	b.ReportMetric(median(outages), "p50-outage-ns")
	b.ReportMetric(slices.Max(outages), "max-outage-ns")
	b.ReportMetric(median(lost), "p50-lost/op")
	if goals != nil {
		benchgoal.Report(b, "max-gap-ns", slices.Max(gaps), float64(goals.maxGap))
		benchgoal.Report(b, "max-lost/op", slices.Max(lost), goals.maxLost)
	} else {
		b.ReportMetric(slices.Max(gaps), "max-gap-ns")
		b.ReportMetric(slices.Max(lost), "max-lost/op")
	}
	b.ReportMetric(median(sent), "sent/op")
	b.ReportMetric(float64(len(samples)), "samples")
}

// median is the middle of the values (the mean of the middle two of an
// even count).
func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}
