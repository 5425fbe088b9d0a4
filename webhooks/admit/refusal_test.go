package admit_test

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/webhooks/admit"
	"github.com/udnkit/udnkit/webhooks/internal/webhooktest"
)

func TestBoundedKeepsFiveCausesPerFieldAndExcerpts(t *testing.T) {
	p := field.NewPath("metadata", "annotations").Key(ovnk.AnnotationDefaultNetwork)
	var errs field.ErrorList
	for i := range 900 {
		errs = append(errs, field.Invalid(p.Child("ips").Index(i), "10.0.0.1", "is a second IPv4 address."))
	}
	long := strings.Repeat("x", 10000)
	errs = append(errs, field.Invalid(p, long, "must be a NetworkSelectionElement: "+long+"."), field.Invalid(p.Child("mac"), "zz", "bad."))
	got := admit.Bounded(errs)
	want := []string{
		"FieldValueInvalid " + p.String() + ".ips[0]", "FieldValueInvalid " + p.String() + ".ips[1]", "FieldValueInvalid " + p.String() + ".ips[2]",
		"FieldValueInvalid " + p.String() + ".ips[3]", "FieldValueInvalid " + p.String() + ".ips[4]",
		"FieldValueInvalid " + p.String(), "FieldValueInvalid " + p.String() + ".mac", "FieldValueInvalid " + p.String() + ".ips[*]",
	}
	if f := webhooktest.TypesAndFields(got); !slices.Equal(f, want) {
		t.Fatalf("fields %v, want %v", f, want)
	}
	if d := got[7].Detail; d != "and 895 more errors like these." {
		t.Errorf("remainder %q", d)
	}
	if v := got[5].BadValue; v != strings.Repeat("x", 64)+"… (10000 characters)" {
		t.Errorf("value %q", v)
	}
	if d := got[5].Detail; len(d) > 600 || !strings.HasSuffix(d, "… (10036 characters)") {
		t.Errorf("detail %d bytes: %q…", len(d), d[:80])
	}
	if got[6].BadValue != "zz" || errs[0].Field != p.String()+".ips[0]" {
		t.Error("short values are kept; the input is not changed")
	}
	if n := len(got.ToAggregate().Error()); n > 2000 {
		t.Errorf("the refusal's text is %d bytes", n)
	}
	if admit.Excerpt("é"+strings.Repeat("ü", 70)) != "é"+strings.Repeat("ü", 63)+"… (71 characters)" {
		t.Error("Excerpt counts characters, not bytes")
	}
}
