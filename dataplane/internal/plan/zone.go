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
		if p.zoneRow(nbdb.MeterTable, m.Name) != "" {
			continue
		}
		if band == "" {
			b := c.Band
			b.UUID = p.name()
			band = b.UUID
			if err := p.add(p.api.Create(&b)); err != nil {
				return "", err
			}
		}
		m.UUID, m.Bands = p.name(), []string{band}
		if err := p.add(p.api.Create(&m)); err != nil {
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
