package index

import (
	"reflect"
	"sync"
	"unsafe"

	"github.com/ovn-kubernetes/libovsdb/cache"
	"github.com/ovn-kubernetes/libovsdb/model"
)

// The dataplane's one use of unsafe: reading libovsdb's cache without a
// copy. libovsdb's RowCache hands out a row only as a clone (Row) and a
// table only as a copy of its map (RowsShallow); the index holds the
// cache's own models instead, looked up by UUID when an event names their
// row, because the events' models (which the cache clones before it stores
// them) would double the memory the rows take.
//
// It depends on the private layout of cache.RowCache in
// github.com/ovn-kubernetes/libovsdb v0.8.1 (the version go.mod pins): a
// field `cache map[string]model.Model` guarded by a field `mutex
// sync.RWMutex`. rowCacheLayout finds both by name and type, and without
// them the index falls back to the events' models (Row); layout_test.go
// fails loudly when they are not found or do not hold the rows, so a
// libovsdb upgrade that changes them is noticed at once.

// rowCacheLayout locates RowCache's map of models and its lock.
var rowCacheLayout = func() (l struct {
	ok           bool
	cache, mutex uintptr
}) {
	t := reflect.TypeFor[cache.RowCache]()
	c, okC := t.FieldByName("cache")
	m, okM := t.FieldByName("mutex")
	l.ok = okC && okM && c.Type == reflect.TypeFor[map[string]model.Model]() && m.Type == reflect.TypeFor[sync.RWMutex]()
	l.cache, l.mutex = c.Offset, m.Offset
	return l
}()

// cachedModel returns the model rc holds for uuid (nil: none), not a clone
// (RowCache.Row's): read-only, like RowsShallow's.
func cachedModel(rc *cache.RowCache, uuid string) model.Model {
	mu := (*sync.RWMutex)(unsafe.Add(unsafe.Pointer(rc), rowCacheLayout.mutex))
	rows := (*map[string]model.Model)(unsafe.Add(unsafe.Pointer(rc), rowCacheLayout.cache))
	mu.RLock()
	defer mu.RUnlock()
	return (*rows)[uuid]
}
