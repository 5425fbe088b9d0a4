package main

import (
	"strings"
	"testing"

	"github.com/udnkit/udnkit/internal/benchgoal"
)

const sample = `goos: linux
goarch: amd64
pkg: github.com/udnkit/udnkit/webhooks
cpu: Intel(R) Xeon(R) CPU
BenchmarkCreateUDN/webhook-2         	     100	   3000000 ns/op	    1200000 p50-ns	    9000000 p99-ns
BenchmarkCreateUDN/baseline-no-webhook-2 	     100	   2000000 ns/op
BenchmarkHandler-2   	   50000	     25000 ns/op	    4096 B/op	      40 allocs/op
PASS
pkg: github.com/udnkit/udnkit/cel
BenchmarkValidate/offline-2	1000	500000 ns/op
BenchmarkValidate/baseline-2	100	4000000 ns/op
ok  	github.com/udnkit/udnkit/cel	3.1s
`

// render parses input and renders its table, checking it parsed n results.
func render(t *testing.T, input string, n int) string {
	t.Helper()
	results, env, err := parse(strings.NewReader(input))
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != n {
		t.Fatalf("parsed %d results, want %d", len(results), n)
	}
	return report(results, env)
}

// wantRows fails t for each of rows table lacks.
func wantRows(t *testing.T, table string, rows ...string) {
	t.Helper()
	for _, want := range rows {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

// wantAbsent fails t for each of parts table holds.
func wantAbsent(t *testing.T, table string, parts ...string) {
	t.Helper()
	for _, part := range parts {
		if strings.Contains(table, part) {
			t.Errorf("table holds %q:\n%s", part, table)
		}
	}
}

func TestReport(t *testing.T) {
	table := render(t, sample, 5)
	wantRows(t, table,
		"Machine: linux/amd64, Intel(R) Xeon(R) CPU",
		"| webhooks | CreateUDN/webhook | 3.00 ms/op, p50 1.20 ms, p99 9.00 ms | baseline-no-webhook: 2.00 ms/op | 1.5× |",
		"| webhooks | Handler | 25.00 µs/op | — | — |",
		"| cel | Validate/offline | 500.00 µs/op | baseline: 4.00 ms/op | 0.125× |",
	)
	wantAbsent(t, table, "| Validate/baseline |") // a baseline is no operation of its own
}

func TestParseRejectsGarbageFigures(t *testing.T) {
	if _, _, err := parse(strings.NewReader("BenchmarkX-2  10  abc ns/op\n")); err == nil {
		t.Error("a non-numeric figure was accepted")
	}
}

// goalSample holds a met and a missed goal on a benchmark's own figures
// (one a duration), a goal on the ratio to the baseline in two runs of the
// parent (the first missed, the second met), and a benchmark with no goal.
const goalSample = `goos: linux
goarch: amd64
pkg: github.com/udnkit/udnkit/dataplane
cpu: Intel(R) Xeon(R) CPU
BenchmarkRestart-2	1	1500000000 ns/op	1.8 peak/live	1.5 peak/live-goal	1.2 peak/live-of-goal	1.1 restart/dump	1.2 restart/dump-goal	0.9167 restart/dump-of-goal
BenchmarkGap/move-2	5	60000000 ns/op	80000000 max-gap-ns	231000000 max-gap-ns-goal	0.3463 max-gap-ns-of-goal	0 max-lost/op	9 max-lost/op-goal	0 max-lost/op-of-goal
BenchmarkGap/baseline-2	5	30000000 ns/op	40000000 max-gap-ns
pkg: github.com/udnkit/udnkit/cmd/udnkit-local
BenchmarkFirstPacket/udnkit-2	1	600000000 ns/op	1.5 ratio-goal
BenchmarkFirstPacket/baseline-one-transaction-2	1	150000000 ns/op
BenchmarkFirstPacket/udnkit-2	1	300000000 ns/op	1.5 ratio-goal
BenchmarkFirstPacket/baseline-one-transaction-2	1	250000000 ns/op
BenchmarkAlone-2	1	100 ns/op	1.5 ratio-goal
`

func TestReportGoals(t *testing.T) {
	table := render(t, goalSample, 8)
	wantRows(t, table,
		"| baseline (same run) | ratio | goal |",
		"| dataplane | Restart | 1.50 s/op, 1.8 peak/live, 1.1 restart/dump | — | — | peak/live ≤ 1.5: ✗ missed (1.20 of it); restart/dump ≤ 1.2: ✓ met (0.92 of it) |",
		"| dataplane | Gap/move | 60.00 ms/op, max-gap 80.00 ms, 0 max-lost/op | baseline: 30.00 ms/op, max-gap 40.00 ms | 2× | max-gap ≤ 231.00 ms: ✓ met (0.35 of it); max-lost/op ≤ 9: ✓ met (0.00 of it) |",
		"| udnkit-local | FirstPacket/udnkit #1 | 600.00 ms/op | baseline-one-transaction: 150.00 ms/op | 4× | ratio ≤ 1.5: ✗ missed (2.67 of it) |",
		"| udnkit-local | FirstPacket/udnkit #2 | 300.00 ms/op | baseline-one-transaction: 250.00 ms/op | 1.2× | ratio ≤ 1.5: ✓ met (0.80 of it) |",
		"| udnkit-local | Alone | 100 ns/op | — | — | ratio ≤ 1.5: no figure |",
	)
	wantAbsent(t, table, "-goal") // goals are no figures
}

// A benchmark without goals has an empty goal column, and one run of it is
// not numbered.
func TestReportNoGoal(t *testing.T) {
	table := render(t, sample, 5)
	wantRows(t, table, "| webhooks | Handler | 25.00 µs/op | — | — | — |\n")
	wantAbsent(t, table, "#1") // a benchmark that ran once is not numbered
}

// What package benchgoal reports is what the goal column reads.
func TestReportReadsBenchgoal(t *testing.T) {
	r := testing.Benchmark(func(b *testing.B) {
		benchgoal.Report(b, "restart/dump", 1.68, 1.2)
		benchgoal.Report(b, "max-gap-ns", 80e6, 231e6)
	})
	table := render(t, "BenchmarkRestart-2\t"+r.String()+"\n", 1)
	wantRows(t, table, "restart/dump ≤ 1.2: ✗ missed (1.40 of it)", "max-gap ≤ 231.00 ms: ✓ met (0.35 of it)")
}
