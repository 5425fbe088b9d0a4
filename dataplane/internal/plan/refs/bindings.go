package refs

import (
	"fmt"
	"maps"
	"slices"

	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// MACBindings diffs the piece's static MAC bindings: those whose
// logical_port names one of the piece's router ports (the table has no
// external_ids). It runs after the routers, whose new ports it knows.
func (r *Resolver) MACBindings(desired []nbdb.StaticMACBinding) error {
	sp := schema.StaticMACBinding
	if len(desired) == 0 && r.h.Indexed() && len(r.h.Scan(nbdb.LogicalRouterPortTable, nil)) == 0 {
		return nil // no router port of the network: no binding of the piece
	}
	owns := r.routerPorts()
	current := map[string]*nbdb.StaticMACBinding{}
	var gone []string
	rows := r.h.Rows(sp.Table)
	for _, u := range slices.Sorted(maps.Keys(rows)) {
		b := rows[u].(*nbdb.StaticMACBinding)
		if !owns(b.LogicalPort) {
			continue
		}
		if _, dup := current[sp.Key(b)]; dup {
			gone = append(gone, u)
			continue
		}
		current[sp.Key(b)] = b
	}
	for i := range desired {
		d := desired[i]
		k := sp.Key(&d)
		if !owns(d.LogicalPort) {
			return fmt.Errorf("static MAC binding %s: logical port %q is not a router port of the piece", d.IP, d.LogicalPort)
		}
		ex, ok := current[k]
		if ex == nil && ok {
			return DuplicateRows(sp.Table, k)
		}
		current[k] = nil // claimed
		if !ok {
			d.UUID = r.h.NewUUID()
			if err := r.h.Add(r.h.API().Create(&d)); err != nil {
				return err
			}
			continue
		}
		if !schema.SameFields(sp.Fields(&d, nil), sp.Fields(ex, nil)) {
			d.UUID = ex.UUID
			if err := r.h.Add(r.h.API().Where(ex).Update(&d, sp.Fields(&d, nil)...)); err != nil {
				return err
			}
		}
	}
	for _, b := range current {
		if b != nil {
			gone = append(gone, b.UUID)
		}
	}
	slices.Sort(gone)
	for _, u := range gone {
		r.h.NoteGone(sp.Table, u)
		if err := r.h.Add(r.h.API().Where(&nbdb.StaticMACBinding{UUID: u}).Delete()); err != nil {
			return err
		}
	}
	return nil
}

// routerPorts says whether a router port, by name, is the piece's: one the
// plan inserts or a cached one the piece owns. The cached ones are read
// once, from the network's rows (every row the piece owns carries its
// network), instead of looking up by name each binding of the zone, whose
// number grows with the zone's networks.
func (r *Resolver) routerPorts() func(name string) bool {
	owned := map[string]bool{}
	for _, u := range r.h.Scan(nbdb.LogicalRouterPortTable, nil) {
		if p, ok := r.h.Row(nbdb.LogicalRouterPortTable, u).(*nbdb.LogicalRouterPort); ok && r.owner.Owns(p.ExternalIDs, p) {
			owned[p.Name] = true
		}
	}
	return func(name string) bool {
		return owned[name] || r.h.Inserted(nbdb.LogicalRouterPortTable, name) != ""
	}
}
