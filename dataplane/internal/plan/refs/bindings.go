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
	current := map[string]*nbdb.StaticMACBinding{}
	var gone []string
	rows := r.h.Rows(sp.Table)
	for _, u := range slices.Sorted(maps.Keys(rows)) {
		b := rows[u].(*nbdb.StaticMACBinding)
		if !r.ownsRouterPort(b.LogicalPort) {
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
		if !r.ownsRouterPort(d.LogicalPort) {
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

// ownsRouterPort says whether a router port, by name, is the piece's: one
// the plan inserts or a cached one the piece owns.
func (r *Resolver) ownsRouterPort(name string) bool {
	if r.h.Inserted(nbdb.LogicalRouterPortTable, name) != "" {
		return true
	}
	_, m, err := r.h.API().Cache().Table(nbdb.LogicalRouterPortTable).RowByModel(&nbdb.LogicalRouterPort{Name: name})
	if err != nil || m == nil {
		return false
	}
	return r.owner.Owns(m.(*nbdb.LogicalRouterPort).ExternalIDs, m)
}
