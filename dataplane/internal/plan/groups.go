package plan

import (
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
			children: func(cur, row *nbdb.PortGroup, ref bool) (colMuts, error) {
				mut := colMuts{}
				if err := diffColumn(p, schema.ACL, cur.UUID, cur.ACLs, d.ACLs, &row.ACLs, mut, nil); err != nil {
					return nil, err
				}
				ins, rem, err := p.refs.Members(d, cur.Ports, ref)
				mut[&row.Ports] = &[2][]string{ins, rem}
				return mut, err
			}}
	}
	return planParents(p, schema.PortGroup, "port group", ds)
}
