package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The report has the live dataplane's rows only when a run measured it, and
// its ratios from that run's own figures.
func TestReportLiveDataplaneRows(t *testing.T) {
	out := filepath.Join(t.TempDir(), "report.md")
	p := Plan{Nodes: 500, Networks: 4095, Pods: 20000, Workers: 32}
	caughtUp := &OVN{AllRows: 10 * time.Second, Rows: map[string]int{"Logical_Switch_Port": 4000}, CPU: 8, ServerCPU: 2}
	runs := []Result{{Size: NewSize("1/8", 500, 511, 2500), OVN: caughtUp}, {Size: NewSize("1/4", 500, 1023, 5000), OVN: caughtUp}}
	read := func() string {
		t.Helper()
		if err := Write(out, p, Thresholds{}, runs); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read(); strings.Contains(got, "live dataplane") || !strings.Contains(got, "| dataplane CPU per ovsdb-server CPU (machine speed cancels) | 4.00 | 4.00 | 1.00× |") {
		t.Errorf("without a live run:\n%s", got)
	}
	runs[0].OVNLive = &OVN{AllRows: 20 * time.Second, Rows: map[string]int{"Logical_Switch_Port": 4000}, CPU: 12, ServerCPU: 4}
	runs[1].OVNLive = &OVN{AllRows: 44 * time.Second, Rows: map[string]int{"Logical_Switch_Port": 8000}, CPU: 30, ServerCPU: 6}
	got := read()
	for _, want := range []string{
		"| live dataplane (from before the first create): all OVN rows | 20.0 s | 44.0 s | 2.20× |",
		"| live dataplane: CPU per ovsdb-server CPU | 3.00 | 5.00 | 1.67× |",
		"| live dataplane: CPU per 1000 Northbound rows | 3.000 s | 3.750 s | 1.25× |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("with a live run, no line %q in:\n%s", want, got)
		}
	}
}
