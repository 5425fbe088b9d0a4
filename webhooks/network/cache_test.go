package network

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/nsselect"
	"github.com/udnkit/udnkit/webhooks/internal/webhooktest"
)

// indexedReader is a fake cache holding objs with IndexFields' indexes.
func indexedReader(t *testing.T, objs ...client.Object) client.Reader {
	t.Helper()
	return webhooktest.IndexedReader(t, IndexFields, objs...)
}

func TestPrimaryIndexesHoldOnlyLivePrimaries(t *testing.T) {
	deleting := testobj.MakeUDN("a", "deleting").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.100.0.0/16")).Obj()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	deleting.Finalizers = []string{"keep"}
	otherNS := testobj.MakeUDN("b", "p").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.100.0.0/16")).Obj()
	every := metav1.LabelSelector{}
	cudnDeleting := testobj.MakeCUDN("cd").Selector(every).Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.100.0.0/16")).Obj()
	cudnDeleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	cudnDeleting.Finalizers = []string{"keep"}
	cudnS := testobj.MakeCUDN("cs").Selector(metav1.LabelSelector{}).Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.100.0.0/16")).Obj()
	c := indexedReader(t, testobj.MakeUDN("a", "p").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.100.0.0/16")).Obj(), testobj.MakeUDN("a", "s").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.100.0.0/16")).Obj(),
		deleting, otherNS, testobj.MakeCUDN("cp").Selector(every).Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.100.0.0/16")).Obj(), cudnS, cudnDeleting)
	var udns udnv1.UserDefinedNetworkList
	if err := c.List(context.Background(), &udns, client.MatchingFields{IndexPrimary: "true"}); err != nil {
		t.Fatal(err)
	}
	if len(udns.Items) != 2 {
		t.Errorf("IndexPrimary holds %d UDNs, want a/p and b/p (not the Secondary, not the one being deleted)", len(udns.Items))
	}
	var cudns udnv1.ClusterUserDefinedNetworkList
	if err := c.List(context.Background(), &cudns, client.MatchingFields{IndexPrimaryCUDNNamespaces: nsselect.AnyNamespace}); err != nil {
		t.Fatal(err)
	}
	if len(cudns.Items) != 1 || cudns.Items[0].Name != "cp" {
		t.Errorf("IndexPrimaryCUDNNamespaces holds %v, want only cp", cudns.Items)
	}
	p, err := loadPrimaries(context.Background(), reader{Reader: c, indexed: true}, "a")
	if err != nil {
		t.Fatal(err)
	}
	nets, err := p.of(context.Background(), namespace("a", nil), "", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := refs(nets); got != "UserDefinedNetwork a/p, ClusterUserDefinedNetwork cp" {
		t.Errorf("primary networks of a = %q, want a/p and cp", got)
	}
}

// The cache decides; a refusal it suggests is confirmed against the
// apiserver, so a network the cache still holds after its deletion blocks
// nothing.
func TestCUDNCacheRefusalConfirmedByAPIReader(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{
		ovnk.LabelPrimaryUserDefinedNetwork: "", "team": "x"}}}
	stale := testobj.MakeUDN("a", "gone").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.100.0.0/16")).Obj()
	cu := testobj.MakeCUDN("c").SelectLabels(map[string]string{"team": "x"}).Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.100.0.0/16")).Obj()
	v := &ClusterUserDefinedNetworkValidator{Client: indexedReader(t, ns, stale), APIReader: indexedReader(t, ns)}
	if _, err := v.ValidateCreate(context.Background(), cu); err != nil {
		t.Errorf("stale cache entry refused the CUDN: %v", err)
	}
	v.APIReader = indexedReader(t, ns, stale)
	if _, err := v.ValidateCreate(context.Background(), cu); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "a (UserDefinedNetwork a/gone)") {
		t.Errorf("err = %v, want the conflict with a/gone", err)
	}
}

// A new CUDN named like one the cache still holds after its deletion is
// admitted; one named like a CUDN the apiserver has is refused.
func TestCUDNNameRefusalConfirmedByAPIReader(t *testing.T) {
	secondary := testobj.Layer2(udnv1.NetworkRoleSecondary, "10.100.0.0/16")
	cudn := func(name string) *udnv1.ClusterUserDefinedNetwork {
		return testobj.MakeCUDN(name).Selector(metav1.LabelSelector{}).Spec(secondary).Obj()
	}
	v := &ClusterUserDefinedNetworkValidator{Client: indexedReader(t, cudn("col-x")), APIReader: indexedReader(t)}
	if _, err := v.ValidateCreate(context.Background(), cudn("col.x")); err != nil {
		t.Errorf("stale cache entry refused the CUDN: %v", err)
	}
	v.APIReader = indexedReader(t, cudn("col-x"))
	if _, err := v.ValidateCreate(context.Background(), cudn("col.x")); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), "its OVN objects would be named like those of ClusterUserDefinedNetwork col-x") {
		t.Errorf("err = %v, want the collision with col-x", err)
	}
	if _, err := v.ValidateCreate(context.Background(), cudn("col-y")); err != nil {
		t.Errorf("a name that differs otherwise: %v", err)
	}
}

// listCounter counts the List calls a validator makes.
type listCounter struct {
	client.Reader
	lists int
}

func (c *listCounter) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.lists++
	return c.Reader.List(ctx, list, opts...)
}

// A new UDN named like another of its namespace up to '-' versus '.' is
// refused; a name holding neither cannot collide, so its create reads no
// index.
func TestUDNNameCollisionsReadTheIndexOnlyForSeparators(t *testing.T) {
	secondary := testobj.Layer2(udnv1.NetworkRoleSecondary, "10.100.0.0/16")
	c := &listCounter{Reader: indexedReader(t, testobj.MakeUDN("a", "x-y").Spec(secondary).Obj())}
	v := &UserDefinedNetworkValidator{Client: c}
	if _, err := v.ValidateCreate(context.Background(), testobj.MakeUDN("a", "x.y").Spec(secondary).Obj()); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), "its OVN objects would be named like those of UserDefinedNetwork a/x-y") {
		t.Errorf("a/x.y: err = %v, want the collision with a/x-y", err)
	}
	for _, name := range []string{"x-z", "xy"} {
		c.lists = 0
		if _, err := v.ValidateCreate(context.Background(), testobj.MakeUDN("a", name).Spec(secondary).Obj()); err != nil {
			t.Errorf("a/%s: %v", name, err)
		}
		if want := strings.ContainsAny(name, "-."); (c.lists > 0) != want {
			t.Errorf("a/%s: %d Lists of the name index; a create reads it only for a name with '-' or '.'", name, c.lists)
		}
	}
}
