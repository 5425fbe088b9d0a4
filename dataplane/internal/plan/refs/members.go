package refs

import (
	"fmt"
	"slices"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
)

// Members diffs a port group's ports (current: its cached ones) against
// the desired ones, by name: it adds the missing ones and takes out the
// piece's own ports no longer desired (another's stay).
func (r *Resolver) Members(d *rows.PortGroup, current []string) (insert, remove []string, err error) {
	want := make(map[string]bool, len(d.Ports))
	var order []string
	for _, name := range d.Ports {
		u, err := r.portUUID(name)
		if err != nil {
			return nil, nil, fmt.Errorf("port group %q: %w", d.Row.Name, err)
		}
		if !want[u] {
			want[u] = true
			order = append(order, u)
		}
	}
	owned := r.h.OwnedIn(nbdb.LogicalSwitchPortTable)
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

// portUUID is a logical switch port's UUID, by name: the named UUID of
// the plan's insert, or the existing row's.
func (r *Resolver) portUUID(name string) (string, error) {
	if u := r.h.Inserted(nbdb.LogicalSwitchPortTable, name); u != "" {
		return u, nil
	}
	u, m, err := r.h.API().Cache().Table(nbdb.LogicalSwitchPortTable).RowByModel(&nbdb.LogicalSwitchPort{Name: name})
	if err != nil {
		return "", err
	}
	if m == nil {
		return "", fmt.Errorf("logical switch port %q not found: it must be one of the desired switches' ports or exist", name)
	}
	return u, nil
}
