package envtest

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func policyWith(conditions []any, variables []any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "p"},
		"spec":     map[string]any{"matchConditions": conditions, "variables": variables},
	}}
}

func variable(name, expr string) any { return map[string]any{"name": name, "expression": expr} }

func TestInlineMatchConditionVariables(t *testing.T) {
	vars := []any{
		variable("a", "object.x"),
		variable("ab", "variables.a + 1"),
		variable("c", "variables.ab > variables.a"),
	}
	obj := policyWith([]any{map[string]any{"name": "m", "expression": "!variables.c || variables.ab == 2"}}, vars)
	if err := inlineMatchConditionVariables(obj, vars); err != nil {
		t.Fatal(err)
	}
	got, _, _ := unstructured.NestedSlice(obj.Object, "spec", "matchConditions")
	want := "!(((object.x) + 1) > (object.x)) || ((object.x) + 1) == 2"
	if e := got[0].(map[string]any)["expression"]; e != want {
		t.Errorf("inlined %q, want %q", e, want)
	}
	// Variables themselves are left as written.
	if e := vars[2].(map[string]any)["expression"]; e != "variables.ab > variables.a" {
		t.Errorf("variable c changed to %q", e)
	}
}

func TestInlineMatchConditionVariablesRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		vars []any
		want string
	}{
		"unknown": {[]any{variable("a", "1")}, "refers to variables.b, which the policy does not define"},
		"cycle":   {[]any{variable("a", "variables.b"), variable("b", "variables.a")}, "cycle"},
	} {
		t.Run(name, func(t *testing.T) {
			obj := policyWith([]any{map[string]any{"name": "m", "expression": "variables.b == 1"}}, tc.vars)
			if tc.want == "cycle" {
				obj = policyWith([]any{map[string]any{"name": "m", "expression": "variables.a"}}, tc.vars)
			}
			err := inlineMatchConditionVariables(obj, tc.vars)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
