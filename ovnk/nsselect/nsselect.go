// Package nsselect answers "which ClusterUserDefinedNetworks may select
// this namespace" and "which namespaces does this selector match" from an
// informer cache (the reconcilers', the webhooks') without scanning every
// CUDN or every namespace.
// A CUDN's namespaceSelector usually names its namespaces
// (kubernetes.io/metadata.name = or in); such a selector can only match
// those, so a cache index keyed by the named namespaces (and AnyNamespace
// for a selector that names none) finds the candidates for a namespace in
// O(candidates), and the named namespaces are read one by one. Callers still
// match each candidate's selector against the namespace's labels: the index
// only narrows, it never decides.
package nsselect

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
)

// AnyNamespace is the index key of a CUDN whose selector names no
// namespace: it may match any. No namespace is called "*".
const AnyNamespace = "*"

// IndexKeys are a CUDN's keys in an index IndexField builds with it: the
// namespaces its selector names, else AnyNamespace; none when the selector
// is invalid (it selects nothing).
func IndexKeys(o client.Object) []string {
	cu, ok := o.(*udnv1.ClusterUserDefinedNetwork)
	if !ok {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(&cu.Spec.NamespaceSelector)
	if err != nil {
		return nil
	}
	if names, ok := NamedNamespaces(sel); ok {
		return names
	}
	return []string{AnyNamespace}
}

// Selected is a CUDN whose namespaceSelector matches a namespace, with that
// selector parsed.
type Selected struct {
	*udnv1.ClusterUserDefinedNetwork
	Selector labels.Selector
}

// Selecting lists, by name and through the cache index field, the CUDNs
// that keep accepts and whose selector matches ns (its name and labels),
// without copies: callers must not modify them. An invalid selector selects
// nothing.
func Selecting(ctx context.Context, c client.Reader, field string, ns client.Object, keep func(*udnv1.ClusterUserDefinedNetwork) bool) ([]Selected, error) {
	return NewMatcher(c, field, keep).Selecting(ctx, ns)
}

// Matcher answers Selecting for many namespaces: the CUDNs indexed under
// AnyNamespace (they are every namespace's candidates) are read, and their
// selectors parsed, once; each namespace then costs only the CUDNs that name
// it. Not safe for concurrent use; one per decision, as the cache moves on.
type Matcher struct {
	c     client.Reader
	field string
	keep  func(*udnv1.ClusterUserDefinedNetwork) bool
	// anyNS: the kept CUDNs under AnyNamespace with valid selectors, once
	// loaded is set.
	anyNS  []Selected
	loaded bool
}

// NewMatcher returns a Matcher of the CUDNs keep accepts, through the cache
// index field (built with IndexKeys).
func NewMatcher(c client.Reader, field string, keep func(*udnv1.ClusterUserDefinedNetwork) bool) *Matcher {
	return &Matcher{c: c, field: field, keep: keep}
}

// Selecting is the package's Selecting for ns, with m's reader, index and
// keep.
func (m *Matcher) Selecting(ctx context.Context, ns client.Object) ([]Selected, error) {
	if !m.loaded {
		anyNS, err := m.parsed(ctx, AnyNamespace)
		if err != nil {
			return nil, err
		}
		m.anyNS, m.loaded = anyNS, true
	}
	named, err := m.parsed(ctx, ns.GetName())
	if err != nil {
		return nil, err
	}
	set := labels.Set(ns.GetLabels())
	var out []Selected
	for _, group := range [][]Selected{named, m.anyNS} {
		for _, s := range group {
			if s.Selector.Matches(set) {
				out = append(out, s)
			}
		}
	}
	slices.SortFunc(out, func(a, b Selected) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// parsed lists the kept CUDNs under key, with their selectors parsed (an
// invalid selector selects nothing: left out).
func (m *Matcher) parsed(ctx context.Context, key string) ([]Selected, error) {
	var list udnv1.ClusterUserDefinedNetworkList
	if err := m.c.List(ctx, &list, client.MatchingFields{m.field: key}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	var out []Selected
	for i := range list.Items {
		cu := &list.Items[i]
		if !m.keep(cu) {
			continue
		}
		if sel, err := metav1.LabelSelectorAsSelector(&cu.Spec.NamespaceSelector); err == nil {
			out = append(out, Selected{cu, sel})
		}
	}
	return out, nil
}

// NamedNamespaces returns the names sel requires of kubernetes.io/metadata.name
// (= or in), if it requires any: only those namespaces can match.
func NamedNamespaces(sel labels.Selector) ([]string, bool) {
	reqs, selectable := sel.Requirements()
	if !selectable {
		return nil, false
	}
	for _, req := range reqs {
		if req.Key() != corev1.LabelMetadataName {
			continue
		}
		switch req.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			return req.Values().List(), true
		}
	}
	return nil, false
}

// Namespaces lists the namespaces sel matches, without copies from a cache:
// callers must not modify them. A selector that names its
// namespaces gets them one by one: a list with a selector tests every
// namespace, which each CUDN reconcile or event would pay.
func Namespaces(ctx context.Context, c client.Reader, sel labels.Selector) ([]corev1.Namespace, error) {
	if names, ok := NamedNamespaces(sel); ok {
		var out []corev1.Namespace
		for _, name := range names {
			var ns corev1.Namespace
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &ns); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return nil, err
			}
			if sel.Matches(labels.Set(ns.Labels)) {
				out = append(out, ns)
			}
		}
		return out, nil
	}
	var list corev1.NamespaceList
	if err := c.List(ctx, &list, client.MatchingLabelsSelector{Selector: sel}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	return list.Items, nil
}
