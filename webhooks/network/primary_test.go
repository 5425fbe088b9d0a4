package network

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
)

func namespace(name string, l map[string]string) *corev1.Namespace {
	return testobj.MakeNamespace(name).Labels(l).Obj()
}

func namesNamespaces(names ...string) metav1.LabelSelector {
	return metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: names}}}
}

// The cache (through the indexes) and the apiserver (every Primary network
// read once) find the same primary networks of a namespace.
func TestPrimariesOf(t *testing.T) {
	team := metav1.LabelSelector{MatchLabels: map[string]string{"team": "t"}}
	objs := []client.Object{
		testobj.MakeUDN("a", "x").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.100.0.0/16")).Obj(), testobj.MakeUDN("a", "s").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.100.0.0/16")).Obj(),
		testobj.MakeCUDN("t").Selector(team).Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.100.0.0/16")).Obj(), testobj.MakeCUDN("named").Selector(namesNamespaces("c", "d")).Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.100.0.0/16")).Obj(),
	}
	readers := map[string]reader{
		"cache":     {Reader: indexedReader(t, objs...), indexed: true},
		"apiserver": {Reader: indexedReader(t, objs...)},
	}
	for _, tc := range []struct {
		name               string
		ns                 *corev1.Namespace
		skipKind, skipName string
		want               string
	}{
		{"UDN", namespace("a", nil), "", "", "UserDefinedNetwork a/x"},
		{"UDN and selecting CUDN", namespace("a", map[string]string{"team": "t"}), "", "", "UserDefinedNetwork a/x, ClusterUserDefinedNetwork t"},
		{"the object under review is skipped", namespace("a", nil), "UserDefinedNetwork", "x", ""},
		{"same name, other kind is not skipped", namespace("a", nil), "ClusterUserDefinedNetwork", "x", "UserDefinedNetwork a/x"},
		{"CUDN only", namespace("b", map[string]string{"team": "t"}), "", "", "ClusterUserDefinedNetwork t"},
		{"a CUDN under review is skipped", namespace("b", map[string]string{"team": "t"}), "ClusterUserDefinedNetwork", "t", ""},
		{"CUDN naming the namespace", namespace("d", nil), "", "", "ClusterUserDefinedNetwork named"},
		{"CUDNs naming it and selecting it", namespace("c", map[string]string{"team": "t"}), "", "", "ClusterUserDefinedNetwork named, ClusterUserDefinedNetwork t"},
		{"nothing", namespace("b", map[string]string{"team": "u"}), "", "", ""},
	} {
		for rname, r := range readers {
			p, err := loadPrimaries(context.Background(), r, "")
			if err != nil {
				t.Fatal(err)
			}
			nets, err := p.of(context.Background(), tc.ns, tc.skipKind, tc.skipName)
			if err != nil {
				t.Fatal(err)
			}
			if got := refs(nets); got != tc.want {
				t.Errorf("%s, %s: %q, want %q", tc.name, rname, got, tc.want)
			}
		}
	}
}

// countingReader counts the objects its Gets and Lists return.
type countingReader struct {
	client.Reader
	read int
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := c.Reader.Get(ctx, key, obj, opts...)
	if err == nil {
		c.read++
	}
	return err
}

func (c *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	err := c.Reader.List(ctx, list, opts...)
	if err == nil {
		c.read += meta.LenList(list)
	}
	return err
}

// Admitting a Primary CUDN that names its namespace, or a pod's primary
// network lookup, reads that namespace's networks and the CUDNs that may
// select it, not every Primary network of the cluster, so creating n Primary
// CUDNs costs O(n), not O(n²).
func TestPrimaryChecksReadOnlyTheirNamespaces(t *testing.T) {
	const n = 200
	objs := []client.Object{namespace("new", map[string]string{ovnk.LabelPrimaryUserDefinedNetwork: ""})}
	for i := range n {
		u, c := fmt.Sprintf("u-%d", i), fmt.Sprintf("c-%d", i)
		objs = append(objs, namespace(u, map[string]string{ovnk.LabelPrimaryUserDefinedNetwork: ""}), testobj.MakeUDN(u, "p").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.100.0.0/16")).Obj(),
			namespace(c, map[string]string{ovnk.LabelPrimaryUserDefinedNetwork: ""}), testobj.MakeCUDN(c).Selector(namesNamespaces(c)).Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.100.0.0/16")).Obj())
	}
	cache := &countingReader{Reader: indexedReader(t, objs...)}
	v := &ClusterUserDefinedNetworkValidator{Client: cache, APIReader: indexedReader(t, objs...)}
	const most = 3 // the namespace, the CUDN under review as a candidate, a conflicting network
	for _, tc := range []struct{ selects, conflict string }{
		{"new", ""},
		{"u-7", "u-7 (UserDefinedNetwork u-7/p)"},
		{"c-7", "c-7 (ClusterUserDefinedNetwork c-7)"},
	} {
		cache.read = 0
		_, err := v.ValidateCreate(context.Background(), testobj.MakeCUDN("probe").Selector(namesNamespaces(tc.selects)).Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.100.0.0/16")).Obj())
		if tc.conflict == "" && err != nil || tc.conflict != "" && (!apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.conflict)) {
			t.Errorf("selecting %s: err = %v, want conflict %q", tc.selects, err, tc.conflict)
		}
		if cache.read > most {
			t.Errorf("selecting %s read %d objects from the cache, want at most %d", tc.selects, cache.read, most)
		}
	}
	cache.read = 0
	spec, err := CachedPrimaryNetworkOf(context.Background(), cache, nil, "c-7")
	if err != nil || spec == nil {
		t.Fatalf("primary network of c-7: %v, %v", spec, err)
	}
	if cache.read > 2 {
		t.Errorf("a pod's primary network lookup read %d objects from the cache, want at most 2 (the namespace and its network)", cache.read)
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
