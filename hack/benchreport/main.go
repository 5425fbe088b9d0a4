// Command benchreport turns `go test -bench` output into one table: operation,
// figure, the baseline measured in the same run, their ratio, and the goals.
//
// Convention: a benchmark's baseline is its sibling sub-benchmark whose last
// name element is "baseline" or starts with "baseline-" (for example
// BenchmarkCreateUDN/webhook and BenchmarkCreateUDN/baseline-no-webhook).
// Benchmarks without a baseline are listed with their figure only. With
// -count above 1 (go test runs each sub-benchmark that many times, in one
// run of the parent) a benchmark's k-th result is compared with its
// baseline's k-th and labelled #k. Custom
// metrics reported with b.ReportMetric (p50-ns, p99-ns, ops/s, ...) are shown
// beside ns/op.
//
// Goals are reported as package internal/benchgoal describes: <name>-goal
// bounds the figure <name> (ratio-goal bounds the ratio column). The goal
// column shows each bound and whether the figure meets it.
//
//	go test -run '^$' -bench . ./... | benchreport -o bin/bench-report.md
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/udnkit/udnkit/internal/benchgoal"
)

// result is one benchmark line.
type result struct {
	pkg     string
	name    string // without the Benchmark prefix and the -GOMAXPROCS suffix
	run     int    // 1 for the first result of pkg and name in the input, 2 for the second...
	nsPerOp float64
	metrics map[string]float64
	order   []string
}

var lineRE = regexp.MustCompile(`^Benchmark(\S+?)(?:-\d+)?\s+(\d+)\s+(.*)$`)

func parse(r io.Reader) ([]result, map[string]string, error) {
	var out []result
	env := map[string]string{}
	pkg := ""
	runs := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1024*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		for _, key := range []string{"goos", "goarch", "cpu", "pkg"} {
			if v, ok := strings.CutPrefix(line, key+": "); ok {
				if key == "pkg" {
					pkg = v
				} else {
					env[key] = v
				}
			}
		}
		m := lineRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		runs[pkg+" "+m[1]]++
		res := result{pkg: pkg, name: m[1], run: runs[pkg+" "+m[1]], metrics: map[string]float64{}}
		fields := strings.Fields(m[3])
		for i := 0; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, nil, fmt.Errorf("%q: %w", line, err)
			}
			unit := fields[i+1]
			if unit == "ns/op" {
				res.nsPerOp = v
				continue
			}
			res.metrics[unit] = v
			res.order = append(res.order, unit)
		}
		out = append(out, res)
	}
	return out, env, sc.Err()
}

func isBaseline(name string) bool {
	last := name[strings.LastIndex(name, "/")+1:]
	return last == "baseline" || strings.HasPrefix(last, "baseline-")
}

func parent(name string) string {
	if i := strings.LastIndex(name, "/"); i >= 0 {
		return name[:i]
	}
	return ""
}

func duration(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.2f s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.2f µs", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
}

func figure(r result) string {
	parts := []string{duration(r.nsPerOp) + "/op"}
	for _, unit := range r.order {
		if unit == "B/op" || unit == "allocs/op" || strings.HasSuffix(unit, benchgoal.GoalSuffix) {
			continue // goals (and the figures' shares of them) are the goal column's
		}
		v := r.metrics[unit]
		parts = append(parts, metric(unit, v))
	}
	return strings.Join(parts, ", ")
}

// metric renders a custom metric: a duration for a unit ending in -ns.
func metric(unit string, v float64) string {
	if name, ok := strings.CutSuffix(unit, "-ns"); ok {
		return name + " " + duration(v)
	}
	return strconv.FormatFloat(v, 'g', 4, 64) + " " + unit
}

// goals renders r's goals: each bound, and whether r's figure (ratio, the
// ratio to the baseline, for the ratio's goal; hasRatio false when there is
// none) meets it.
func goals(r result, ratio float64, hasRatio bool) string {
	var parts []string
	for _, unit := range r.order {
		name, ok := strings.CutSuffix(unit, benchgoal.GoalSuffix)
		if !ok || strings.HasSuffix(unit, benchgoal.OfGoalSuffix) {
			continue
		}
		goal := r.metrics[unit]
		label := name + " ≤ " + strconv.FormatFloat(goal, 'g', 4, 64)
		if short, ok := strings.CutSuffix(name, "-ns"); ok {
			label = short + " ≤ " + duration(goal)
		}
		fig, ok := r.metrics[name]
		if name == benchgoal.Ratio {
			fig, ok = ratio, hasRatio
		}
		switch {
		case !ok:
			parts = append(parts, label+": no figure")
		case fig <= goal:
			parts = append(parts, fmt.Sprintf("%s: ✓ met (%.2f of it)", label, fig/goal))
		default:
			parts = append(parts, fmt.Sprintf("%s: ✗ missed (%.2f of it)", label, fig/goal))
		}
	}
	if len(parts) == 0 {
		return "—"
	}
	return strings.Join(parts, "; ")
}

// baselines finds each result's baseline: its parent's baseline of the same
// run, or the last one when the baseline ran fewer times.
type baselines map[string]result

func (bs baselines) add(r result) {
	bs[r.pkg+" "+parent(r.name)] = r
	bs[r.pkg+" "+parent(r.name)+" #"+strconv.Itoa(r.run)] = r
}

func (bs baselines) of(r result) (result, bool) {
	if base, ok := bs[r.pkg+" "+parent(r.name)+" #"+strconv.Itoa(r.run)]; ok {
		return base, true
	}
	base, ok := bs[r.pkg+" "+parent(r.name)]
	return base, ok
}

func report(results []result, env map[string]string) string {
	bases := baselines{}
	repeated := map[string]bool{}
	for _, r := range results {
		if isBaseline(r.name) {
			bases.add(r)
		}
		if r.run > 1 {
			repeated[r.pkg+" "+r.name] = true
		}
	}
	sort.SliceStable(results, func(i, j int) bool {
		if results[i].pkg != results[j].pkg {
			return results[i].pkg < results[j].pkg
		}
		return results[i].name < results[j].name
	})
	var b strings.Builder
	fmt.Fprintf(&b, "Machine: %s/%s, %s\n\n", env["goos"], env["goarch"], env["cpu"])
	b.WriteString("| package | operation | figure | baseline (same run) | ratio | goal |\n|---|---|---|---|---|---|\n")
	for _, r := range results {
		if isBaseline(r.name) {
			continue
		}
		pkg := r.pkg[strings.LastIndex(r.pkg, "/")+1:]
		op := r.name
		if repeated[r.pkg+" "+r.name] {
			op += " #" + strconv.Itoa(r.run)
		}
		base, ok := bases.of(r)
		if !ok || base.nsPerOp == 0 {
			fmt.Fprintf(&b, "| %s | %s | %s | — | — | %s |\n", pkg, op, figure(r), goals(r, 0, false))
			continue
		}
		ratio := r.nsPerOp / base.nsPerOp
		fmt.Fprintf(&b, "| %s | %s | %s | %s: %s | %s× | %s |\n", pkg, op, figure(r),
			base.name[strings.LastIndex(base.name, "/")+1:], figure(base), strconv.FormatFloat(ratio, 'g', 3, 64), goals(r, ratio, true))
	}
	return b.String()
}

func main() {
	out := flag.String("o", "", "also write the table to this file")
	flag.Parse()
	results, env, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchreport: %v\n", err)
		os.Exit(1)
	}
	if len(results) == 0 {
		fmt.Fprintln(os.Stderr, "benchreport: no benchmark results in the input")
		os.Exit(1)
	}
	table := report(results, env)
	fmt.Print(table)
	if *out != "" {
		if err := os.WriteFile(*out, []byte(table), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "benchreport: %v\n", err)
			os.Exit(1)
		}
	}
}
