package plan

import (
	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
)

// copp returns the UUID a router's copp column holds for the zone's COPP
// c: the existing row's, whoever wrote it (it is never updated), or the
// named UUID of its insert, planned with the meters the zone lacks and
// one band they hold (zone rows, package schema). The transactions of a
// split plan keep these inserts together (package txn), and a later one
// names the COPP by the UUID the server gave it (Chunk.Resolve).
func (p *Planner) copp(c *rows.Copp) (string, error) {
	if u, ok := p.copps[c.Row.Name]; ok {
		return u, nil
	}
	if u := p.zoneRow(nbdb.CoppTable, c.Row.Name); u != "" {
		p.copps[c.Row.Name] = u
		return u, nil
	}
	p.Zone = true
	band := ""
	for _, m := range c.Meters {
		if err := p.meter(m, c.Band, &band); err != nil {
			return "", err
		}
	}
	row := c.Row
	row.UUID = p.name()
	if err := p.add(p.api.Create(&row)); err != nil {
		return "", err
	}
	p.copps[c.Row.Name] = row.UUID
	return row.UUID, nil
}

// zoneRow returns the UUID of a zone table's row by name ("" none).
func (p *Planner) zoneRow(table, name string) string {
	for _, u := range p.scan(table, []string{name}, false) {
		if m := p.row(table, u); m != nil {
			if _, _, n, _ := schema.RowFields(table, m); n == name {
				return u
			}
		}
	}
	return ""
}

// meters plans the zone meters a piece's ACLs name (rows.ZoneMeter): each
// missing one is inserted with a band of its own.
func (p *Planner) meters(ms []rows.ZoneMeter) error {
	for _, m := range ms {
		band := ""
		if err := p.meter(m.Row, m.Band, &band); err != nil {
			return err
		}
	}
	return nil
}

// meter inserts a zone meter that neither the database nor the plan holds,
// holding the band *band names (inserted first, when "", and named there).
func (p *Planner) meter(m nbdb.Meter, b nbdb.MeterBand, band *string) error {
	if p.zoneRow(nbdb.MeterTable, m.Name) != "" || p.inserted[[2]string{nbdb.MeterTable, m.Name}] != "" {
		return nil
	}
	p.Zone = true
	if *band == "" {
		b.UUID = p.name()
		*band = b.UUID
		if err := p.add(p.api.Create(&b)); err != nil {
			return err
		}
	}
	m.UUID, m.Bands = p.name(), []string{*band}
	if p.inserted == nil {
		p.inserted = map[[2]string]string{}
	}
	p.inserted[[2]string{nbdb.MeterTable, m.Name}] = m.UUID
	return p.add(p.api.Create(&m))
}
