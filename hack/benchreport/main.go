// Command benchreport turns `go test -bench` output into one table: operation,
// figure, the baseline measured in the same run, and their ratio.
//
// Convention: a benchmark's baseline is its sibling sub-benchmark whose last
// name element is "baseline" or starts with "baseline-" (for example
// BenchmarkCreateUDN/webhook and BenchmarkCreateUDN/baseline-no-webhook).
// Benchmarks without a baseline are listed with their figure only. Custom
// metrics reported with b.ReportMetric (p50-ns, p99-ns, ops/s, ...) are shown
// beside ns/op.
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
)

// result is one benchmark line.
type result struct {
	pkg     string
	name    string // without the Benchmark prefix and the -GOMAXPROCS suffix
	nsPerOp float64
	metrics map[string]float64
	order   []string
}

var lineRE = regexp.MustCompile(`^Benchmark(\S+?)(?:-\d+)?\s+(\d+)\s+(.*)$`)

func parse(r io.Reader) ([]result, map[string]string, error) {
	var out []result
	env := map[string]string{}
	pkg := ""
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
		res := result{pkg: pkg, name: m[1], metrics: map[string]float64{}}
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
		if unit == "B/op" || unit == "allocs/op" {
			continue
		}
		v := r.metrics[unit]
		if strings.HasSuffix(unit, "-ns") {
			parts = append(parts, strings.TrimSuffix(unit, "-ns")+" "+duration(v))
		} else {
			parts = append(parts, strconv.FormatFloat(v, 'g', 4, 64)+" "+unit)
		}
	}
	return strings.Join(parts, ", ")
}

func report(results []result, env map[string]string) string {
	baselines := map[string]result{}
	for _, r := range results {
		if isBaseline(r.name) {
			baselines[r.pkg+" "+parent(r.name)] = r
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
	b.WriteString("| package | operation | figure | baseline (same run) | ratio |\n|---|---|---|---|---|\n")
	for _, r := range results {
		if isBaseline(r.name) {
			continue
		}
		pkg := r.pkg[strings.LastIndex(r.pkg, "/")+1:]
		base, ok := baselines[r.pkg+" "+parent(r.name)]
		if !ok || base.nsPerOp == 0 {
			fmt.Fprintf(&b, "| %s | %s | %s | — | — |\n", pkg, r.name, figure(r))
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s: %s | %s× |\n", pkg, r.name, figure(r),
			base.name[strings.LastIndex(base.name, "/")+1:], figure(base), strconv.FormatFloat(r.nsPerOp/base.nsPerOp, 'g', 3, 64))
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
