package index

import (
	"runtime/debug"
	"testing"

	"github.com/ovn-kubernetes/libovsdb/cache"
	"github.com/ovn-kubernetes/libovsdb/model"

	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// libovsdbVersion is the libovsdb module this test binary is built with.
func libovsdbVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == "github.com/ovn-kubernetes/libovsdb" {
				return d.Version
			}
		}
	}
	return "(unknown)"
}

// libovsdb's RowCache still has the private fields cachedModel reads, and
// they hold the cache's own models: the model cachedModel returns for a
// row is the one RowsShallow returns (the same pointer), and nil for a row
// the cache does not hold.
func TestRowCacheLayoutIsLibovsdbs(t *testing.T) {
	if !rowCacheLayout.ok {
		t.Fatalf("libovsdb %s: cache.RowCache has no field `cache map[string]model.Model` and `mutex sync.RWMutex` "+
			"(the layout of v0.8.1): the index cannot read the cache's models; check layout.go against the new version", libovsdbVersion())
	}
	dbModel, err := nbdb.FullDatabaseModel()
	if err != nil {
		t.Fatal(err)
	}
	full, errs := model.NewDatabaseModel(nbdb.Schema(), dbModel)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	uuid := "5f5b1bd8-0d0c-4c8a-9b4e-000000000001"
	tc, err := cache.NewTableCache(full, cache.Data{nbdb.LogicalRouterTable: {
		uuid: &nbdb.LogicalRouter{UUID: uuid, Name: "r"},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rc := tc.Table(nbdb.LogicalRouterTable)
	want := rc.RowsShallow()[uuid]
	if want == nil {
		t.Fatal("the cache holds no row")
	}
	if got := cachedModel(rc, uuid); got != want {
		t.Fatalf("libovsdb %s: cachedModel returns %p, the cache holds %p: RowCache's layout differs from v0.8.1's; check layout.go",
			libovsdbVersion(), got, want)
	}
	if got := cachedModel(rc, "5f5b1bd8-0d0c-4c8a-9b4e-000000000002"); got != nil {
		t.Errorf("cachedModel of a missing row = %v", got)
	}
}
