package refs

import (
	"fmt"
	"slices"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
)

// Members diffs a port group's ports (current: its cached ones) against
// the desired ones, by name: it adds the missing ones and takes out the
// ports no longer desired: all of them from a group the piece owns (its
// members are the piece's to plan, whoever owns the ports: a policy's
// group holds the pods piece's ports), only the piece's own ports from a
// group it references (ref: another's members stay). A port that
// neither exists nor is inserted by the plan is left out (Ports notes it
// absent): a group may name ports another writer owns (the default
// network's pod ports), which may not exist yet or may be going away.
func (r *Resolver) Members(d *rows.PortGroup, current []string, ref bool) (insert, remove []string, err error) {
	want := make(map[string]bool, len(d.Ports))
	var order []string
	for _, name := range d.Ports {
		u, err := r.portUUID(name)
		if err != nil {
			return nil, nil, fmt.Errorf("port group %q: %w", d.Row.Name, err)
		}
		if r.ports == nil {
			r.ports = map[string]bool{}
		}
		r.ports[name] = u != ""
		if u != "" && !want[u] {
			want[u] = true
			order = append(order, u)
		}
	}
	owned := func(string) bool { return true }
	if ref {
		owned = r.h.OwnedIn(nbdb.LogicalSwitchPortTable)
	}
	for _, u := range current {
		if want[u] {
			delete(want, u)
		} else if owned(u) {
			remove = append(remove, u)
		}
	}
	for _, u := range order {
		if want[u] {
			insert = append(insert, u)
		}
	}
	slices.Sort(remove)
	return insert, remove, nil
}

// Ports are the logical switch ports the plan's port groups name, by name:
// true for those found (or inserted), false for those left out.
func (r *Resolver) Ports() map[string]bool { return r.ports }

// portUUID is a logical switch port's UUID, by name: the named UUID of
// the plan's insert, or the existing row's ("" when there is neither).
func (r *Resolver) portUUID(name string) (string, error) {
	if u := r.h.Inserted(nbdb.LogicalSwitchPortTable, name); u != "" {
		return u, nil
	}
	u, m, err := r.h.API().Cache().Table(nbdb.LogicalSwitchPortTable).RowByModel(&nbdb.LogicalSwitchPort{Name: name})
	if err != nil || m == nil {
		return "", err
	}
	return u, nil
}
