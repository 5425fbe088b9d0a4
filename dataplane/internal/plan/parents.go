package plan

import (
	"errors"
	"reflect"
	"slices"
	"sort"

	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/index"
	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/ovnk"
)

// colMuts are the children a plan inserts into and removes from a parent's
// columns: column → [insert, remove].
type colMuts map[*[]string]*[2][]string

// desiredParent is a desired router or switch as planParents diffs it:
// children diffs the piece's children under cur (the cached row, zero when
// missing) and returns what row's columns gain and lose.
type desiredParent[T any] struct {
	row         T
	ref, shared bool
	children    func(cur, row *T, ref bool) (colMuts, error)
}

// routers plans the routers and their children.
func (p *Planner) routers(desired []rows.Router) error {
	ds := make([]desiredParent[nbdb.LogicalRouter], len(desired))
	for i := range desired {
		d := &desired[i]
		ds[i] = desiredParent[nbdb.LogicalRouter]{row: d.Row, ref: d.Ref, shared: d.Shared,
			children: func(cur, row *nbdb.LogicalRouter, ref bool) (colMuts, error) {
				mut := colMuts{}
				ins, rem, err := p.refs.LBGroupRefs("logical router", d.Row.Name, d.LoadBalancerGroups, cur.LoadBalancerGroup, ref)
				mut[&row.LoadBalancerGroup] = &[2][]string{ins, rem}
				if err == nil {
					ins, rem, err = p.refs.LBRefs("logical router", d.Row.Name, d.LoadBalancers, cur.LoadBalancer)
					mut[&row.LoadBalancer] = &[2][]string{ins, rem}
				}
				if err == nil {
					err = diffColumn(p, schema.LogicalRouterPort, cur.UUID, cur.Ports, d.Ports, &row.Ports, mut, p.portKids(d))
				}
				if err == nil {
					err = diffColumn(p, schema.LogicalRouterStaticRoute, cur.UUID, cur.StaticRoutes, d.Routes, &row.StaticRoutes, mut, nil)
				}
				if err == nil {
					err = diffColumn(p, schema.LogicalRouterPolicy, cur.UUID, cur.Policies, d.Policies, &row.Policies, mut, nil)
				}
				if err == nil {
					err = diffColumn(p, schema.NAT, cur.UUID, cur.Nat, d.NATs, &row.Nat, mut, nil)
				}
				return mut, err
			}}
		if d.Copp != nil && !d.Ref {
			u, err := p.refs.Copp(d.Copp)
			if err != nil {
				return err
			}
			ds[i].row.Copp = &u
		}
	}
	return planParents(p, schema.LogicalRouter, "logical router", ds)
}

// switches plans the switches and their ports, ACLs and QoS rules.
func (p *Planner) switches(desired []rows.Switch) error {
	ds := make([]desiredParent[nbdb.LogicalSwitch], len(desired))
	for i := range desired {
		d := &desired[i]
		ds[i] = desiredParent[nbdb.LogicalSwitch]{row: d.Row, ref: d.Ref, shared: d.Shared,
			children: func(cur, row *nbdb.LogicalSwitch, ref bool) (colMuts, error) {
				mut := colMuts{}
				ins, rem, err := p.refs.LBGroupRefs("logical switch", d.Row.Name, d.LoadBalancerGroups, cur.LoadBalancerGroup, ref)
				mut[&row.LoadBalancerGroup] = &[2][]string{ins, rem}
				if err == nil {
					ins, rem, err = p.refs.LBRefs("logical switch", d.Row.Name, d.LoadBalancers, cur.LoadBalancer)
					mut[&row.LoadBalancer] = &[2][]string{ins, rem}
				}
				if err == nil {
					var ports []nbdb.LogicalSwitchPort
					if ports, err = p.refs.PortDHCP(d); err == nil {
						err = diffColumn(p, schema.LogicalSwitchPort, cur.UUID, cur.Ports, ports, &row.Ports, mut, nil)
					}
				}
				if err == nil {
					err = diffColumn(p, schema.ACL, cur.UUID, cur.ACLs, d.ACLs, &row.ACLs, mut, nil)
				}
				if err == nil {
					err = diffColumn(p, schema.QoS, cur.UUID, cur.QOSRules, d.QoS, &row.QOSRules, mut, nil)
				}
				return mut, err
			}}
	}
	return planParents(p, schema.LogicalSwitch, "logical switch", ds)
}

// diffColumn diffs one column of children (children, with kids for their
// own children) and notes in mut what the parent's column col gains and
// loses.
func diffColumn[T any, PT interface {
	*T
	model.Model
}](p *Planner, sp schema.Spec[T], parent string, current []string, desired []T, col *[]string, mut colMuts, kids kids[T]) error {
	ins, rem, err := children[T, PT](p, sp, parent, current, desired, kids)
	if err != nil {
		return err
	}
	mut[col] = &[2][]string{ins, rem}
	return nil
}

// portKids plans a desired router port's gateway chassis (d.GatewayChassis
// by the port's name): a port the plan inserts holds the ones inserted
// with it; an existing port's column is mutated by what the diff of its
// cached children (the index's links) adds and removes.
func (p *Planner) portKids(d *rows.Router) kids[nbdb.LogicalRouterPort] {
	return func(port *nbdb.LogicalRouterPort, uuid string) error {
		want := d.GatewayChassis[port.Name]
		var current []string
		if uuid != "" {
			current = p.links.Children(uuid, parentColumns[nbdb.GatewayChassisTable][1])
		}
		if len(want) == 0 && len(current) == 0 {
			port.GatewayChassis = nil
			return nil
		}
		ins, rem, err := children[nbdb.GatewayChassis, *nbdb.GatewayChassis](p, schema.GatewayChassis, uuid, current, want, nil)
		if err != nil {
			return err
		}
		if uuid == "" {
			port.GatewayChassis = ins
			return nil
		}
		row := &nbdb.LogicalRouterPort{UUID: uuid}
		var mutations []model.Mutation
		if len(rem) > 0 {
			mutations = append(mutations, model.Mutation{Field: &row.GatewayChassis, Mutator: ovsdb.MutateOperationDelete, Value: rem})
		}
		if len(ins) > 0 {
			mutations = append(mutations, model.Mutation{Field: &row.GatewayChassis, Mutator: ovsdb.MutateOperationInsert, Value: ins})
		}
		if len(mutations) == 0 {
			return nil
		}
		return p.mutate(row, row, mutations)
	}
}

// planParents plans the routers or switches (sp's table) of a piece: the
// desired ones and their children, then the piece's rows on the others.
func planParents[T any, PT interface {
	*T
	model.Model
}](p *Planner, sp schema.Spec[T], kind string, desired []desiredParent[T]) error {
	current, byName, err := currentParents[T, PT](p, sp, desired)
	if err != nil {
		return err
	}
	wanted := map[string]bool{}
	for i := range desired {
		d := &desired[i]
		name := sp.Key(&d.row)
		wanted[name] = true
		if err := planParent[T, PT](p, sp, kind, d, byName[name]); err != nil {
			return err
		}
	}
	for _, r := range current {
		// A second row with a wanted name (Logical_Router and Logical_Switch have
		// no name index, so a race can create one) is handled like a stale row.
		if name := sp.Key((*T)(r)); wanted[name] && byName[name] == r {
			continue
		}
		if err := p.dropStale(sp.Table, r, *sp.UUID((*T)(r)), *sp.IDs((*T)(r))); err != nil {
			return err
		}
	}
	return nil
}

// currentParents returns the cached routers or switches the plan looks at
// (with their children, from the index's links), and by name the one
// udnkit works on (see preferred).
func currentParents[T any, PT interface {
	*T
	model.Model
}](p *Planner, sp schema.Spec[T], desired []desiredParent[T]) ([]PT, map[string]PT, error) {
	names := make([]string, len(desired))
	for i := range desired {
		names[i] = sp.Key(&desired[i].row)
	}
	byName := map[string]PT{}
	var current []PT
	for _, r := range rowsOf[T, PT](p, sp.Table, names) {
		r = withChildren(p.links, sp.Table, r)
		current = append(current, r)
		name := sp.Key((*T)(r))
		prev, dup := byName[name]
		if dup && p.unsure() {
			return nil, nil, errUnlinked
		}
		if !dup || preferred(p.owner, *sp.IDs((*T)(prev)), *sp.IDs((*T)(r)), prev, r,
			schema.ChildCount(sp.Table, prev), schema.ChildCount(sp.Table, r)) {
			byName[name] = r
		}
	}
	return current, byName, nil
}

// planParent plans one desired router or switch (ex: its cached row, nil
// when missing) and its children.
func planParent[T any, PT interface {
	*T
	model.Model
}](p *Planner, sp schema.Spec[T], kind string, d *desiredParent[T], ex PT) error {
	exists := ex != nil
	ref, err := p.reference(kind, sp.Key(&d.row), d.ref, d.shared, exists, exists && p.owner.Owns(*sp.IDs((*T)(ex)), ex))
	if foreign := (*rows.ForeignRowError)(nil); errors.As(err, &foreign) {
		foreign.RowNetwork = (*sp.IDs((*T)(ex)))[ovnk.ExternalIDNetwork]
	}
	if err != nil {
		return err
	}
	var cur T
	if exists {
		cur = *ex
	}
	row := d.row
	markShared(sp.IDs(&row), d.shared)
	mut, err := d.children(&cur, &row, ref)
	if err != nil {
		return err
	}
	return p.parent(ex, PT(&row), ref, sp.IDs(&row), sp.Fields(&row, nil), mut,
		func() []any { return sp.Fields((*T)(ex), nil) })
}

// dropStale plans a router or switch the piece no longer wants: deleted
// when it is the piece's (its children are garbage-collected with it) and
// no other piece's rows keep it (keepShared), otherwise only the piece's
// children are taken out of it.
func (p *Planner) dropStale(table string, m model.Model, uuid string, ids map[string]string) error {
	cols := p.childColumns(table, m)
	if ids[ovnk.ExternalIDShared] == "true" && p.unsure() {
		return errUnlinked
	}
	owned := p.owner.Owns(ids, m)
	if owned && !keepShared(ids, cols) || lastOnShared(p.owner, ids, cols) {
		p.Gone = append(p.Gone, index.RowRef{Table: table, UUID: uuid})
		return p.add(p.api.Where(m).Delete())
	}
	if !owned && ids[ovnk.ExternalIDPiece] != "" {
		// Another udnkit piece's group holding this piece's ports as
		// members (a policy's group naming the pods piece's ports) keeps
		// them: that piece plans its group's members, and a member leaves
		// by itself when its port is deleted (weak reference). Only a
		// group no udnkit piece plans loses the members this piece put in.
		cols = slices.DeleteFunc(cols, func(c childColumn) bool { return c.member })
	}
	return p.dropChildren(m, cols)
}

// childColumns lists a parent row's columns of children (package schema)
// with the piece's ownership of each child.
func (p *Planner) childColumns(table string, m model.Model) []childColumn {
	kids := schema.ChildTables(table)
	cols := make([]childColumn, 0, len(kids))
	for _, c := range kids {
		cols = append(cols, childColumn{col: c.In(m), table: c.Name, owned: p.ownedIn(c.Name), none: p.noneIn(c.Name)})
	}
	for _, mc := range schema.Lookup(table).Members {
		cols = append(cols, childColumn{col: mc.In(m), table: mc.Table, owned: p.ownedIn(mc.Table), none: p.noneIn(mc.Table), member: true})
	}
	return cols
}

// unsure says whether a decision that needs every child of a parent must
// wait until the parent of every child is known.
func (p *Planner) unsure() bool {
	return p.strict && p.links.Unsure()
}

func markShared(ids *map[string]string, shared bool) {
	if !shared {
		return
	}
	m := make(map[string]string, len(*ids)+1)
	for k, v := range *ids {
		m[k] = v
	}
	m[ovnk.ExternalIDShared] = "true"
	*ids = m
}

// keepShared says whether an owned Shared router or switch that its piece no
// longer wants must stay because other pieces still have rows on it: then
// only the piece's own rows go, and the row itself goes with the last
// piece to leave it (lastOnShared).
func keepShared(ids map[string]string, cols []childColumn) bool {
	return ids[ovnk.ExternalIDShared] == "true" && !onlyOwned(cols)
}

// lastOnShared says whether a Shared router or switch another udnkit piece
// of the same network created holds only this piece's rows, which it is
// taking out: the last piece to leave takes the bare row with it (its
// creator, gone before, never applies again). A creator still wanting it
// writes it again on its next Apply.
func lastOnShared(owner rows.Owner, ids map[string]string, cols []childColumn) bool {
	return ids[ovnk.ExternalIDShared] == "true" && ids[ovnk.ExternalIDPiece] != "" &&
		ids[ovnk.ExternalIDNetwork] == owner.Network && hasChildren(cols) && onlyOwned(cols)
}

// hasChildren says whether cols hold any child: a piece with none on a
// shared row is not leaving it (a row another piece just created, still
// bare, is not this piece's to take).
func hasChildren(cols []childColumn) bool {
	for _, c := range cols {
		if len(*c.col) > 0 {
			return true
		}
	}
	return false
}

// onlyOwned says whether every child in cols is the piece's.
func onlyOwned(cols []childColumn) bool {
	for _, c := range cols {
		if c.none && len(*c.col) > 0 {
			return false
		}
		for _, u := range *c.col {
			if !c.owned(u) {
				return false
			}
		}
	}
	return true
}

// reference says whether a desired router or switch is handled as another's
// (only this piece's children are managed), or fails: a Ref must exist; a
// Shared one that exists but is foreign is referenced; any other that exists
// must be this piece's.
func (p *Planner) reference(kind, name string, ref, shared, exists, owned bool) (bool, error) {
	switch {
	case ref && !exists:
		return false, &rows.MissingRowError{Kind: kind, Name: name}
	case shared && exists && !owned:
		return true, nil
	case !ref && exists && !owned:
		return false, &rows.ForeignRowError{Kind: kind, Name: name, Owner: p.owner}
	}
	return ref, nil
}

// preferred says whether a second row with the same name should replace the
// first as the one udnkit works on: an owned row beats a foreign one, then the
// row with more children wins (the other is the leftover of a race).
func preferred(owner rows.Owner, prevIDs, nextIDs map[string]string, prev, next any, prevSize, nextSize int) bool {
	if owner.Owns(prevIDs, prev) != owner.Owns(nextIDs, next) {
		return owner.Owns(nextIDs, next)
	}
	return nextSize > prevSize
}

// parent creates a missing parent with its new children, or updates an
// existing one's managed columns and mutates its child columns.
func (p *Planner) parent(ex, row model.Model, ref bool, ids *map[string]string, fields []any,
	mut colMuts, exFields func() []any) error {
	p.stamp(ids)
	if reflect.ValueOf(ex).IsNil() {
		for col, m := range mut {
			*col = m[0]
		}
		return p.add(p.api.Create(row))
	}
	if !ref && !schema.SameFields(fields, exFields()) {
		if err := p.add(p.api.Where(ex).Update(row, fields...)); err != nil {
			return err
		}
	}
	var mutations []model.Mutation
	cols := make([]*[]string, 0, len(mut))
	for col := range mut {
		cols = append(cols, col)
	}
	// A stable order keeps the plan deterministic.
	sort.Slice(cols, func(i, j int) bool { return reflect.ValueOf(cols[i]).Pointer() < reflect.ValueOf(cols[j]).Pointer() })
	for _, col := range cols {
		m := mut[col]
		if len(m[1]) > 0 {
			mutations = append(mutations, model.Mutation{Field: col, Mutator: ovsdb.MutateOperationDelete, Value: m[1]})
		}
		if len(m[0]) > 0 {
			mutations = append(mutations, model.Mutation{Field: col, Mutator: ovsdb.MutateOperationInsert, Value: m[0]})
		}
	}
	if len(mutations) == 0 {
		return nil
	}
	return p.mutate(ex, row, mutations)
}

type childColumn struct {
	col   *[]string
	table string
	owned func(uuid string) bool
	// none: the piece has no row in table (noneIn), so owned is false
	// for every child and the column is not read.
	none bool
	// member: a column of members (schema.Table.Members), whose rows stay
	// when taken out.
	member bool
}

// dropChildren removes this piece's children from a parent it does not own.
func (p *Planner) dropChildren(parent model.Model, cols []childColumn) error {
	var mutations []model.Mutation
	for _, c := range cols {
		if c.none {
			continue
		}
		var drop []string
		for _, u := range *c.col {
			if c.owned(u) {
				drop = append(drop, u)
				if !c.member {
					p.Gone = append(p.Gone, index.RowRef{Table: c.table, UUID: u})
				}
			}
		}
		if len(drop) > 0 {
			mutations = append(mutations, model.Mutation{Field: c.col, Mutator: ovsdb.MutateOperationDelete, Value: drop})
		}
	}
	if len(mutations) == 0 {
		return nil
	}
	return p.mutate(parent, parent, mutations)
}

// ownedIn says whether a child row of table is the piece's: none when
// the index counts no row of the piece in table (noneIn).
func (p *Planner) ownedIn(table string) func(string) bool {
	if p.noneIn(table) {
		return func(string) bool { return false }
	}
	return func(u string) bool {
		m := p.row(table, u)
		if m == nil {
			return false
		}
		_, ids, _, _ := schema.RowFields(table, m)
		return p.owner.Owns(ids, m)
	}
}

// noneIn says whether the index, which the plan reads, holds no row of the
// piece in table (index.HasNetwork), so that a parent the piece does not
// want is left without reading its children (a piece without routers met
// every router of its network, and read each one's ports, routes and
// policies, at every plan). Owns takes only rows with the piece's network,
// topology and piece, which the index counts, unless it adopts rows
// without them (AdoptLegacy). A full diff (no index) reads every row.
func (p *Planner) noneIn(table string) bool {
	o := p.owner
	if t := schema.Lookup(table); p.ix == nil || o.Network == "" || o.AdoptLegacy || t == nil || !t.Indexed {
		return false
	}
	return !p.ix.HasNetwork(o.Topology, o.Piece, o.Network, table)
}

// withChildren returns a copy of a cached router or switch with its
// columns of children.
func withChildren[T any, PT interface {
	*T
	model.Model
}](ix *index.Index, table string, m PT) PT {
	c := PT(new(T))
	*c = *m
	ix.Fill(table, c)
	return c
}

// errUnlinked is what a plan returns when a decision needs every child of a
// parent (whether a shared router still holds another's rows, which of two
// routers of one name to keep) while some child's parent is unknown.
var errUnlinked = errors.New("some children's parents are not known yet")

// parentColumns: child table → its parent table and column (package schema).
var parentColumns = schema.ParentColumns()
