package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The embedded thresholds.yaml parses, and each entry names a figure the
// report has, so renaming a figure fails here instead of leaving it unjudged.
func TestEmbeddedThresholdsNameReportFigures(t *testing.T) {
	th, err := loadThresholds("")
	if err != nil {
		t.Fatal(err)
	}
	if len(th.Targets) == 0 {
		t.Fatal("thresholds.yaml holds no target")
	}
	for _, name := range []string{"all NADs", "dataplane: CPU", "restart to converged (target ≤ 30 s)"} {
		if _, ok := th.of(name); !ok {
			t.Errorf("thresholds.yaml has no target for %q", name)
		}
	}
}

func TestParseThresholdsRefuses(t *testing.T) {
	for name, data := range map[string]string{
		"unknown figure":  "targets:\n- figure: all NADZ\n  growth: 2.2\n",
		"composite row":   "targets:\n- figure: \"webhooks child (admission): RSS, CPU\"\n  growth: 2.2\n",
		"no bound":        "targets:\n- figure: all NADs\n",
		"negative bound":  "targets:\n- figure: all NADs\n  growth: -1\n",
		"two entries":     "targets:\n- figure: all NADs\n  growth: 2.2\n- figure: all NADs\n  max: 9\n",
		"unknown key":     "targets:\n- figure: all NADs\n  growht: 2.2\n",
		"unknown section": "target:\n- figure: all NADs\n  growth: 2.2\n",
	} {
		if _, err := parseThresholds("t.yaml", []byte(data)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// scaleRuns are three doubling runs whose "all NADs" take nads each.
func scaleRuns(nads ...time.Duration) []result {
	var rs []result
	for i, d := range nads {
		n := 63 << i
		rs = append(rs, result{size: newSize(strings.Repeat("x", i+1), 50, n, 4*n), nads: d, restart: time.Second})
	}
	return rs
}

func TestMissesJudgesGrowthAndMax(t *testing.T) {
	th, err := parseThresholds("t.yaml", []byte("targets:\n"+
		"- figure: all NADs\n  growth: 2.2\n"+
		"- figure: restart to converged (target ≤ 30 s)\n  max: 30\n"+
		"- figure: \"dataplane: CPU\"\n  growth: 2.2\n"))
	if err != nil {
		t.Fatal(err)
	}
	met := scaleRuns(10*time.Second, 22*time.Second, 40*time.Second)
	if m := th.misses(met); len(m) != 0 {
		t.Errorf("growth 2.2×, 1.82× and no dataplane run judged missed: %q", m)
	}
	if err := th.missError(met); err != nil {
		t.Errorf("missError with every target met: %v", err)
	}

	missed := scaleRuns(10*time.Second, 23*time.Second, 40*time.Second)
	missed[2].restart = 31 * time.Second
	m := th.misses(missed)
	want := []string{
		"all NADs: grew 2.30× from run x to run xx, target ≤ 2.20× per doubling",
		"restart to converged (target ≤ 30 s): 31.0 s in run xxx, target ≤ 30.0 s",
	}
	if strings.Join(m, "\n") != strings.Join(want, "\n") {
		t.Errorf("misses:\n%s\nwant:\n%s", strings.Join(m, "\n"), strings.Join(want, "\n"))
	}
	err = th.missError(missed)
	if err == nil || !strings.Contains(err.Error(), "2 figure(s) miss their targets (t.yaml") {
		t.Errorf("missError = %v", err)
	}
}

// Two runs that do not double the networks are not judged on growth.
func TestMissesSkipsRunsThatDoNotDouble(t *testing.T) {
	th, err := parseThresholds("t.yaml", []byte("targets:\n- figure: all NADs\n  growth: 2.2\n"))
	if err != nil {
		t.Fatal(err)
	}
	rs := scaleRuns(10*time.Second, 80*time.Second)
	rs[1].size = newSize("1/1", 50, 63*8, 32*63)
	if m := th.misses(rs); len(m) != 0 {
		t.Errorf("an 8× run judged per doubling: %q", m)
	}
}

// The report marks a missed growth ✗ and lists the misses.
func TestReportMarksMisses(t *testing.T) {
	th, err := parseThresholds("t.yaml", []byte("targets:\n- figure: all NADs\n  growth: 2.2\n"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "report.md")
	d := driverFlags{nodes: 50, networks: 252, pods: 1008, workers: 32, out: out, targets: th}
	if err := writeReport(d, scaleRuns(10*time.Second, 23*time.Second, 40*time.Second)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{
		"| all NADs | 10.0 s | 23.0 s | 40.0 s | 2.30× ✗, 1.74× |",
		"Targets (t.yaml): all NADs growth ≤ 2.20× per doubling.",
		"- all NADs: grew 2.30× from run x to run xx, target ≤ 2.20× per doubling",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
}
