package index

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/ovn-kubernetes/libovsdb/client"

	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/ovnk"
)

// Diff says how the index differs from one built afresh from api's cache
// ("" when it does not): the same models (by content) under the same
// UUIDs, and the same rows by network, name and parent. It is the tests'
// check that the index follows the cache; it reads the server (links).
func (ix *Index) Diff(api client.Client) string {
	// The children another client inserted are looked up (as a plan of
	// their network would).
	unlock := ix.Read(api)
	unlinked := ix.Unlinked("")
	unlock()
	if len(unlinked) > 0 {
		if err := ix.LookUp(api, unlinked); err != nil {
			return err.Error()
		}
	}
	defer ix.Read(api)()
	fresh := New(ix.ready, ix.keep)
	if err := fresh.Rebuild(api); err != nil {
		return err.Error()
	}
	diffs := ix.diffRows(fresh)
	diffs = append(diffs, ix.diffLinks(fresh)...)
	diffs = append(diffs, ix.diffDerived()...)
	slices.Sort(diffs)
	return strings.Join(diffs, "\n")
}

// diffRows compares the rows and where they are found with fresh's.
func (ix *Index) diffRows(fresh *Index) []string {
	var diffs []string
	for _, t := range tables {
		got, want := ix.rows[t], fresh.rows[t]
		for u, w := range want {
			if g, ok := got[u]; !ok {
				diffs = append(diffs, fmt.Sprintf("%s %s missing", t, u))
			} else if !reflect.DeepEqual(g, w) {
				diffs = append(diffs, fmt.Sprintf("%s %s is %+v, the cache's %+v", t, u, g, w))
			}
		}
		for u := range got {
			if _, ok := want[u]; !ok {
				diffs = append(diffs, fmt.Sprintf("%s %s is not in the cache", t, u))
			}
		}
	}
	if !sameSets(ix.byNet, fresh.byNet) {
		diffs = append(diffs, fmt.Sprintf("by network: %v, afresh %v", ix.byNet, fresh.byNet))
	}
	if !sameSets(ix.byPart, fresh.byPart) {
		diffs = append(diffs, fmt.Sprintf("by part: %v, afresh %v", ix.byPart, fresh.byPart))
	}
	if !sameSets(ix.byName, fresh.byName) {
		diffs = append(diffs, fmt.Sprintf("by name: %v, afresh %v", ix.byName, fresh.byName))
	}
	if !reflect.DeepEqual(ix.pieces, fresh.pieces) {
		diffs = append(diffs, fmt.Sprintf("pieces: %v, afresh %v", ix.pieces, fresh.pieces))
	}
	return diffs
}

// diffLinks compares the links and the sorted children with fresh's.
func (ix *Index) diffLinks(fresh *Index) []string {
	var diffs []string
	if !maps.EqualFunc(ix.parents, fresh.parents, func(a, b []string) bool {
		return len(a) == len(b) && !slices.ContainsFunc(a, func(u string) bool { return !slices.Contains(b, u) })
	}) {
		diffs = append(diffs, fmt.Sprintf("parents: %v, afresh %v", ix.parents, fresh.parents))
	}
	if !reflect.DeepEqual(nonEmptyKids(ix.kids), nonEmptyKids(fresh.kids)) {
		diffs = append(diffs, fmt.Sprintf("children: %v, afresh %v", ix.kids, fresh.kids))
	}
	// The sorted children plans read are the sets as they are now, and
	// none is kept for an empty set (a gone parent's would be a leak).
	for _, key := range slices.Collect(maps.Keys(ix.sorted)) {
		ix.children(key[0], key[1]) // applies the edits noted since
	}
	for key, s := range ix.sorted {
		if len(s) == 0 {
			diffs = append(diffs, fmt.Sprintf("sorted children of %s %s kept for an empty set", key[0], key[1]))
		}
		if want := slices.Sorted(maps.Keys(ix.kids[key[0]][key[1]])); !slices.Equal(s, want) {
			diffs = append(diffs, fmt.Sprintf("sorted children of %s %s: %v, the set %v", key[0], key[1], s, want))
		}
	}
	return diffs
}

// diffDerived compares what the index keeps as it changes (the children
// with no known parent, the parents holding each network's children) with
// what a scan of every child finds.
func (ix *Index) diffDerived() []string {
	var diffs []string
	loose := map[string]string{}
	for t := range parentColumns {
		for c := range ix.rows[t] {
			if _, looked := ix.unparented[c]; !looked && len(ix.parents[c]) == 0 {
				loose[c] = t
			}
		}
	}
	if !maps.Equal(ix.loose, loose) && len(ix.loose)+len(loose) > 0 {
		diffs = append(diffs, fmt.Sprintf("children with no known parent: %v, by a scan %v", ix.loose, loose))
	}
	// The parents holding each network's children, kept as the index
	// changes, are those a scan of every child finds.
	held := map[string]map[string]int{}
	for t := range parentColumns {
		for c, m := range ix.rows[t] {
			_, ids, _, _ := schema.RowFields(t, m)
			for _, p := range ix.parents[c] {
				if n := ids[ovnk.ExternalIDNetwork]; n != "" {
					if held[n] == nil {
						held[n] = map[string]int{}
					}
					held[n][p]++
				}
			}
		}
	}
	if !reflect.DeepEqual(ix.netParents, held) && len(ix.netParents)+len(held) > 0 {
		diffs = append(diffs, fmt.Sprintf("parents holding each network's children: %v, by a scan %v", ix.netParents, held))
	}
	return diffs
}

// nonEmptyKids leaves out the empty sets and the maps left without one.
func nonEmptyKids(kids map[string]map[string]uuidSet) map[string]map[string]uuidSet {
	out := map[string]map[string]uuidSet{}
	for p, cols := range kids {
		for col, s := range cols {
			if len(s) > 0 {
				if out[p] == nil {
					out[p] = map[string]uuidSet{}
				}
				out[p][col] = s
			}
		}
	}
	return out
}

// sameSets compares two table → key → UUIDs maps, empty maps counting as missing.
func sameSets(a, b map[string]map[string]uuidSet) bool {
	return reflect.DeepEqual(nonEmptyKids(a), nonEmptyKids(b))
}
