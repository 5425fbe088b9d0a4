package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// writeReport writes the Markdown report of the runs so far: one column per
// run, the growth of each figure from one run to the next (the runs double
// the networks and pods), a power-law projection to the full size, and the
// apiserver's requests by verb and resource.
func writeReport(d driverFlags, rs []result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# udnkit scale report\n\n")
	fmt.Fprintf(&b, "%d Nodes in every run; networks and pods are fractions of %d networks and %d pods, "+
		"one namespace per network, the networks round-robin over UDN/CUDN × Layer2/Layer3 × Primary/Secondary. "+
		"Times are from the first create; created: all objects accepted by the apiserver (%d concurrent creates).\n\n",
		d.nodes, d.networks, d.pods, d.workers)
	head := "| figure |"
	sep := "|---|"
	for _, r := range rs {
		head += fmt.Sprintf(" %s (%d networks, %d pods) |", r.label, r.networks, r.pods)
		sep += "---|"
	}
	if len(rs) > 1 {
		head += " growth per doubling |"
		sep += "---|"
		if d.networks > rs[len(rs)-1].networks {
			head += fmt.Sprintf(" projected to %d networks |", d.networks)
			sep += "---|"
		}
	}
	b.WriteString(head + "\n" + sep + "\n")
	for _, rw := range reportRows() {
		if special := rw.format == "" || rw.format == "webhooks" || rw.format == "restart-cpu"; !special &&
			!slices.ContainsFunc(rs, func(r result) bool { _, ok := rw.val(r); return ok }) {
			continue // measured in no run (e.g. the live dataplane without -dataplane-live)
		}
		line := "| " + rw.name + " |"
		var vals []float64
		for _, r := range rs {
			if rw.format == "webhooks" {
				line += fmt.Sprintf(" %.0f MiB, %.1f s |", r.webhookRSSMiB, r.webhookCPUSeconds)
				continue
			}
			if rw.format == "restart-cpu" {
				line += fmt.Sprintf(" %.1f s, %.1f s |", r.restartCPUSeconds, r.restartRequests[apiserverCPU])
				continue
			}
			if rw.format == "" {
				line += fmt.Sprintf(" %d / %d, %d |", r.primaryL2, r.primaryL3, r.networks-r.primaryL2-r.primaryL3)
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
				t, _ := d.targets.of(rw.name)
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
				if d.networks > rs[len(rs)-1].networks {
					line += " " + project(rw.format, rs, vals, d.networks) + " |"
				}
			} else {
				line += " |"
				if d.networks > rs[len(rs)-1].networks {
					line += " |"
				}
			}
		}
		b.WriteString(line + "\n")
	}
	fmt.Fprintf(&b, "\nProjection: a power law through the last two runs (v × (N/n)^k, k = log(v2/v1)/log(n2/n1)).\n")
	writeTargets(&b, d.targets, rs)

	writeRequests(&b, "apiserver requests to converged (apiserver_request_total; creates by the driver, the rest by the manager)", "verb resource",
		rs, func(r result) map[string]float64 { return r.requests })
	writeRequests(&b, "the manager's reconciles to converged (controller_runtime_reconcile_total), by controller", "controller",
		rs, func(r result) map[string]float64 { return r.reconciles })
	writeRequests(&b, "apiserver requests from the restart to converged", "verb resource",
		rs, func(r result) map[string]float64 { return r.restartRequests })

	if err := os.MkdirAll(filepath.Dir(d.out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(d.out, []byte(b.String()), 0o644)
}

// reportRow is one figure of the report: its name (the first cell, and the
// name thresholds.yaml judges it by), its value in a run (false: not
// measured there), its format ("" and the two special formats are
// composite cells) and whether its growth from run to run is shown.
type reportRow struct {
	name   string
	val    func(result) (float64, bool)
	format string
	growth bool
}

// reportRows are the report's figures, in order.
func reportRows() []reportRow {
	dur := func(f func(result) time.Duration) func(result) (float64, bool) {
		return func(r result) (float64, bool) { return f(r).Seconds(), true }
	}
	ovnOf := func(pick func(result) *ovnResult, f func(*ovnResult) float64) func(result) (float64, bool) {
		return func(r result) (float64, bool) {
			o := pick(r)
			if o == nil {
				return 0, false
			}
			v := f(o)
			return v, !math.IsNaN(v)
		}
	}
	caughtUp := func(r result) *ovnResult { return r.ovn }
	live := func(r result) *ovnResult { return r.ovnLive }
	ovn := func(f func(*ovnResult) float64) func(result) (float64, bool) { return ovnOf(caughtUp, f) }
	perServer := func(o *ovnResult) float64 {
		if o.serverCPU <= 0 {
			return math.NaN()
		}
		return o.cpu / o.serverCPU
	}
	perRows := func(o *ovnResult) float64 { return 1000 * o.cpu / float64(o.total()) }
	return []reportRow{
		{"Primary Layer2 / Layer3 networks, Secondary", func(r result) (float64, bool) { return 0, false }, "", false},
		{"all objects created", dur(func(r result) time.Duration { return r.createAll }), "%.1f s", true},
		{"failed creates (after 5 tries)", func(r result) (float64, bool) { return float64(r.createErrors), true }, "%.0f", false},
		{"retried creates", func(r result) (float64, bool) { return float64(r.createRetries), true }, "%.0f", false},
		{"all NADs", dur(func(r result) time.Duration { return r.nads }), "%.1f s", true},
		{"all network IDs", dur(func(r result) time.Duration { return r.ids }), "%.1f s", true},
		{"all Layer3 host subnets (nodes × Layer3 networks)", dur(func(r result) time.Duration { return r.hostSubnets }), "%.1f s", true},
		{"all Primary Layer2 pod addresses", dur(func(r result) time.Duration { return r.addresses }), "%.1f s", true},
		{"webhooks child (admission): RSS, CPU", func(r result) (float64, bool) { return 0, false }, "webhooks", false},
		{"manager (nad,nodes,ipam) RSS at converged", func(r result) (float64, bool) { return r.rssMiB, true }, "%.0f MiB", true},
		{"manager peak RSS", func(r result) (float64, bool) { return r.peakMiB, true }, "%.0f MiB", true},
		{"manager CPU to converged", func(r result) (float64, bool) { return r.cpuSeconds, true }, "%.1f s", true},
		{"kube-apiserver CPU to converged (etcd not counted)", func(r result) (float64, bool) { v, ok := r.requests[apiserverCPU]; return v, ok }, "%.1f s", true},
		{"manager CPU per kube-apiserver CPU (same run: machine speed cancels)", func(r result) (float64, bool) {
			v, ok := r.requests[apiserverCPU]
			return r.cpuSeconds / v, ok && v > 0
		}, "%.3f", true},
		{"driver CPU to converged (creates, informers, waiting)", func(r result) (float64, bool) { return r.driverCPUSeconds, true }, "%.1f s", true},
		{"restart to converged (target ≤ 30 s)", dur(func(r result) time.Duration { return r.restart }), "%.1f s", true},
		{"restart: manager CPU, kube-apiserver CPU", func(r result) (float64, bool) { return 0, false }, "restart-cpu", false},
		{"restarted manager peak RSS", func(r result) (float64, bool) { return r.restartPeakMiB, true }, "%.0f MiB", true},
		{"dataplane: all OVN rows (one zone)", ovn(func(o *ovnResult) float64 { return o.allRows.Seconds() }), "%.1f s", true},
		{"dataplane: Northbound rows", ovn(func(o *ovnResult) float64 { return float64(o.total()) }), "%.0f", true},
		{"dataplane: Northbound file", ovn(func(o *ovnResult) float64 { return o.dbMiB }), "%.0f MiB", true},
		{"dataplane: RSS", ovn(func(o *ovnResult) float64 { return o.rssMiB }), "%.0f MiB", true},
		{"dataplane: CPU", ovn(func(o *ovnResult) float64 { return o.cpu }), "%.1f s", true},
		{"Northbound ovsdb-server CPU (same rows)", ovn(func(o *ovnResult) float64 { return o.serverCPU }), "%.1f s", true},
		{"dataplane CPU per ovsdb-server CPU (machine speed cancels)", ovn(perServer), "%.2f", true},
		{"dataplane CPU per 1000 Northbound rows", ovn(perRows), "%.3f s", true},
		{"dataplane restart to converged (reconnect, initial copy, every network re-planned)", ovn(func(o *ovnResult) float64 { return o.restart.Seconds() }), "%.1f s", true},
		{"restarted dataplane: peak RSS", ovn(func(o *ovnResult) float64 { return o.restartPeakMiB }), "%.0f MiB", true},
		{"restarted dataplane: CPU", ovn(func(o *ovnResult) float64 { return o.restartCPU }), "%.1f s", true},
		{"live dataplane (from before the first create): all OVN rows", ovnOf(live, func(o *ovnResult) float64 { return o.allRows.Seconds() }), "%.1f s", true},
		{"live dataplane: RSS", ovnOf(live, func(o *ovnResult) float64 { return o.rssMiB }), "%.0f MiB", true},
		{"live dataplane: CPU", ovnOf(live, func(o *ovnResult) float64 { return o.cpu }), "%.1f s", true},
		{"live dataplane: CPU per ovsdb-server CPU", ovnOf(live, perServer), "%.2f", true},
		{"live dataplane: CPU per 1000 Northbound rows", ovnOf(live, perRows), "%.3f s", true},
	}
}

// writeTargets lists the targets the runs were judged against and the
// figures that miss them.
func writeTargets(b *strings.Builder, th thresholds, rs []result) {
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

func project(format string, rs []result, vals []float64, full int) string {
	n1, n2 := float64(rs[len(rs)-2].networks), float64(rs[len(rs)-1].networks)
	v1, v2 := vals[len(vals)-2], vals[len(vals)-1]
	if v1 <= 0 || v2 <= 0 || n1 == n2 {
		return "—"
	}
	k := math.Log(v2/v1) / math.Log(n2/n1)
	return fmt.Sprintf(format, v2*math.Pow(float64(full)/n2, k))
}

func writeRequests(b *strings.Builder, title, column string, rs []result, get func(result) map[string]float64) {
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
		fmt.Fprintf(b, " %s |", r.label)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(rs)) + "\n")
	for _, k := range sorted {
		if k == apiserverCPU {
			continue
		}
		b.WriteString("| " + k + " |")
		for _, r := range rs {
			fmt.Fprintf(b, " %.0f |", get(r)[k])
		}
		b.WriteString("\n")
	}
}
