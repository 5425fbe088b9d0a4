package admit

import (
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
)

// Verdict turns a network's errors and warnings into the admission answer:
// a 422 naming every field, with the warnings either way.
func Verdict(kind, name string, errs field.ErrorList, warnings []string) (admission.Warnings, error) {
	RecordDecision(kind, errs)
	if len(errs) > 0 {
		return warnings, apierrors.NewInvalid(udnv1.GroupVersion.WithKind(kind).GroupKind(), name, Bounded(errs))
	}
	return warnings, nil
}

// Denied is the admission answer of a refusal err (an *apierrors.StatusError
// keeps its code, reason and causes).
func Denied(err error) admission.Response {
	st := apierrors.NewInternalError(err).ErrStatus
	if se, ok := err.(apierrors.APIStatus); ok {
		st = se.Status()
	}
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &st}}
}

// Strings converts a list of a string type (CIDRs, say) to plain strings for
// messages.
func Strings[S ~string](in []S) []string {
	out := make([]string, len(in))
	for i, v := range in {
		out[i] = string(v)
	}
	return out
}
