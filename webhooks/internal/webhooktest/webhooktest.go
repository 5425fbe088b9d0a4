// Package webhooktest is what the webhooks' unit tests share: a comparison
// of field errors by the parts a user relies on, and a fake cache with the
// webhooks' field indexes.
package webhooktest

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Want is the part of a field.Error a user relies on.
type Want struct {
	Type  field.ErrorType
	Field string
	// Detail is a substring of the message (optional).
	Detail string
}

// Check fails t unless got holds exactly the errors of want, in order.
func Check(t *testing.T, got field.ErrorList, want []Want) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Type != w.Type || g.Field != w.Field || !strings.Contains(g.Detail, w.Detail) {
			t.Errorf("error %d = %s %s %q, want %s %s containing %q", i, g.Type, g.Field, g.Detail, w.Type, w.Field, w.Detail)
		}
	}
}

// builderIndexer registers field indexes on a fake client builder, as a
// manager's cache would hold them.
type builderIndexer struct{ b *fake.ClientBuilder }

func (i builderIndexer) IndexField(_ context.Context, obj client.Object, field string, f client.IndexerFunc) error {
	i.b.WithIndex(obj, field, f)
	return nil
}

// Scheme knows core/v1 and k8s.ovn.org/v1.
func Scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := udnv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// IndexedReader is a fake cache holding objs with the indexes index
// registers (network.IndexFields, say).
func IndexedReader(t *testing.T, index func(context.Context, client.FieldIndexer) error, objs ...client.Object) client.Reader {
	t.Helper()
	b := fake.NewClientBuilder().WithScheme(Scheme(t)).WithObjects(objs...)
	if err := index(context.Background(), builderIndexer{b}); err != nil {
		t.Fatal(err)
	}
	return b.Build()
}

// TypesAndFields reduces errs to "Type Field" for comparison.
func TypesAndFields(errs field.ErrorList) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = string(e.Type) + " " + e.Field
	}
	return out
}
