package admit

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestRecordDecision(t *testing.T) {
	reason := "FieldValueInvalid spec.layer2.subnets"
	before := testutil.ToFloat64(admissionDecisions.WithLabelValues("ClusterUserDefinedNetwork", "denied", reason))
	allowedBefore := testutil.ToFloat64(admissionDecisions.WithLabelValues("ClusterUserDefinedNetwork", "allowed", ""))
	_, err := Verdict("ClusterUserDefinedNetwork", "n", field.ErrorList{
		field.Invalid(field.NewPath("spec", "layer2", "subnets").Index(1), "10.0.0.0/8", "overlaps"),
	}, nil)
	if err == nil {
		t.Fatal("Verdict with errors allowed the object")
	}
	if _, err := Verdict("ClusterUserDefinedNetwork", "n", nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(admissionDecisions.WithLabelValues("ClusterUserDefinedNetwork", "denied", reason)) - before; got != 1 {
		t.Errorf("denials with reason %q grew by %v, want 1", reason, got)
	}
	if got := testutil.ToFloat64(admissionDecisions.WithLabelValues("ClusterUserDefinedNetwork", "allowed", "")) - allowedBefore; got != 1 {
		t.Errorf("allowed grew by %v, want 1", got)
	}
}
