// Package report is what the scale suite's runs are and measure (Size,
// Result), the Markdown report of them and the targets that judge it
// (thresholds.yaml).
package report

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/udnkit/udnkit/test/scale/internal/metrics"
)

// Plan is what every run shares: its Nodes, the full size the runs'
// networks and pods are fractions of, and the concurrent creates.
type Plan struct {
	Nodes, Networks, Pods, Workers int
}

// Write writes to path the Markdown report of the runs so far: one column per
// run, the growth of each figure from one run to the next (the runs double
// the networks and pods), a power-law projection to the full size, and the
// apiserver's requests by verb and resource.
func Write(path string, p Plan, th Thresholds, rs []Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# udnkit scale report\n\n")
	fmt.Fprintf(&b, "%d Nodes in every run; networks and pods are fractions of %d networks and %d pods, "+
		"one namespace per network, the networks round-robin over UDN/CUDN × Layer2/Layer3 × Primary/Secondary. "+
		"Times are from the first create; created: all objects accepted by the apiserver (%d concurrent creates).\n\n",
		p.Nodes, p.Networks, p.Pods, p.Workers)
	head := "| figure |"
	sep := "|---|"
	for _, r := range rs {
		head += fmt.Sprintf(" %s (%d networks, %d pods) |", r.Label, r.Networks, r.Pods)
		sep += "---|"
	}
	if len(rs) > 1 {
		head += " growth per doubling |"
		sep += "---|"
		if p.Networks > rs[len(rs)-1].Networks {
			head += fmt.Sprintf(" projected to %d networks |", p.Networks)
			sep += "---|"
		}
	}
	b.WriteString(head + "\n" + sep + "\n")
	for _, rw := range reportRows() {
		if special := rw.format == "" || rw.format == "webhooks" || rw.format == "restart-cpu"; !special &&
			!slices.ContainsFunc(rs, func(r Result) bool { _, ok := rw.val(r); return ok }) {
			continue // measured in no run (e.g. the live dataplane without -dataplane-live)
		}
		line := "| " + rw.name + " |"
		var vals []float64
		for _, r := range rs {
			if rw.format == "webhooks" {
				line += fmt.Sprintf(" %.0f MiB, %.1f s |", r.WebhookRSSMiB, r.WebhookCPUSeconds)
				continue
			}
			if rw.format == "restart-cpu" {
				line += fmt.Sprintf(" %.1f s, %.1f s |", r.RestartCPUSeconds, r.RestartRequests[metrics.APIServerCPU])
				continue
			}
			if rw.format == "" {
				line += fmt.Sprintf(" %d / %d, %d |", r.PrimaryL2, r.PrimaryL3, r.Networks-r.PrimaryL2-r.PrimaryL3)
				continue
			}
			v, ok := rw.val(r)
			if !ok {
				line += " — |"
				continue
			}
			vals = append(vals, v)
			line += " " + fmt.Sprintf(rw.format, v) + " |"
		}
		if len(rs) > 1 {
			if rw.growth && len(vals) == len(rs) {
				t, _ := th.Of(rw.name)
				var gs []string
				for i := 1; i < len(vals); i++ {
					if vals[i-1] > 0 {
						g := fmt.Sprintf("%.2f×", vals[i]/vals[i-1])
						if t.growthMissed(rs[i-1], rs[i], vals[i-1], vals[i]) {
							g += " ✗"
						}
						gs = append(gs, g)
					}
				}
				line += " " + strings.Join(gs, ", ") + " |"
				if p.Networks > rs[len(rs)-1].Networks {
					line += " " + project(rw.format, rs, vals, p.Networks) + " |"
				}
			} else {
				line += " |"
				if p.Networks > rs[len(rs)-1].Networks {
					line += " |"
				}
			}
		}
		b.WriteString(line + "\n")
	}
	fmt.Fprintf(&b, "\nProjection: a power law through the last two runs (v × (N/n)^k, k = log(v2/v1)/log(n2/n1)).\n")
	writeTargets(&b, th, rs)

	writeRequests(&b, "apiserver requests to converged (apiserver_request_total; creates by the driver, the rest by the manager)", "verb resource",
		rs, func(r Result) map[string]float64 { return r.Requests })
	writeRequests(&b, "the manager's reconciles to converged (controller_runtime_reconcile_total), by controller", "controller",
		rs, func(r Result) map[string]float64 { return r.Reconciles })
	writeRequests(&b, "apiserver requests from the restart to converged", "verb resource",
		rs, func(r Result) map[string]float64 { return r.RestartRequests })

	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// reportRow is one figure of the report: its name (the first cell, and the
// name thresholds.yaml judges it by), its value in a run (false: not
// measured there), its format ("" and the two special formats are
// composite cells) and whether its growth from run to run is shown.
type reportRow struct {
	name   string
	val    func(Result) (float64, bool)
	format string
	growth bool
}

// reportRows are the report's figures, in order.
func reportRows() []reportRow {
	dur := func(f func(Result) time.Duration) func(Result) (float64, bool) {
		return func(r Result) (float64, bool) { return f(r).Seconds(), true }
	}
	ovnOf := func(pick func(Result) *OVN, f func(*OVN) float64) func(Result) (float64, bool) {
		return func(r Result) (float64, bool) {
			o := pick(r)
			if o == nil {
				return 0, false
			}
			v := f(o)
			return v, !math.IsNaN(v)
		}
	}
	caughtUp := func(r Result) *OVN { return r.OVN }
	live := func(r Result) *OVN { return r.OVNLive }
	ovn := func(f func(*OVN) float64) func(Result) (float64, bool) { return ovnOf(caughtUp, f) }
	perServer := func(o *OVN) float64 {
		if o.ServerCPU <= 0 {
			return math.NaN()
		}
		return o.CPU / o.ServerCPU
	}
	perRows := func(o *OVN) float64 { return 1000 * o.CPU / float64(o.Total()) }
	return []reportRow{
		{"Primary Layer2 / Layer3 networks, Secondary", func(r Result) (float64, bool) { return 0, false }, "", false},
		{"all objects created", dur(func(r Result) time.Duration { return r.CreateAll }), "%.1f s", true},
		{"failed creates (after 5 tries)", func(r Result) (float64, bool) { return float64(r.CreateErrors), true }, "%.0f", false},
		{"retried creates", func(r Result) (float64, bool) { return float64(r.CreateRetries), true }, "%.0f", false},
		{"all NADs", dur(func(r Result) time.Duration { return r.NADs }), "%.1f s", true},
		{"all network IDs", dur(func(r Result) time.Duration { return r.IDs }), "%.1f s", true},
		{"all Layer3 host subnets (nodes × Layer3 networks)", dur(func(r Result) time.Duration { return r.HostSubnets }), "%.1f s", true},
		{"all Primary Layer2 pod addresses", dur(func(r Result) time.Duration { return r.Addresses }), "%.1f s", true},
		{"webhooks child (admission): RSS, CPU", func(r Result) (float64, bool) { return 0, false }, "webhooks", false},
		{"manager (nad,nodes,ipam) RSS at converged", func(r Result) (float64, bool) { return r.RSSMiB, true }, "%.0f MiB", true},
		{"manager peak RSS", func(r Result) (float64, bool) { return r.PeakMiB, true }, "%.0f MiB", true},
		{"manager CPU to converged", func(r Result) (float64, bool) { return r.CPUSeconds, true }, "%.1f s", true},
		{"kube-apiserver CPU to converged (etcd not counted)", func(r Result) (float64, bool) { v, ok := r.Requests[metrics.APIServerCPU]; return v, ok }, "%.1f s", true},
		{"manager CPU per kube-apiserver CPU (same run: machine speed cancels)", func(r Result) (float64, bool) {
			v, ok := r.Requests[metrics.APIServerCPU]
			return r.CPUSeconds / v, ok && v > 0
		}, "%.3f", true},
		{"driver CPU to converged (creates, informers, waiting)", func(r Result) (float64, bool) { return r.DriverCPUSeconds, true }, "%.1f s", true},
		{"restart to converged (target ≤ 30 s)", dur(func(r Result) time.Duration { return r.Restart }), "%.1f s", true},
		{"restart: manager CPU, kube-apiserver CPU", func(r Result) (float64, bool) { return 0, false }, "restart-cpu", false},
		{"restarted manager peak RSS", func(r Result) (float64, bool) { return r.RestartPeakMiB, true }, "%.0f MiB", true},
		{"dataplane: all OVN rows (one zone)", ovn(func(o *OVN) float64 { return o.AllRows.Seconds() }), "%.1f s", true},
		{"dataplane: Northbound rows", ovn(func(o *OVN) float64 { return float64(o.Total()) }), "%.0f", true},
		{"dataplane: Northbound file", ovn(func(o *OVN) float64 { return o.DBMiB }), "%.0f MiB", true},
		{"dataplane: RSS", ovn(func(o *OVN) float64 { return o.RSSMiB }), "%.0f MiB", true},
		{"dataplane: CPU", ovn(func(o *OVN) float64 { return o.CPU }), "%.1f s", true},
		{"Northbound ovsdb-server CPU (same rows)", ovn(func(o *OVN) float64 { return o.ServerCPU }), "%.1f s", true},
		{"dataplane CPU per ovsdb-server CPU (machine speed cancels)", ovn(perServer), "%.2f", true},
		{"dataplane CPU per 1000 Northbound rows", ovn(perRows), "%.3f s", true},
		{"dataplane restart to converged (reconnect, initial copy, every network re-planned)", ovn(func(o *OVN) float64 { return o.Restart.Seconds() }), "%.1f s", true},
		{"restarted dataplane: peak RSS", ovn(func(o *OVN) float64 { return o.RestartPeakMiB }), "%.0f MiB", true},
		{"restarted dataplane: CPU", ovn(func(o *OVN) float64 { return o.RestartCPU }), "%.1f s", true},
		{"live dataplane (from before the first create): all OVN rows", ovnOf(live, func(o *OVN) float64 { return o.AllRows.Seconds() }), "%.1f s", true},
		{"live dataplane: RSS", ovnOf(live, func(o *OVN) float64 { return o.RSSMiB }), "%.0f MiB", true},
		{"live dataplane: CPU", ovnOf(live, func(o *OVN) float64 { return o.CPU }), "%.1f s", true},
		{"live dataplane: CPU per ovsdb-server CPU", ovnOf(live, perServer), "%.2f", true},
		{"live dataplane: CPU per 1000 Northbound rows", ovnOf(live, perRows), "%.3f s", true},
	}
}

// writeTargets lists the targets the runs were judged against and the
// figures that miss them.
func writeTargets(b *strings.Builder, th Thresholds, rs []Result) {
	if len(th.Targets) == 0 {
		return
	}
	fmt.Fprintf(b, "\nTargets (%s): ", th.source)
	var ts []string
	for _, t := range th.Targets {
		var bounds []string
		if t.Growth > 0 {
			bounds = append(bounds, fmt.Sprintf("growth ≤ %.2f× per doubling", t.Growth))
		}
		if t.Max > 0 {
			bounds = append(bounds, fmt.Sprintf("≤ %g", t.Max))
		}
		ts = append(ts, t.Figure+" "+strings.Join(bounds, ", "))
	}
	b.WriteString(strings.Join(ts, "; ") + ".\n")
	if m := th.misses(rs); len(m) > 0 {
		fmt.Fprintf(b, "\nMissed (✗):\n\n- %s\n", strings.Join(m, "\n- "))
	} else {
		b.WriteString("\nEvery judged figure meets its target.\n")
	}
}

func project(format string, rs []Result, vals []float64, full int) string {
	n1, n2 := float64(rs[len(rs)-2].Networks), float64(rs[len(rs)-1].Networks)
	v1, v2 := vals[len(vals)-2], vals[len(vals)-1]
	if v1 <= 0 || v2 <= 0 || n1 == n2 {
		return "—"
	}
	k := math.Log(v2/v1) / math.Log(n2/n1)
	return fmt.Sprintf(format, v2*math.Pow(float64(full)/n2, k))
}

func writeRequests(b *strings.Builder, title, column string, rs []Result, get func(Result) map[string]float64) {
	keys := map[string]bool{}
	for _, r := range rs {
		for k := range get(r) {
			keys[k] = true
		}
	}
	var sorted []string
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	fmt.Fprintf(b, "\n%s:\n\n| %s |", title, column)
	for _, r := range rs {
		fmt.Fprintf(b, " %s |", r.Label)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(rs)) + "\n")
	for _, k := range sorted {
		if k == metrics.APIServerCPU {
			continue
		}
		b.WriteString("| " + k + " |")
		for _, r := range rs {
			fmt.Fprintf(b, " %.0f |", get(r)[k])
		}
		b.WriteString("\n")
	}
}
