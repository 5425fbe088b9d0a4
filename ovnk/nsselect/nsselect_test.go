package nsselect

import (
	"context"
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/apis/scheme"
)

const field = "test.selectedNamespaces"

func cudn(name string, sel metav1.LabelSelector) *udnv1.ClusterUserDefinedNetwork {
	return &udnv1.ClusterUserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: udnv1.ClusterUserDefinedNetworkSpec{NamespaceSelector: sel}}
}

func byName(names ...string) metav1.LabelSelector {
	return metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: names}}}
}

// The index only narrows: a CUDN that names a namespace is a candidate for
// that namespace only, one that names none for every namespace, and one
// with an invalid selector for none; a selector changed to name another
// namespace moves the CUDN's candidacy with it. (Every namespace here is
// labelled team=x, so each candidate's selector matches.)
func TestCandidates(t *testing.T) {
	ctx := context.Background()
	invalid := metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "x", Operator: "Bogus"}}}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithIndex(&udnv1.ClusterUserDefinedNetwork{}, field, IndexKeys).
		WithObjects(
			cudn("b-named", byName("red", "blue")),
			cudn("a-labels", metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}}),
			cudn("c-eq", metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "green", "team": "x"}}),
			cudn("d-invalid", invalid),
		).Build()
	all := func(*udnv1.ClusterUserDefinedNetwork) bool { return true }
	candidates := func(m *Matcher, ns string) []string {
		t.Helper()
		got, err := m.Selecting(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
			Labels: map[string]string{corev1.LabelMetadataName: ns, "team": "x"}}})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range got {
			out = append(out, s.Name)
		}
		return out
	}
	m := NewMatcher(c, field, all)
	for ns, want := range map[string][]string{
		"red":   {"a-labels", "b-named"},
		"blue":  {"a-labels", "b-named"},
		"green": {"a-labels", "c-eq"},
		"other": {"a-labels"},
	} {
		if got := candidates(m, ns); !slices.Equal(got, want) {
			t.Errorf("candidates for %s: %v, want %v (by name)", ns, got, want)
		}
	}

	// Renamed onto another namespace after the index was built.
	var moved udnv1.ClusterUserDefinedNetwork
	if err := c.Get(ctx, client.ObjectKey{Name: "b-named"}, &moved); err != nil {
		t.Fatal(err)
	}
	moved.Spec.NamespaceSelector = byName("other")
	if err := c.Update(ctx, &moved); err != nil {
		t.Fatal(err)
	}
	m = NewMatcher(c, field, all)
	for ns, want := range map[string][]string{"red": {"a-labels"}, "other": {"a-labels", "b-named"}} {
		if got := candidates(m, ns); !slices.Equal(got, want) {
			t.Errorf("after the rename, candidates for %s: %v, want %v", ns, got, want)
		}
	}
}

// countingReader counts List calls by the index key they match.
type countingReader struct {
	client.Reader
	lists map[string]int
}

func (r *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o := &client.ListOptions{}
	o.ApplyOptions(opts)
	if o.FieldSelector != nil {
		if v, ok := o.FieldSelector.RequiresExactMatch(field); ok {
			r.lists[v]++
		}
	}
	return r.Reader.List(ctx, list, opts...)
}

// One Matcher asked for many namespaces reads the CUDNs that name no
// namespace once, and each namespace's named ones.
func TestMatcherReadsAnyNamespaceOnce(t *testing.T) {
	ctx := context.Background()
	c := &countingReader{Reader: fake.NewClientBuilder().WithScheme(scheme.New()).WithIndex(&udnv1.ClusterUserDefinedNetwork{}, field, IndexKeys).
		WithObjects(cudn("a-labels", metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}}), cudn("b-named", byName("red"))).Build(),
		lists: map[string]int{}}
	m := NewMatcher(c, field, func(*udnv1.ClusterUserDefinedNetwork) bool { return true })
	for _, ns := range []string{"red", "blue", "green"} {
		if _, err := m.Selecting(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"team": "x"}}}); err != nil {
			t.Fatal(err)
		}
	}
	if want := map[string]int{AnyNamespace: 1, "red": 1, "blue": 1, "green": 1}; !maps.Equal(c.lists, want) {
		t.Errorf("lists by index key %v, want %v", c.lists, want)
	}
}

// Namespaces finds the same namespaces whether the selector names them (one
// read each) or not (a list): named ones that do not exist or whose labels
// do not match are left out.
func TestNamespaces(t *testing.T) {
	ctx := context.Background()
	ns := func(name string, l map[string]string) *corev1.Namespace {
		if l == nil {
			l = map[string]string{}
		}
		l[corev1.LabelMetadataName] = name
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(
		ns("red", map[string]string{"team": "x"}), ns("blue", nil), ns("green", map[string]string{"team": "x"})).Build()
	for _, tc := range []struct {
		sel  metav1.LabelSelector
		want []string
	}{
		{byName("red", "blue", "missing"), []string{"blue", "red"}},
		{metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}, MatchExpressions: byName("red", "blue").MatchExpressions}, []string{"red"}},
		{metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}}, []string{"green", "red"}},
	} {
		sel, err := metav1.LabelSelectorAsSelector(&tc.sel)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Namespaces(ctx, c, sel)
		if err != nil {
			t.Fatal(err)
		}
		var gotNames []string
		for _, n := range got {
			gotNames = append(gotNames, n.Name)
		}
		slices.Sort(gotNames)
		if !slices.Equal(gotNames, tc.want) {
			t.Errorf("%v: %v, want %v", sel, gotNames, tc.want)
		}
	}
	if _, ok := NamedNamespaces(labels.Everything()); ok {
		t.Error("the empty selector names no namespace")
	}
}

// Selecting keeps, of the candidates, those keep accepts whose selector
// matches the namespace's labels, by name, with their parsed selectors.
func TestSelecting(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithIndex(&udnv1.ClusterUserDefinedNetwork{}, field, IndexKeys).
		WithObjects(
			cudn("b-named", byName("red")),
			cudn("a-team-x", metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}}),
			cudn("c-team-y", metav1.LabelSelector{MatchLabels: map[string]string{"team": "y"}}),
			cudn("d-skipped", byName("red")),
		).Build()
	red := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "red", Labels: map[string]string{corev1.LabelMetadataName: "red", "team": "x"}}}
	got, err := Selecting(ctx, c, field, red, func(cu *udnv1.ClusterUserDefinedNetwork) bool { return cu.Name != "d-skipped" })
	if err != nil {
		t.Fatal(err)
	}
	var gotNames []string
	for _, s := range got {
		gotNames = append(gotNames, s.Name)
		if !s.Selector.Matches(labels.Set(red.Labels)) {
			t.Errorf("%s: its parsed selector %v does not match red", s.Name, s.Selector)
		}
	}
	if want := []string{"a-team-x", "b-named"}; !slices.Equal(gotNames, want) {
		t.Errorf("selecting red: %v, want %v", gotNames, want)
	}
}
