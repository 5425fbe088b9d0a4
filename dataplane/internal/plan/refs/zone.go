package refs

import (
	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
)

// Copp returns the UUID a router's copp column holds for the zone's COPP
// c: the existing row's, whoever wrote it (it is never updated), or the
// named UUID of its insert, planned with the meters the zone lacks and
// one band they hold (zone rows, package schema). The transactions of a
// split plan keep these inserts together (package txn), and a later one
// names the COPP by the UUID the server gave it (Chunk.Resolve).
func (r *Resolver) Copp(c *rows.Copp) (string, error) {
	if u, ok := r.copps[c.Row.Name]; ok {
		return u, nil
	}
	if u := r.zoneRow(nbdb.CoppTable, c.Row.Name); u != "" {
		r.copps[c.Row.Name] = u
		return u, nil
	}
	r.h.MarkZone(nbdb.CoppTable, c.Row.Name)
	band := ""
	for _, m := range c.Meters {
		if err := r.meter(m, c.Band, &band); err != nil {
			return "", err
		}
	}
	row := c.Row
	row.UUID = r.h.NewUUID()
	if err := r.h.Add(r.h.API().Create(&row)); err != nil {
		return "", err
	}
	r.copps[c.Row.Name] = row.UUID
	return row.UUID, nil
}

// zoneRow returns the UUID of a zone table's row by name ("" none).
func (r *Resolver) zoneRow(table, name string) string {
	for _, u := range r.h.Scan(table, []string{name}) {
		if m := r.h.Row(table, u); m != nil {
			if _, _, n, _ := schema.RowFields(table, m); n == name {
				return u
			}
		}
	}
	return ""
}

// Meters plans the zone meters a piece's ACLs name (rows.ZoneMeter): each
// missing one is inserted with a band of its own.
func (r *Resolver) Meters(ms []rows.ZoneMeter) error {
	for _, m := range ms {
		band := ""
		if err := r.meter(m.Row, m.Band, &band); err != nil {
			return err
		}
	}
	return nil
}

// meter inserts a zone meter that neither the database nor the plan holds,
// holding the band *band names (inserted first, when "", and named there).
func (r *Resolver) meter(m nbdb.Meter, b nbdb.MeterBand, band *string) error {
	if r.zoneRow(nbdb.MeterTable, m.Name) != "" || r.h.Inserted(nbdb.MeterTable, m.Name) != "" {
		return nil
	}
	r.h.MarkZone(nbdb.MeterTable, m.Name)
	if *band == "" {
		b.UUID = r.h.NewUUID()
		*band = b.UUID
		if err := r.h.Add(r.h.API().Create(&b)); err != nil {
			return err
		}
	}
	m.UUID, m.Bands = r.h.NewUUID(), []string{*band}
	r.h.NoteInserted(nbdb.MeterTable, m.Name, m.UUID)
	return r.h.Add(r.h.API().Create(&m))
}
