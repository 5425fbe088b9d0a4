package plan

import (
	"fmt"
	"slices"

	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
)

// portGroups plans the port groups, their ACLs and the members the piece
// puts in them.
func (p *Planner) portGroups(desired []rows.PortGroup) error {
	ds := make([]desiredParent[nbdb.PortGroup], len(desired))
	for i := range desired {
		d := &desired[i]
		ds[i] = desiredParent[nbdb.PortGroup]{row: d.Row, ref: d.Ref, shared: d.Shared,
			children: func(cur, row *nbdb.PortGroup, _ bool) (colMuts, error) {
				mut := colMuts{}
				if err := diffColumn(p, schema.ACL, cur.UUID, cur.ACLs, d.ACLs, &row.ACLs, mut, nil); err != nil {
					return nil, err
				}
				ins, rem, err := p.members(d, cur.Ports)
				mut[&row.Ports] = &[2][]string{ins, rem}
				return mut, err
			}}
	}
	return planParents(p, schema.PortGroup, "port group", ds)
}

// members diffs a port group's ports (current: its cached ones) against
// the desired ones, by name: it adds the missing ones and takes out the
// piece's own ports no longer desired (another's stay).
func (p *Planner) members(d *rows.PortGroup, current []string) (insert, remove []string, err error) {
	want := make(map[string]bool, len(d.Ports))
	var order []string
	for _, name := range d.Ports {
		u, err := p.portUUID(name)
		if err != nil {
			return nil, nil, fmt.Errorf("port group %q: %w", d.Row.Name, err)
		}
		if !want[u] {
			want[u] = true
			order = append(order, u)
		}
	}
	owned := p.ownedIn(nbdb.LogicalSwitchPortTable)
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
func (p *Planner) portUUID(name string) (string, error) {
	if u, ok := p.inserted[[2]string{nbdb.LogicalSwitchPortTable, name}]; ok {
		return u, nil
	}
	u, m, err := p.api.Cache().Table(nbdb.LogicalSwitchPortTable).RowByModel(&nbdb.LogicalSwitchPort{Name: name})
	if err != nil {
		return "", err
	}
	if m == nil {
		return "", fmt.Errorf("logical switch port %q not found: it must be one of the desired switches' ports or exist", name)
	}
	return u, nil
}
