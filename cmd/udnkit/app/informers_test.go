package app

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/apis/scheme"
)

// An informer first asked for after the cache started (a watch, a Get, a
// List or an index of a kind nobody registered) is reported, once; one
// registered before the start is not, whoever reads it later; the pods'
// metadata informer is not the typed pods' one.
func TestWatchedCacheReportsLateInformers(t *testing.T) {
	ctx := context.Background()
	s := scheme.New()
	c := &watchedCache{Cache: &informertest.FakeInformers{Scheme: s}, scheme: s, log: logr.Discard(), known: map[string]bool{}}
	if _, err := c.GetInformer(ctx, &corev1.Pod{}); err != nil {
		t.Fatal(err)
	}
	if err := c.IndexField(ctx, &corev1.Node{}, "x", func(client.Object) []string { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if late := c.Late(); len(late) != 0 {
		t.Fatalf("informers registered before the start reported late: %v", late)
	}
	_ = c.Get(ctx, client.ObjectKey{Name: "a"}, &corev1.Pod{})
	_ = c.List(ctx, &corev1.NodeList{})
	if late := c.Late(); len(late) != 0 {
		t.Fatalf("reads of registered kinds reported late: %v", late)
	}
	_ = c.List(ctx, &corev1.ServiceList{})
	_ = c.Get(ctx, client.ObjectKey{Name: "s"}, &corev1.Service{})
	_ = c.List(ctx, podMetadataList())
	if _, err := c.GetInformer(ctx, &corev1.Namespace{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"/v1, Kind=Service", "/v1, Kind=Pod (metadata)", "/v1, Kind=Namespace"}
	if late := c.Late(); !slices.Equal(late, want) {
		t.Errorf("late informers %v, want %v", late, want)
	}
}

// /readyz/informers fails while the cache has not synced, and passes once
// it has.
func TestInformersCheck(t *testing.T) {
	synced := false
	check := informersSynced(&informertest.FakeInformers{Synced: &synced})
	if err := check(httptest.NewRequest("GET", "/readyz/informers", nil)); err == nil {
		t.Error("the check passed before the informers synced")
	}
	synced = true
	if err := check(httptest.NewRequest("GET", "/readyz/informers", nil)); err != nil {
		t.Errorf("the check failed once the informers synced: %v", err)
	}
}

// WaitForInformers gives up with the check's reason when its context ends
// before the informers synced, and returns once they have synced.
func TestWaitForInformers(t *testing.T) {
	synced := false
	c := &informertest.FakeInformers{Synced: &synced}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := waitForInformers(ctx, c); !errors.Is(err, errInformersSyncing) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting on unsynced informers: err = %v, want the syncing reason and the deadline", err)
	}
	synced = true
	if err := waitForInformers(context.Background(), c); err != nil {
		t.Errorf("waiting on informers that sync: %v", err)
	}
}

func podMetadataList() *metav1.PartialObjectMetadataList {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	return l
}

// warmInformers' kinds are not late when their warmer starts them after the
// cache, and /readyz/informers waits for every warmer to have started its.
func TestWarmedInformersAfterTheStart(t *testing.T) {
	ctx := context.Background()
	s := scheme.New()
	synced := true
	fake := &informertest.FakeInformers{Scheme: s, Synced: &synced}
	c := &watchedCache{Cache: fake, scheme: s, log: logr.Discard(), known: map[string]bool{}}
	objs := []client.Object{&corev1.Node{}, &corev1.Service{}}
	c.expect(objs)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	check := informersSynced(c)
	if err := check(httptest.NewRequest("GET", "/readyz/informers", nil)); err == nil {
		t.Error("the check passed before the warmer started its informers")
	}
	if err := (warmer{cache: c, watched: c, objs: objs}).Start(ctx); err != nil {
		t.Fatal(err)
	}
	if late := c.Late(); len(late) != 0 {
		t.Errorf("warmed informers reported late: %v", late)
	}
	if err := check(httptest.NewRequest("GET", "/readyz/informers", nil)); err != nil {
		t.Errorf("the check failed once the warmer was through and the informers synced: %v", err)
	}
	if _, ok := fake.InformersByGVK[corev1.SchemeGroupVersion.WithKind("Node")]; !ok {
		t.Error("the warmer did not start the Node informer")
	}
}
