package cel_test

import (
	"io/fs"
	"path"
	"testing"

	"github.com/udnkit/udnkit/cel"
	udnkitchart "github.com/udnkit/udnkit/charts/udnkit"
)

// TestRuleCostsFitTheBudget checks every CRD udnkit ships with the
// apiserver's own CRD validation (which rejects a CRD whose rules' estimated
// cost exceeds the per-rule or per-CRD budget at the list maxima) and reports
// the headroom of the most expensive rules. The runtime side of the budget is
// covered by the suite's "at the list maximum" cases.
func TestRuleCostsFitTheBudget(t *testing.T) {
	entries, err := fs.ReadDir(udnkitchart.CRDs, udnkitchart.CRDDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Fatalf("expected the UDN and CUDN CRDs, found %d files", len(entries))
	}
	for _, e := range entries {
		data, err := fs.ReadFile(udnkitchart.CRDs, path.Join(udnkitchart.CRDDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		crds, err := cel.DecodeCRDs(data)
		if err != nil {
			t.Fatal(err)
		}
		for _, crd := range crds {
			errs, err := cel.ValidateCRD(ctx, crd)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range errs {
				t.Errorf("%s: the apiserver would refuse this CRD: %v", crd.Name, e)
			}
			costs, err := cel.EstimateCosts(crd)
			if err != nil {
				t.Fatal(err)
			}
			if len(costs) < 20 {
				t.Errorf("%s: only %d rules found; the walk over the schema is broken", crd.Name, len(costs))
			}
			var total uint64
			for i, c := range costs {
				total += c.Total
				if c.Total > cel.RuleCostLimit {
					t.Errorf("%s %s: rule %q costs %d, over the per-rule limit %d", crd.Name, c.Path, c.Message, c.Total, cel.RuleCostLimit)
				}
				if i < 3 {
					t.Logf("%s %s: %q estimated %d (%d per call x %d), %.0f%% of the per-rule limit",
						crd.Name, c.Path, c.Message, c.Total, c.PerCall, c.Cardinality, 100*float64(c.Total)/float64(cel.RuleCostLimit))
				}
			}
			if total > cel.CRDCostLimit {
				t.Errorf("%s: rules total %d, over the per-CRD limit %d", crd.Name, total, cel.CRDCostLimit)
			}
			t.Logf("%s: %d rules, estimated total %d (%.1f%% of the per-CRD limit)", crd.Name, len(costs), total, 100*float64(total)/float64(cel.CRDCostLimit))
		}
	}
}
