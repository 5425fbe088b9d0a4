package admit

import (
	"regexp"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// admissionDecisions counts the webhooks' verdicts. The reason of a denial is
// the first error's type and field path without list indices, so the label
// stays a small, fixed set (e.g. "FieldValueInvalid spec.layer2.subnets").
var admissionDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "udnkit_admission_decisions_total",
	Help: "Admission decisions of udnkit's webhooks by kind, decision (allowed, denied) and reason.",
}, []string{"kind", "decision", "reason"})

func init() { metrics.Registry.MustRegister(admissionDecisions) }

var indices = regexp.MustCompile(`\[[^]]*\]`)

// RecordDecision counts one verdict on an object of kind.
func RecordDecision(kind string, errs field.ErrorList) {
	if len(errs) == 0 {
		admissionDecisions.WithLabelValues(kind, "allowed", "").Inc()
		return
	}
	admissionDecisions.WithLabelValues(kind, "denied", string(errs[0].Type)+" "+indices.ReplaceAllString(errs[0].Field, "")).Inc()
}

// RecordDenial counts a denial that is no field error (a limit, a
// conflict) under reason.
func RecordDenial(kind, reason string) {
	admissionDecisions.WithLabelValues(kind, "denied", reason).Inc()
}
