package webhooks

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func TestPrimariesOf(t *testing.T) {
	udnA := primaryNetwork{ref: "UserDefinedNetwork a/x", name: "x", kind: "UserDefinedNetwork"}
	cudnT := primaryNetwork{ref: "ClusterUserDefinedNetwork t", name: "t", kind: "ClusterUserDefinedNetwork"}
	p := &primaries{
		udns:  map[string][]primaryNetwork{"a": {udnA}},
		cudns: []cudnSelector{{net: cudnT, selector: labels.SelectorFromSet(labels.Set{"team": "t"})}},
	}
	ns := func(name string, l map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
	}
	for _, tc := range []struct {
		name               string
		ns                 *corev1.Namespace
		skipKind, skipName string
		want               string
	}{
		{"UDN", ns("a", nil), "", "", "UserDefinedNetwork a/x"},
		{"UDN and selecting CUDN", ns("a", map[string]string{"team": "t"}), "", "", "UserDefinedNetwork a/x, ClusterUserDefinedNetwork t"},
		{"the object under review is skipped", ns("a", nil), "UserDefinedNetwork", "x", ""},
		{"same name, other kind is not skipped", ns("a", nil), "ClusterUserDefinedNetwork", "x", "UserDefinedNetwork a/x"},
		{"CUDN only", ns("b", map[string]string{"team": "t"}), "", "", "ClusterUserDefinedNetwork t"},
		{"nothing", ns("b", map[string]string{"team": "u"}), "", "", ""},
	} {
		if got := refs(p.of(tc.ns, tc.skipKind, tc.skipName)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestConflictMessagesNameAFew(t *testing.T) {
	n := func(ref string) []primaryNetwork { return []primaryNetwork{{ref: ref}} }
	got := describeConflicts(map[string][]primaryNetwork{"d": n("D"), "b": n("B"), "a": n("A"), "c": n("C"), "e": n("E")})
	if want := "a (A), b (B), c (C) and 2 more"; got != want {
		t.Errorf("describeConflicts = %q, want %q", got, want)
	}
	if got := describeConflicts(map[string][]primaryNetwork{"b": n("B"), "a": n("A")}); got != "a (A), b (B)" {
		t.Errorf("describeConflicts = %q", got)
	}
	if got := firstNames([]string{"z", "y", "x", "w"}); got != "w, x, y and 1 more" {
		t.Errorf("firstNames = %q", got)
	}
	if got := firstNames([]string{"b", "a"}); got != "a, b" {
		t.Errorf("firstNames = %q", got)
	}
}
