package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
)

// InformersCheck names the manager's readiness check that every informer
// registered before the start has synced (/readyz/informers).
const InformersCheck = "informers"

var errInformersSyncing = errors.New("the informers have not synced yet")

// watchedCache is the manager's cache, noting which informers were first
// asked for after the cache started. Such an informer is created on its
// first reader's call (a controller's watch when the controller starts, a
// reconciler's Get or List of a kind nothing watches) and that reader waits
// for its initial sync: with client-go's streaming list (WatchListClient),
// about a second against a real apiserver, which the apiserver spends
// waiting for its next bookmark tick before it ends the initial events.
// Informers registered before the start (warmInformers) sync together with
// the cache, before the manager reports ready.
type watchedCache struct {
	cache.Cache
	scheme *runtime.Scheme
	log    logr.Logger

	mu      sync.Mutex
	started bool
	known   map[string]bool
	late    []string
	// warming counts the warmers not yet through their informers.
	warming int
}

// expect notes objs' informers as started with the cache (not late) and
// one more warmer to wait for.
func (c *watchedCache) expect(objs []client.Object) {
	c.mu.Lock()
	c.warming++
	c.mu.Unlock()
	for _, obj := range objs {
		if name, ok := c.informerName(obj); ok {
			c.mu.Lock()
			c.known[name] = true
			c.mu.Unlock()
		}
	}
}

func (c *watchedCache) warmed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.warming--
}

func (c *watchedCache) allWarmed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.warming <= 0
}

func newWatchedCache(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
	c, err := cache.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	return &watchedCache{Cache: c, scheme: opts.Scheme, log: ctrl.Log.WithName("cache"), known: map[string]bool{}}, nil
}

// informerName names the informer a read of obj uses: its kind, and
// whether it holds metadata only.
func (c *watchedCache) informerName(obj runtime.Object) (string, bool) {
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return "", false
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	name := gvk.String()
	switch obj.(type) {
	case *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		name += " (metadata)"
	}
	return name, true
}

// note records obj's informer; one first asked for after the start is
// logged and kept for Late.
func (c *watchedCache) note(obj runtime.Object) {
	name, ok := c.informerName(obj)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.known[name] {
		return
	}
	c.known[name] = true
	if c.started {
		c.late = append(c.late, name)
		c.log.Info("informer started after the manager's start: its first reader waits for its initial sync; start it with the cache (warmInformers)", "informer", name)
	}
}

// Late lists the informers first asked for after the cache started.
func (c *watchedCache) Late() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.late)
}

func (c *watchedCache) Start(ctx context.Context) error {
	c.mu.Lock()
	c.started = true
	c.mu.Unlock()
	return c.Cache.Start(ctx)
}

func (c *watchedCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	c.note(obj)
	return c.Cache.GetInformer(ctx, obj, opts...)
}

func (c *watchedCache) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	c.note(obj)
	return c.Cache.IndexField(ctx, obj, field, extract)
}

func (c *watchedCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.note(obj)
	return c.Cache.Get(ctx, key, obj, opts...)
}

func (c *watchedCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.note(list)
	return c.Cache.List(ctx, list, opts...)
}

// LateInformers lists the informers mgr's cache was first asked for after it
// started (none is the goal: each made its first reader wait).
func LateInformers(mgr ctrl.Manager) []string {
	if c, ok := mgr.GetCache().(*watchedCache); ok {
		return c.Late()
	}
	return nil
}

// warmInformers starts the informers of objs as soon as the manager's cache
// has started, before any controller reads them, so that they sync at the
// start rather than on their first reader. They are not registered before
// the start: the manager waits for every informer registered then to sync
// before it starts anything else, and an informer that never syncs (a
// permission the manager's role lacks) would leave it hanging, unstoppable
// (controller-runtime's start loop ignores its context while it waits). A
// controller's own watch of such a kind fails after its cache sync timeout,
// which a user sees.
func warmInformers(_ context.Context, mgr ctrl.Manager, objs []client.Object) error {
	c, _ := mgr.GetCache().(*watchedCache)
	if c != nil {
		c.expect(objs)
	}
	return mgr.Add(warmer{cache: mgr.GetCache(), watched: c, objs: objs})
}

// warmer is the runnable warmInformers adds: on every replica, leader or
// not, right after the caches started.
type warmer struct {
	cache   cache.Cache
	watched *watchedCache
	objs    []client.Object
}

func (w warmer) Start(ctx context.Context) error {
	if w.watched != nil {
		defer w.watched.warmed()
	}
	for _, obj := range w.objs {
		if _, err := w.cache.GetInformer(ctx, obj, cache.BlockUntilSynced(false)); err != nil {
			return err
		}
	}
	return nil
}

func (warmer) NeedLeaderElection() bool { return false }

// informersSynced is the readiness check that every informer warmInformers
// starts (and any other started so far) has synced.
func informersSynced(c cache.Cache) func(*http.Request) error {
	return func(r *http.Request) error {
		if w, ok := c.(*watchedCache); ok && !w.allWarmed() {
			return errInformersSyncing
		}
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Millisecond)
		defer cancel()
		if !c.WaitForCacheSync(ctx) {
			return errInformersSyncing
		}
		return nil
	}
}

// WaitForInformers waits until mgr would pass its informers readiness
// check: every informer started at the start (warmInformers) has synced.
// The cache's own WaitForCacheSync returns before the warmers have run.
func WaitForInformers(ctx context.Context, mgr ctrl.Manager) error {
	return waitForInformers(ctx, mgr.GetCache())
}

// waitForInformers polls c's informers readiness check until it passes or
// ctx ends.
func waitForInformers(ctx context.Context, c cache.Cache) error {
	check := informersSynced(c)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "/readyz/"+InformersCheck, nil)
	if err != nil {
		return err
	}
	for {
		if check(req) == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", errInformersSyncing, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// networkKinds are the kinds every controller of a network watches: the
// networks, their namespaces and their NADs.
func networkKinds() []client.Object {
	return []client.Object{&udnv1.UserDefinedNetwork{}, &udnv1.ClusterUserDefinedNetwork{}, &nadv1.NetworkAttachmentDefinition{}, &corev1.Namespace{}}
}

// podMetadata is the pods' metadata-only informer (the UDN and CUDN
// controllers watch which pods use a network).
func podMetadata() client.Object {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	return m
}

// served tells whether the apiserver serves gvk (an optional CRD): an
// informer of a kind it does not serve would never sync.
func served(mgr ctrl.Manager, gvk schema.GroupVersionKind) (bool, error) {
	_, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return false, nil
	}
	return err == nil, err
}
