package refs

import (
	"slices"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/ovnk"
)

// DropLBGroups plans, for a piece that goes away (an empty Desired: every
// row the piece owns is deleted), the deletion of its network's load
// balancer groups (names) once the network is gone and nothing keeps
// them: no router or switch of the network stays (gone: the routers and
// switches the plan deletes, by UUID), none that stays references the
// group, and the group holds no load balancer but the piece's own (which
// the plan deletes). The groups have
// no external_ids: they are the network's by name, as upstream finds a
// removed network's groups (cleanupLoadBalancerGroups). Whichever of the
// network's pieces goes last takes them: the topology's, whose switches
// and routers name them, or the services piece, whose load balancers they
// hold.
func (r *Resolver) DropLBGroups(names []string, gone func(table, uuid string) bool) error {
	var drop []string
	for _, u := range r.h.Scan(nbdb.LoadBalancerGroupTable, names) {
		m := r.h.Row(nbdb.LoadBalancerGroupTable, u)
		g, ok := m.(*nbdb.LoadBalancerGroup)
		if !ok || !slices.Contains(names, g.Name) || r.holdsOthers(g) {
			continue
		}
		drop = append(drop, u)
	}
	drop = r.unreferenced(drop, gone)
	for _, u := range drop {
		r.h.NoteGone(nbdb.LoadBalancerGroupTable, u)
		if err := r.h.Add(r.h.API().Where(&nbdb.LoadBalancerGroup{UUID: u}).Delete()); err != nil {
			return err
		}
	}
	return nil
}

// holdsOthers says whether a group holds a load balancer that is not the
// piece's.
func (r *Resolver) holdsOthers(g *nbdb.LoadBalancerGroup) bool {
	owned := r.h.OwnedIn(nbdb.LoadBalancerTable)
	for _, lb := range g.LoadBalancer {
		if r.h.Row(nbdb.LoadBalancerTable, lb) != nil && !owned(lb) {
			return true
		}
	}
	return false
}

// unreferenced are the groups no router or switch the plan leaves
// references, none while a router or switch of the network (by its
// external_ids) stays. The network's own rows are looked at first (with the index,
// Scan gives them); only while some group is left is every router and
// switch read, as a delete of a group another row still names fails the
// whole transaction.
func (r *Resolver) unreferenced(groups []string, gone func(table, uuid string) bool) []string {
	tables := []string{nbdb.LogicalRouterTable, nbdb.LogicalSwitchTable}
	network := false // a router or switch of the network stays
	keep := func(table, u string, m any) {
		if m == nil || gone(table, u) {
			return
		}
		var named []string
		var ids map[string]string
		switch row := m.(type) {
		case *nbdb.LogicalRouter:
			named, ids = row.LoadBalancerGroup, row.ExternalIDs
		case *nbdb.LogicalSwitch:
			named, ids = row.LoadBalancerGroup, row.ExternalIDs
		}
		network = network || ids[ovnk.ExternalIDNetwork] == r.owner.Network
		groups = slices.DeleteFunc(groups, func(g string) bool { return slices.Contains(named, g) })
	}
	for _, t := range tables {
		for _, u := range r.h.Scan(t, nil) {
			keep(t, u, r.h.Row(t, u))
		}
	}
	if network {
		return nil // the network is still there: its groups stay, named or not
	}
	if !r.h.Indexed() {
		return groups // Scan read every row
	}
	for _, t := range tables {
		for u, m := range r.h.Rows(t) {
			if len(groups) == 0 {
				return nil
			}
			keep(t, u, m)
		}
	}
	return groups
}
