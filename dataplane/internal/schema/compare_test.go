package schema

import (
	"testing"

	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// The fingerprint of a row's managed columns is equal exactly when
// SameFields says the columns are: sets and maps in any order, an empty map
// as a missing one; a change of any one column changes it.
func TestFingerprintFollowsSameFields(t *testing.T) {
	peer := "rtoj-peer"
	empty := ""
	base := func() *nbdb.LogicalRouterPort {
		return &nbdb.LogicalRouterPort{ExternalIDs: map[string]string{"a": "1", "b": "2"}, MAC: "0a:58:64:58:00:05",
			Networks: []string{"100.88.0.5/16", "fd97::5/64"}, Options: map[string]string{}, Peer: &peer}
	}
	fields := func(r *nbdb.LogicalRouterPort) []any { return LogicalRouterPort.Fields(r, nil) }
	shared := map[string]string{"owner": "x"}
	sharedFP := MapFP(shared)
	fp := func(r *nbdb.LogicalRouterPort) uint64 {
		t.Helper()
		v, ok := Fingerprint(fields(r), shared, sharedFP)
		if !ok {
			t.Fatalf("no fingerprint for %+v", r)
		}
		return v
	}
	want := fp(base())
	same := map[string]func(r *nbdb.LogicalRouterPort){
		"sets in another order": func(r *nbdb.LogicalRouterPort) { r.Networks = []string{"fd97::5/64", "100.88.0.5/16"} },
		"a map built in another order": func(r *nbdb.LogicalRouterPort) {
			r.ExternalIDs = map[string]string{"b": "2"}
			r.ExternalIDs["a"] = "1"
		},
		"a missing map for an empty one": func(r *nbdb.LogicalRouterPort) { r.Options = nil },
	}
	for name, change := range same {
		r := base()
		change(r)
		if !SameFields(fields(r), fields(base())) {
			t.Fatalf("%s: SameFields says the rows differ", name)
		}
		if got := fp(r); got != want {
			t.Errorf("%s: fingerprint changed", name)
		}
	}
	differ := map[string]func(r *nbdb.LogicalRouterPort){
		"external_ids value":    func(r *nbdb.LogicalRouterPort) { r.ExternalIDs["a"] = "2" },
		"external_ids key":      func(r *nbdb.LogicalRouterPort) { r.ExternalIDs = map[string]string{"a": "1", "c": "2"} },
		"key and value swapped": func(r *nbdb.LogicalRouterPort) { r.ExternalIDs = map[string]string{"1": "a", "b": "2"} },
		"mac":                   func(r *nbdb.LogicalRouterPort) { r.MAC = "0a:58:64:58:00:06" },
		"a network fewer":       func(r *nbdb.LogicalRouterPort) { r.Networks = r.Networks[:1] },
		"a network changed":     func(r *nbdb.LogicalRouterPort) { r.Networks[1] = "fd97::6/64" },
		"an option":             func(r *nbdb.LogicalRouterPort) { r.Options["requested-chassis"] = "n1" },
		"no peer":               func(r *nbdb.LogicalRouterPort) { r.Peer = nil },
		"an empty peer":         func(r *nbdb.LogicalRouterPort) { r.Peer = &empty },
		"the owner's ids":       func(r *nbdb.LogicalRouterPort) { r.ExternalIDs = shared },
		"options holding the owner's ids": func(r *nbdb.LogicalRouterPort) {
			r.Options = map[string]string{"owner": "x"}
		},
		"values moved between columns": func(r *nbdb.LogicalRouterPort) {
			r.ExternalIDs, r.Ipv6RaConfigs = nil, r.ExternalIDs
		},
	}
	for name, change := range differ {
		r := base()
		change(r)
		if SameFields(fields(r), fields(base())) {
			t.Fatalf("%s: SameFields says the rows are equal", name)
		}
		if got := fp(r); got == want {
			t.Errorf("%s: fingerprint unchanged", name)
		}
	}
	// The owner's shared map and an equal map hash alike.
	a, b := base(), base()
	a.ExternalIDs, b.ExternalIDs = shared, map[string]string{"owner": "x"}
	if fp(a) != fp(b) {
		t.Error("the owner's shared external_ids and an equal map have different fingerprints")
	}
	// The external_ids hash as the owner's stamp makes them: stamped or not,
	// with another value under the owner's key (the stamp sets the owner's),
	// and none as the owner's alone.
	for name, ids := range map[string]map[string]string{
		"stamped":                    {"a": "1", "b": "2", "owner": "x"},
		"another value of the owner": {"a": "1", "b": "2", "owner": "y"},
	} {
		r := base()
		r.ExternalIDs = ids
		if fp(r) != want {
			t.Errorf("%s: fingerprint differs from the unstamped row's", name)
		}
	}
	a.ExternalIDs = nil
	if fp(a) != fp(b) {
		t.Error("no external_ids and the owner's have different fingerprints")
	}
	// A column type fingerprint does not know: no fingerprint (always compared).
	if _, ok := Fingerprint([]any{new(float64)}, shared, sharedFP); ok {
		t.Error("a fingerprint for an unknown column type")
	}
}

// A column's memo that holds a model the cache has replaced (an event on
// its way) is not trusted: the plan reads the column afresh, plans what
// the full read plans (here nothing) and forgets the memo, which the next
