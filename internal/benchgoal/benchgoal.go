// Package benchgoal reports a benchmark's figure beside its goal, in the
// form hack/benchreport renders as the report's goal column.
//
// Every goal is an upper bound. For a figure reported as metric <name>, a
// benchmark reports <name>-goal (the bound) and <name>-of-goal (the figure
// over the bound: at most 1 the goal is met). A goal on the ratio
// benchreport itself computes against the sibling baseline (the ratio
// column) is reported as ratio-goal alone: the benchmark does not know that
// ratio, benchreport computes its share of the goal.
package benchgoal

import "testing"

// The metric names' suffixes, and the name of benchreport's ratio.
const (
	GoalSuffix   = "-goal"
	OfGoalSuffix = "-of-goal"
	Ratio        = "ratio"
)

// Report reports figure as metric name, and beside it the goal (name-goal)
// and figure/goal (name-of-goal).
func Report(b *testing.B, name string, figure, goal float64) {
	b.Helper()
	if goal <= 0 {
		b.Fatalf("%s: goal %v: a goal is a positive bound", name, goal)
	}
	b.ReportMetric(figure, name)
	b.ReportMetric(goal, name+GoalSuffix)
	b.ReportMetric(figure/goal, name+OfGoalSuffix)
}

// ReportRatio reports the goal of the ratio benchreport computes between
// this benchmark's ns/op and its sibling baseline's.
func ReportRatio(b *testing.B, goal float64) {
	b.Helper()
	if goal <= 0 {
		b.Fatalf("ratio: goal %v: a goal is a positive bound", goal)
	}
	b.ReportMetric(goal, Ratio+GoalSuffix)
}
