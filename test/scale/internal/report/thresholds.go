package report

import (
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Thresholds are the targets of the report's figures (thresholds.yaml).
type Thresholds struct {
	// source names the file, for messages.
	source  string
	Targets []Target `json:"targets"`
}

// Target bounds one figure: its growth between two runs of which the second
// doubles the networks and pods, and its value in any run. Zero: no bound.
type Target struct {
	Figure string  `json:"figure"`
	Growth float64 `json:"growth,omitempty"`
	Max    float64 `json:"max,omitempty"`
}

// ParseThresholds reads the targets from data, read from source (named in
// messages), and checks that each names a figure of the report and bounds
// it.
func ParseThresholds(source string, data []byte) (Thresholds, error) {
	th := Thresholds{source: source}
	if err := yaml.UnmarshalStrict(data, &th); err != nil {
		return th, fmt.Errorf("%s: %w", source, err)
	}
	seen := map[string]bool{}
	for _, t := range th.Targets {
		switch {
		case !slices.ContainsFunc(reportRows(), func(r reportRow) bool { return r.name == t.Figure && r.growth }):
			return th, fmt.Errorf("%s: %q is not a figure of the report with a value per run", source, t.Figure)
		case seen[t.Figure]:
			return th, fmt.Errorf("%s: %q has two entries", source, t.Figure)
		case t.Growth < 0 || t.Max < 0 || t.Growth == 0 && t.Max == 0:
			return th, fmt.Errorf("%s: %q needs a positive growth or max", source, t.Figure)
		}
		seen[t.Figure] = true
	}
	return th, nil
}

// Of returns the target of figure, if any.
func (th Thresholds) Of(figure string) (Target, bool) {
	i := slices.IndexFunc(th.Targets, func(t Target) bool { return t.Figure == figure })
	if i < 0 {
		return Target{}, false
	}
	return th.Targets[i], true
}

// doubles reports whether run b has twice run a's networks (the fractions
// 1/64 and 1/32 of 4095 networks are 63 and 127).
func doubles(a, b Result) bool {
	r := float64(b.Networks) / float64(a.Networks)
	return r >= 1.9 && r <= 2.1
}

// growthMissed reports whether the growth from a to b of a figure with
// target t, whose values are va and vb, misses the target.
func (t Target) growthMissed(a, b Result, va, vb float64) bool {
	return t.Growth > 0 && va > 0 && doubles(a, b) && vb/va > t.Growth
}

// misses lists every figure of the runs that misses its target, one line
// each, naming the figure, the runs, the value and the target.
func (th Thresholds) misses(rs []Result) []string {
	var out []string
	for _, rw := range reportRows() {
		t, ok := th.Of(rw.name)
		if !ok {
			continue
		}
		for i, r := range rs {
			v, ok := rw.val(r)
			if !ok {
				continue
			}
			if t.Max > 0 && v > t.Max {
				out = append(out, fmt.Sprintf("%s: %s in run %s, target ≤ %s",
					rw.name, fmt.Sprintf(rw.format, v), r.Label, fmt.Sprintf(rw.format, t.Max)))
			}
			if i == 0 {
				continue
			}
			if prev, ok := rw.val(rs[i-1]); ok && t.growthMissed(rs[i-1], r, prev, v) {
				out = append(out, fmt.Sprintf("%s: grew %.2f× from run %s to run %s, target ≤ %.2f× per doubling",
					rw.name, v/prev, rs[i-1].Label, r.Label, t.Growth))
			}
		}
	}
	return out
}

// MissError is the driver's error when figures miss their targets.
func (th Thresholds) MissError(rs []Result) error {
	m := th.misses(rs)
	if len(m) == 0 {
		return nil
	}
	return fmt.Errorf("%d figure(s) miss their targets (%s; the report marks them ✗):\n  %s",
		len(m), th.source, strings.Join(m, "\n  "))
}
