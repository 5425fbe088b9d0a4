package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

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
		if _, err := ParseThresholds("t.yaml", []byte(data)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// scaleRuns are three doubling runs whose "all NADs" take nads each.
func scaleRuns(nads ...time.Duration) []Result {
	var rs []Result
	for i, d := range nads {
		n := 63 << i
		rs = append(rs, Result{Size: NewSize(strings.Repeat("x", i+1), 50, n, 4*n), NADs: d, Restart: time.Second})
	}
	return rs
}

func TestMissesJudgesGrowthAndMax(t *testing.T) {
	th, err := ParseThresholds("t.yaml", []byte("targets:\n"+
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
	if err := th.MissError(met); err != nil {
		t.Errorf("missError with every target met: %v", err)
	}

	missed := scaleRuns(10*time.Second, 23*time.Second, 40*time.Second)
	missed[2].Restart = 31 * time.Second
	m := th.misses(missed)
	want := []string{
		"all NADs: grew 2.30× from run x to run xx, target ≤ 2.20× per doubling",
		"restart to converged (target ≤ 30 s): 31.0 s in run xxx, target ≤ 30.0 s",
	}
	if strings.Join(m, "\n") != strings.Join(want, "\n") {
		t.Errorf("misses:\n%s\nwant:\n%s", strings.Join(m, "\n"), strings.Join(want, "\n"))
	}
	err = th.MissError(missed)
	if err == nil || !strings.Contains(err.Error(), "2 figure(s) miss their targets (t.yaml") {
		t.Errorf("missError = %v", err)
	}
}

// Two runs that do not double the networks are not judged on growth.
func TestMissesSkipsRunsThatDoNotDouble(t *testing.T) {
	th, err := ParseThresholds("t.yaml", []byte("targets:\n- figure: all NADs\n  growth: 2.2\n"))
	if err != nil {
		t.Fatal(err)
	}
	rs := scaleRuns(10*time.Second, 80*time.Second)
	rs[1].Size = NewSize("1/1", 50, 63*8, 32*63)
	if m := th.misses(rs); len(m) != 0 {
		t.Errorf("an 8× run judged per doubling: %q", m)
	}
}

// The report marks a missed growth ✗ and lists the misses.
func TestReportMarksMisses(t *testing.T) {
	th, err := ParseThresholds("t.yaml", []byte("targets:\n- figure: all NADs\n  growth: 2.2\n"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "report.md")
	p := Plan{Nodes: 50, Networks: 252, Pods: 1008, Workers: 32}
	if err := Write(out, p, th, scaleRuns(10*time.Second, 23*time.Second, 40*time.Second)); err != nil {
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
