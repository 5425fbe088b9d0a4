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

// dataplaneGrowthGoal is the dataplane's goal for its time and memory:
// "≤ 2.1× per doubling".
const dataplaneGrowthGoal = 2.1

// The embedded thresholds judge the dataplane's time and memory (its first
// programming and its restart) by the growth goal or tighter.
func TestEmbeddedThresholdsHoldDataplaneGrowthGoal(t *testing.T) {
	th, err := loadThresholds("")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{
		"dataplane: all OVN rows (one zone)", "dataplane: RSS", "dataplane: CPU",
		"dataplane restart to converged (reconnect, initial copy, every network re-planned)",
		"restarted dataplane: peak RSS", "restarted dataplane: CPU",
	} {
		target, ok := th.Of(name)
		switch {
		case !ok || target.Growth == 0:
			t.Errorf("%q: no growth target, want ≤ %.1f×", name, dataplaneGrowthGoal)
		case target.Growth > dataplaneGrowthGoal:
			t.Errorf("%q: growth target %.2f×, want ≤ %.1f×", name, target.Growth, dataplaneGrowthGoal)
		}
	}
}
