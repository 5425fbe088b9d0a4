package main

import "testing"

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
		if _, ok := th.Of(name); !ok {
			t.Errorf("thresholds.yaml has no target for %q", name)
		}
	}
}
