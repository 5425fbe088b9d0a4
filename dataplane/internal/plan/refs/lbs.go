package refs

import (
	"fmt"
	"slices"

	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
)

// LoadBalancers notes, once the plan diffed the piece's load balancers
// (root rows, by name), the UUID of each, for the groups that hold them.
func (r *Resolver) LoadBalancers() {
	r.lbs, r.ownedLBs = map[string]string{}, map[string]bool{}
	for _, u := range r.h.Scan(nbdb.LoadBalancerTable, nil) {
		if m := r.h.Row(nbdb.LoadBalancerTable, u); m != nil {
			lb := m.(*nbdb.LoadBalancer)
			if r.owner.Owns(lb.ExternalIDs, m) {
				r.lbs[lb.Name] = u
				r.ownedLBs[u] = true
			}
		}
	}
	r.newLBs = map[string]bool{}
	for name, u := range r.h.InsertedIn(nbdb.LoadBalancerTable) {
		r.lbs[name] = u
		r.newLBs[u] = true
	}
}

// ownedLB says whether an existing load balancer is the piece's: one that
// LoadBalancers found. Every row the piece owns is among those its scan
// returns (package index), so the answer is OwnedIn's, without reading
// the row again for each member of a group of thousands.
func (r *Resolver) ownedLB(uuid string) bool { return r.ownedLBs[uuid] }

// LBGroups plans the load balancer groups (zone rows, by name): a missing
// one is inserted with its load balancers (a Ref one is refused); an
// existing one gains the desired load balancers it lacks and loses the
// piece's others.
func (r *Resolver) LBGroups(desired []rows.LoadBalancerGroup) error {
	for _, g := range desired {
		want := make([]string, 0, len(g.LoadBalancers))
		for _, name := range g.LoadBalancers {
			u, ok := r.lbs[name]
			if !ok {
				return fmt.Errorf("load balancer group %q: load balancer %q is not one of the desired load balancers", g.Row.Name, name)
			}
			if !slices.Contains(want, u) {
				want = append(want, u)
			}
		}
		u := r.zoneRow(nbdb.LoadBalancerGroupTable, g.Row.Name)
		if u == "" {
			if g.Ref {
				return &rows.MissingRowError{Kind: "load balancer group", Name: g.Row.Name}
			}
			// The zone's inserts go first in a split Apply: the load
			// balancers the plan inserts join the group by a mutation.
			var existing, inserted []string
			for _, lb := range want {
				if r.newLBs[lb] {
					inserted = append(inserted, lb)
				} else {
					existing = append(existing, lb)
				}
			}
			row := nbdb.LoadBalancerGroup{UUID: r.h.NewUUID(), Name: g.Row.Name, LoadBalancer: existing}
			r.h.MarkZone(nbdb.LoadBalancerGroupTable, g.Row.Name)
			r.h.NoteInserted(nbdb.LoadBalancerGroupTable, row.Name, row.UUID)
			if err := r.h.Add(r.h.API().Create(&row)); err != nil {
				return err
			}
			if err := r.mutateSet(&nbdb.LoadBalancerGroup{UUID: row.UUID}, inserted, nil); err != nil {
				return err
			}
			continue
		}
		cur := r.h.Row(nbdb.LoadBalancerGroupTable, u).(*nbdb.LoadBalancerGroup)
		ins, rem := memberDiff(want, cur.LoadBalancer, r.ownedLB)
		if err := r.mutateSet(&nbdb.LoadBalancerGroup{UUID: u}, ins, rem); err != nil {
			return err
		}
	}
	return nil
}

// LBGroupRefs diffs a router's or switch's load_balancer_group column
// (current) against the groups the piece names: the missing ones are
// added; on a row the piece owns (ref false) the others are taken out.
func (r *Resolver) LBGroupRefs(kind, name string, names, current []string, ref bool) (insert, remove []string, err error) {
	want := make([]string, 0, len(names))
	for _, n := range names {
		u := r.h.Inserted(nbdb.LoadBalancerGroupTable, n)
		if u == "" {
			u = r.zoneRow(nbdb.LoadBalancerGroupTable, n)
		}
		if u == "" {
			return nil, nil, fmt.Errorf("%s %q: load balancer group %q not found", kind, name, n)
		}
		want = append(want, u)
	}
	owned := func(string) bool { return !ref }
	insert, remove = memberDiff(want, current, owned)
	return insert, remove, nil
}

// LBRefs diffs a router's or switch's load_balancer column (current)
// against the piece's load balancers it names: the missing ones are added;
// of the others, only the piece's own are taken out, whoever owns the row
// (another piece's or another client's load balancers stay).
func (r *Resolver) LBRefs(kind, name string, names, current []string) (insert, remove []string, err error) {
	want := make([]string, 0, len(names))
	for _, n := range names {
		u, ok := r.lbs[n]
		if !ok {
			return nil, nil, fmt.Errorf("%s %q: load balancer %q is not one of the desired load balancers", kind, name, n)
		}
		want = append(want, u)
	}
	insert, remove = memberDiff(want, current, r.ownedLB)
	return insert, remove, nil
}

// memberDiff is what a set of members (current) gains (want's missing
// ones, in want's order) and loses (the owned ones not wanted, sorted).
func memberDiff(want, current []string, owned func(string) bool) (insert, remove []string) {
	// Sets, not slices.Contains: a group holds a load balancer per Service
	// (thousands), and this runs on every change of any one of them.
	has := make(map[string]bool, len(current))
	for _, u := range current {
		has[u] = true
	}
	wanted := make(map[string]bool, len(want))
	for _, u := range want {
		if !has[u] && !wanted[u] {
			insert = append(insert, u)
		}
		wanted[u] = true
	}
	for _, u := range current {
		if !wanted[u] && owned(u) {
			remove = append(remove, u)
		}
	}
	slices.Sort(remove)
	return insert, remove
}

// mutateSet mutates a load balancer group's load balancers, by the
// group's UUID (nothing when nothing changes).
func (r *Resolver) mutateSet(row *nbdb.LoadBalancerGroup, insert, remove []string) error {
	col := &row.LoadBalancer
	var mutations []model.Mutation
	if len(remove) > 0 {
		mutations = append(mutations, model.Mutation{Field: col, Mutator: ovsdb.MutateOperationDelete, Value: remove})
	}
	if len(insert) > 0 {
		mutations = append(mutations, model.Mutation{Field: col, Mutator: ovsdb.MutateOperationInsert, Value: insert})
	}
	if len(mutations) == 0 {
		return nil
	}
	return r.h.Mutate(row, row, mutations)
}
