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
// hold. With Later set, the check against the zone's other routers and
// switches is left to DropUnreferenced.
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
	drop, zone := r.unreferenced(drop, gone)
	if !zone {
		return r.deleteGroups(drop)
	}
	r.waiting, r.gone = drop, gone
	if r.later {
		return nil
	}
	return DropUnreferenced([]*Resolver{r})
}

// Later makes DropLBGroups leave the read of the zone's routers and
// switches to DropUnreferenced, so that the plans of a batch of removals
// share one read of the zone instead of one each.
func (r *Resolver) Later() { r.later = true }

// DropUnreferenced finishes the DropLBGroups of each of rs (plans of one
// database, each made with Later): of the groups each waits to delete, the
// ones no router or switch that plan leaves references are deleted. Every
// router and switch of the zone is read once for them all; a row keeps a
// group only when the plan deleting the group does not delete the row, as
// each plan alone decides (the plans may go into separate transactions).
func DropUnreferenced(rs []*Resolver) error {
	waiting := map[string][]*Resolver{} // group UUID → the plans deleting it
	for _, r := range rs {
		for _, g := range r.waiting {
			waiting[g] = append(waiting[g], r)
		}
	}
	for _, t := range groupHolders {
		if len(waiting) == 0 {
			break
		}
		for u, m := range rs[0].h.Rows(t) {
			named, _ := groupsAndIDs(m)
			for _, g := range named {
				left := slices.DeleteFunc(waiting[g], func(r *Resolver) bool {
					if r.gone(t, u) {
						return false
					}
					r.waiting = slices.DeleteFunc(r.waiting, func(w string) bool { return w == g })
					return true
				})
				if len(left) == 0 {
					delete(waiting, g)
				} else {
					waiting[g] = left
				}
			}
			if len(waiting) == 0 {
				break
			}
		}
	}
	for _, r := range rs {
		drop := r.waiting
		r.waiting, r.gone = nil, nil
		if err := r.deleteGroups(drop); err != nil {
			return err
		}
	}
	return nil
}

// deleteGroups deletes the load balancer groups drop (UUIDs).
func (r *Resolver) deleteGroups(drop []string) error {
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

// groupHolders are the tables whose rows name load balancer groups.
var groupHolders = []string{nbdb.LogicalRouterTable, nbdb.LogicalSwitchTable}

// groupsAndIDs are the load balancer groups a router or switch names, and
// its external_ids.
func groupsAndIDs(m any) ([]string, map[string]string) {
	switch row := m.(type) {
	case *nbdb.LogicalRouter:
		return row.LoadBalancerGroup, row.ExternalIDs
	case *nbdb.LogicalSwitch:
		return row.LoadBalancerGroup, row.ExternalIDs
	}
	return nil, nil
}

// unreferenced are the groups no router or switch of the network that the
// plan leaves references, none while a router or switch of the network (by
// its external_ids) stays. The network's own rows are looked at first
// (with the index, Scan gives them); zone says some group is left that
// every other router and switch must still be checked for
// (DropUnreferenced), as a delete of a group another row still names fails
// the whole transaction. Without the index Scan reads every row.
func (r *Resolver) unreferenced(groups []string, gone func(table, uuid string) bool) (left []string, zone bool) {
	network := false // a router or switch of the network stays
	for _, t := range groupHolders {
		for _, u := range r.h.Scan(t, nil) {
			m := r.h.Row(t, u)
			if m == nil || gone(t, u) {
				continue
			}
			named, ids := groupsAndIDs(m)
			network = network || ids[ovnk.ExternalIDNetwork] == r.owner.Network
			groups = slices.DeleteFunc(groups, func(g string) bool { return slices.Contains(named, g) })
		}
	}
	if network {
		return nil, false // the network is still there: its groups stay, named or not
	}
	return groups, r.h.Indexed() && len(groups) > 0
}
