package dataplane

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"sync"

	"github.com/ovn-kubernetes/libovsdb/cache"
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/index"
	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
)

// planner accumulates the operations of one transaction.
type planner struct {
	api   client.Client
	owner Owner
	ops   []ovsdb.Operation
	named int
	// ix, when set, is where the plan reads the cached rows (read-locked);
	// otherwise tables holds the snapshots of whole tables it read.
	ix     *index.Index
	caches map[string]*cache.RowCache // the cache's tables, with ix
	tables map[string]map[string]model.Model
	// links is the index whose links give the routers' and switches'
	// children (read-locked), with or without ix; strict makes a decision
	// that needs every child of a parent fail with errUnlinked while some
	// child's parent is not known.
	links  *index.Index
	strict bool
	// ownerIDs is the owner's external_ids, shared read-only by the desired
	// rows that have no other external_ids.
	ownerIDs map[string]string
	// gone are the rows the plan deletes or unreferences (garbage-collected).
	gone []index.RowRef
	// memo, when set, remembers the keys of the owner's cached rows between plans.
	memo *keyMemo
	// want and have hold the columns of the two rows being compared.
	want, have [8]any
}

// keyMemo remembers, by the cached model's pointer, whether a cached row is
// the owner's and its identity key. libovsdb replaces a cached model with a
// new one whenever its row changes (and refills the cache with new models
// after a reconnect) and never modifies one in place, so a pointer seen again
// is the same row content and what was computed from it still holds: the memo
// only saves work (the route and NAT keys are built strings, and every owned
// child of a network's routers is keyed on every Apply), it never changes a
// plan.
type keyMemo struct {
	rows map[model.Model]memoRow
	// used counts this plan's lookups, to forget the models the cache dropped.
	used int
	// hits counts the lookups answered from memory (tests).
	hits int
	// ids is the owner's external_ids map the plans share, so that desired
	// rows stamped by an earlier plan are recognised as stamped by the map.
	ids map[string]string
	// cols remembers the parents' columns of children (colmemo.go);
	// colHits counts the columns brought up to date rather than read
	// afresh (tests).
	cols    map[index.ColKey]*columnMemo
	colHits int
	// fpHits counts the desired rows not compared (fingerprint matched).
	fpHits int
	// idsFP is the fingerprint of ids.
	idsFP uint64
}

type memoRow struct {
	key   string
	owned bool
	// ownerIDs: the row's external_ids are exactly the owner's (as most
	// desired rows' are), so comparing them with a desired row's that are
	// the planner's shared ownerIDs map needs no map comparison.
	ownerIDs bool
}

// keyMemos holds one keyMemo per owner (network, topology and piece).
type keyMemos struct {
	mu sync.Mutex
	// off makes every plan a plain full diff (benchmark baselines, tests).
	off   bool
	memos map[[3]string]*keyMemo
}

func (k *keyMemos) get(o Owner) *keyMemo {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.off {
		return nil
	}
	key := [3]string{o.Network, o.Topology, o.Piece}
	if k.memos == nil {
		k.memos = map[[3]string]*keyMemo{}
	}
	m := k.memos[key]
	if m == nil {
		m = &keyMemo{rows: map[model.Model]memoRow{}}
		k.memos[key] = m
	}
	return m
}

// drop forgets an owner's memo.
func (k *keyMemos) drop(o Owner) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.memos, [3]string{o.Network, o.Topology, o.Piece})
}

// reset forgets every memo; with off, later plans do not memoise.
func (k *keyMemos) reset(off bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.memos, k.off = nil, off
}

// memoKey says whether a cached child row is the owner's, with its key.
// Ownership is remembered only when it does not depend on the owner's
// AdoptLegacy and Legacy (Owner.settled).
func memoKey[T any](p *planner, m model.Model, sp schema.Spec[T], row *T) memoRow {
	if p.memo != nil {
		p.memo.used++
		if r, ok := p.memo.rows[m]; ok {
			p.memo.hits++
			return r
		}
	}
	r := ownedKey(p, m, sp, row)
	if r.owned && p.memo != nil && p.owner.Settled(*sp.IDs(row)) {
		p.memo.rows[m] = r
	}
	return r
}

// ownedKey is memoKey without the memo.
func ownedKey[T any](p *planner, m model.Model, sp schema.Spec[T], row *T) memoRow {
	ids := *sp.IDs(row)
	if !p.owner.Owns(ids, m) {
		return memoRow{}
	}
	return memoRow{key: sp.Key(row), owned: true, ownerIDs: maps.Equal(ids, p.sharedIDs())}
}

// prune forgets every key when most of them are of models the cache no
// longer holds (they are computed again when next needed).
func (m *keyMemo) prune() {
	if len(m.rows) > 2*m.used+1024 {
		m.rows = map[model.Model]memoRow{}
	}
	m.used = 0
	// And the columns the plan did not read (their parent is gone).
	for k, c := range m.cols {
		if !c.used {
			delete(m.cols, k)
		}
		c.used = false
	}
}

// mutate mutates the columns of one cached row, found by its UUID (the
// condition libovsdb's Where(row) builds too). Where(row) looks the row up in
// the cache and clones it through JSON, which for a transit router with
// thousands of ports and routes costs milliseconds on every Apply that adds
// or removes a node.
func (p *planner) mutate(target, row model.Model, mutations []model.Mutation) error {
	dbModel := p.api.Cache().DatabaseModel()
	table := dbModel.FindTable(reflect.TypeOf(row))
	at, err := dbModel.NewModelInfo(target)
	if err != nil {
		return err
	}
	where, err := dbModel.Mapper.NewEqualityCondition(at)
	if err != nil {
		return err
	}
	info, err := dbModel.NewModelInfo(row)
	if err != nil {
		return err
	}
	op := ovsdb.Operation{Op: ovsdb.OperationMutate, Table: table, Where: where}
	for _, m := range mutations {
		column, err := info.ColumnByPtr(m.Field)
		if err != nil {
			return err
		}
		mut, err := dbModel.Mapper.NewMutation(info, column, m.Mutator, m.Value)
		if err != nil {
			return err
		}
		op.Mutations = append(op.Mutations, *mut)
	}
	p.ops = append(p.ops, op)
	return nil
}

// row returns a cached row (read-only) by UUID, nil when there is none.
func (p *planner) row(table, uuid string) model.Model {
	if p.ix != nil {
		if p.caches == nil {
			p.caches = map[string]*cache.RowCache{}
		}
		rc, ok := p.caches[table]
		if !ok {
			rc = p.api.Cache().Table(table)
			p.caches[table] = rc
		}
		return p.ix.Row(rc, table, uuid)
	}
	return p.rows(table)[uuid]
}

// scan returns, in UUID order, the rows of a root table the plan looks at:
// with the index, the owner's and those that may matter to it (see
// rowIndex.scan); without it (a full diff), every row.
func (p *planner) scan(table string, names []string, parents bool) []string {
	if p.ix != nil {
		return p.ix.Scan(table, p.owner.Network, names, parents)
	}
	rows := p.rows(table)
	uuids := make([]string, 0, len(rows))
	for u := range rows {
		uuids = append(uuids, u)
	}
	sort.Strings(uuids)
	return uuids
}

// rows returns a read-only snapshot of a cached table by UUID.
func (p *planner) rows(table string) map[string]model.Model {
	if t, ok := p.tables[table]; ok {
		return t
	}
	var m map[string]model.Model
	if t := p.api.Cache().Table(table); t != nil {
		m = t.RowsShallow()
	}
	if p.tables == nil {
		p.tables = map[string]map[string]model.Model{}
	}
	p.tables[table] = m
	return m
}

// newPlan plans an Apply of d against the client's index with the owner's
// key memo (under the network's lock, which Apply holds).
func (c *Client) newPlan(d *Desired) (*planner, error) {
	if len(d.Routers)+len(d.Switches)+len(d.DHCPOptions)+len(d.AddressSets) == 0 {
		// The piece goes away (its network was deleted): so does its memo.
		c.memos.drop(d.Owner)
		return c.indexPlan(d, nil)
	}
	memo := c.memos.get(d.Owner)
	p, err := c.indexPlan(d, memo)
	if memo != nil {
		memo.prune()
	}
	return p, err
}

// indexPlan plans d against the client's index.
func (c *Client) indexPlan(d *Desired, memo *keyMemo) (*planner, error) {
	return c.planAgainst(d, memo, true)
}

// fullPlan is the full diff of d against the client's cache (every row of
// the tables read, no memo), with the index's links.
func (c *Client) fullPlan(d *Desired) (*planner, error) {
	return c.planAgainst(d, nil, false)
}

// planAgainst plans d once the index knows the parents of the network's
// children (those another client inserted are looked up first), and of
// every child when the plan needs it (errUnlinked).
func (c *Client) planAgainst(d *Desired, memo *keyMemo, indexed bool) (*planner, error) {
	lookedUp := map[string]bool{}
	network := d.Owner.Network
	for {
		unlock := c.index.Read(c.NB)
		if !c.index.Built() {
			unlock()
			return nil, fmt.Errorf("the OVN database %s is not connected yet", c.NB.CurrentEndpoint())
		}
		if !lookedUp[network] {
			lookedUp[network] = true
			if children := c.index.Unlinked(network); len(children) > 0 {
				unlock()
				if err := c.index.LookUp(c.NB, children); err != nil {
					return nil, err
				}
				continue
			}
		}
		var ix *index.Index
		if indexed {
			ix = c.index
		}
		p, err := newPlanWith(c.NB, d, memo, ix, c.index, network != "")
		unlock()
		if errors.Is(err, errUnlinked) {
			network = "" // every child's
			continue
		}
		return p, err
	}
}

func newPlanWith(api client.Client, d *Desired, memo *keyMemo, ix, links *index.Index, strict bool) (*planner, error) {
	p := &planner{api: api, owner: d.Owner, memo: memo, ix: ix, links: links, strict: strict}
	if memo != nil {
		if memo.ids == nil {
			memo.ids = d.Owner.IDs()
		}
		p.ownerIDs = memo.ids
	}
	if err := p.routers(d.Routers); err != nil {
		return nil, err
	}
	if err := p.switches(d.Switches); err != nil {
		return nil, err
	}
	if err := roots(p, schema.DHCPOptions, d.DHCPOptions); err != nil {
		return nil, err
	}
	if err := roots(p, schema.AddressSet, d.AddressSets); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *planner) name() string {
	p.named++
	return "udnkit" + strconv.Itoa(p.named)
}

func (p *planner) add(ops []ovsdb.Operation, err error) error {
	if err != nil {
		return err
	}
	p.ops = append(p.ops, ops...)
	return nil
}

// rowsOf returns the cached rows of a root table the plan looks at (see
// scan), in UUID order.
func rowsOf[T any, PT interface {
	*T
	model.Model
}](p *planner, table string, names []string) []PT {
	uuids := p.scan(table, names, true)
	out := make([]PT, 0, len(uuids))
	for _, u := range uuids {
		if m := p.row(table, u); m != nil { // nil: deleted since the index saw it
			out = append(out, m.(PT))
		}
	}
	return out
}

// children diffs the desired child rows against the parent's current children
// (in its column: parentColumns) that this piece owns; it emits creates and updates and
// returns the named UUIDs to insert into the parent's column and the UUIDs
// to remove from it. parent is "" for a root table's rows (current: every
// row the plan looks at).
func children[T any, PT interface {
	*T
	model.Model
}](p *planner, sp schema.Spec[T], parent string, current []string, desired []T) (insert, remove []string, err error) {
	if cm := column[T, PT](p, sp, parent, current); cm != nil {
		ops := len(p.ops)
		insert, remove, err := rememberedChildren[T, PT](p, sp, cm, desired)
		if err == nil {
			return insert, p.removing(sp.Table, remove), nil
		}
		if !errors.Is(err, errMemoBehind) {
			return nil, nil, err
		}
		p.ops = p.ops[:ops]
		delete(p.memo.cols, index.ColKey{Parent: parent, Column: parentColumns[sp.Table][1]})
	}
	type found struct {
		row      PT
		ownerIDs bool
		claimed  bool // by a desired row
	}
	existing := make(map[string]found, len(current))
	var extra []string
	for _, u := range current {
		m := p.row(sp.Table, u)
		if m == nil {
			continue
		}
		row := m.(PT)
		r := memoKey(p, m, sp, (*T)(row))
		if !r.owned {
			continue
		}
		if prev, dup := existing[r.key]; dup {
			// Duplicates (e.g. written by a racing writer) heal: the row with
			// the smallest UUID survives, whatever the column's order.
			if pu := *sp.UUID((*T)(prev.row)); u < pu {
				existing[r.key], u = found{row: row, ownerIDs: r.ownerIDs}, pu
			}
			extra = append(extra, u)
			continue
		}
		existing[r.key] = found{row: row, ownerIDs: r.ownerIDs}
	}
	var created map[string]bool
	for i := range desired {
		d := &desired[i]
		k := sp.Key(d)
		ex, ok := existing[k]
		if ok && ex.claimed || !ok && created[k] {
			return nil, nil, duplicateRows(sp.Table, k)
		}
		shared := p.stamp(sp.IDs(d))
		if !ok {
			u, err := createChild[T, PT](p, sp, d, k, &created)
			if err != nil {
				return nil, nil, err
			}
			insert = append(insert, u)
			continue
		}
		ex.claimed = true
		existing[k] = ex
		if _, err := updateChild(p, sp, d, ex.row, shared, ex.ownerIDs); err != nil {
			return nil, nil, err
		}
	}
	for _, f := range existing {
		if !f.claimed {
			remove = append(remove, *sp.UUID((*T)(f.row)))
		}
	}
	return insert, p.removing(sp.Table, append(remove, extra...)), nil
}

// removing sorts the children a plan takes out of their parent's column
// and notes them gone (Apply waits until the cache shows them deleted).
func (p *planner) removing(table string, uuids []string) []string {
	slices.Sort(uuids)
	for _, u := range uuids {
		p.gone = append(p.gone, index.RowRef{Table: table, UUID: u})
	}
	return uuids
}

// duplicateRows is the refusal of two desired rows with one identity.
func duplicateRows(table, key string) error {
	return fmt.Errorf("desired rows: two %s rows with the same identity %q", table, key)
}

// createChild emits the insert of a desired child and returns its named UUID.
func createChild[T any, PT interface {
	*T
	model.Model
}](p *planner, sp schema.Spec[T], d *T, k string, created *map[string]bool) (string, error) {
	if *created == nil {
		*created = map[string]bool{}
	}
	(*created)[k] = true
	u := p.name()
	*sp.UUID(d) = u
	return u, p.add(p.api.Create(PT(d)))
}

// updateChild compares a desired child with its cached row and emits an
// update when they differ; same says they did not. stamped and ownerIDs say
// the desired and the cached external_ids are exactly the owner's.
func updateChild[T any, PT interface {
	*T
	model.Model
}](p *planner, sp schema.Spec[T], d *T, row PT, stamped, ownerIDs bool) (same bool, err error) {
	want, have := sp.Fields(d, p.want[:0]), sp.Fields((*T)(row), p.have[:0])
	if stamped && ownerIDs && want[0] == any(sp.IDs(d)) {
		// Both external_ids are exactly the owner's: compare the rest.
		want, have = want[1:], have[1:]
	}
	if schema.SameFields(want, have) {
		return true, nil
	}
	return false, p.add(p.api.Where(row).Update(PT(d), sp.Fields(d, nil)...))
}

// stamp adds the owner's external_ids to a desired row's. Rows with no
// external_ids of their own (most of them) share one read-only map.
func (p *planner) stamp(ids *map[string]string) (shared bool) {
	if len(*ids) == 0 || schema.SameMap(*ids, p.sharedIDs()) {
		*ids = p.sharedIDs()
		return true
	}
	stamped := true
	for k, v := range p.ownerIDs {
		if w, ok := (*ids)[k]; !ok || w != v {
			stamped = false
			break
		}
	}
	if stamped {
		// Stamped by an earlier plan of the same desired rows.
		if len(*ids) == len(p.ownerIDs) {
			*ids = p.ownerIDs
			return true
		}
		return false
	}
	m := make(map[string]string, len(*ids)+3)
	for k, v := range *ids {
		m[k] = v
	}
	for k, v := range p.ownerIDs {
		m[k] = v
	}
	*ids = m
	return false
}

// sharedIDs is the owner's external_ids, shared read-only by the desired
// rows that have no other external_ids.
func (p *planner) sharedIDs() map[string]string {
	if p.ownerIDs == nil {
		p.ownerIDs = p.owner.IDs()
	}
	return p.ownerIDs
}

// roots diffs rows of a root table (kept until deleted) that this piece owns.
func roots[T any, PT interface {
	*T
	model.Model
}](p *planner, sp schema.Spec[T], desired []T) error {
	_, remove, err := children[T, PT](p, sp, "", p.scan(sp.Table, nil, false), desired)
	if err != nil {
		return err
	}
	for _, u := range remove {
		row := PT(new(T))
		*sp.UUID((*T)(row)) = u
		if err := p.add(p.api.Where(row).Delete()); err != nil {
			return err
		}
	}
	return nil
}

// colMuts are the children a plan inserts into and removes from a parent's
// columns: column → [insert, remove].
type colMuts map[*[]string]*[2][]string

// desiredParent is a desired router or switch as planParents diffs it:
// children diffs the piece's children under cur (the cached row, zero when
// missing) and returns what row's columns gain and lose.
type desiredParent[T any] struct {
	row         T
	ref, shared bool
	children    func(cur, row *T) (colMuts, error)
}

// routers plans the routers and their children.
func (p *planner) routers(desired []Router) error {
	ds := make([]desiredParent[nbdb.LogicalRouter], len(desired))
	for i := range desired {
		d := &desired[i]
		ds[i] = desiredParent[nbdb.LogicalRouter]{row: d.Row, ref: d.Ref, shared: d.Shared,
			children: func(cur, row *nbdb.LogicalRouter) (colMuts, error) {
				mut := colMuts{}
				err := diffColumn(p, schema.LogicalRouterPort, cur.UUID, cur.Ports, d.Ports, &row.Ports, mut)
				if err == nil {
					err = diffColumn(p, schema.LogicalRouterStaticRoute, cur.UUID, cur.StaticRoutes, d.Routes, &row.StaticRoutes, mut)
				}
				if err == nil {
					err = diffColumn(p, schema.LogicalRouterPolicy, cur.UUID, cur.Policies, d.Policies, &row.Policies, mut)
				}
				if err == nil {
					err = diffColumn(p, schema.NAT, cur.UUID, cur.Nat, d.NATs, &row.Nat, mut)
				}
				return mut, err
			}}
	}
	return planParents(p, schema.LogicalRouter, "logical router", ds)
}

// switches plans the switches and their ports.
func (p *planner) switches(desired []Switch) error {
	ds := make([]desiredParent[nbdb.LogicalSwitch], len(desired))
	for i := range desired {
		d := &desired[i]
		ds[i] = desiredParent[nbdb.LogicalSwitch]{row: d.Row, ref: d.Ref, shared: d.Shared,
			children: func(cur, row *nbdb.LogicalSwitch) (colMuts, error) {
				mut := colMuts{}
				return mut, diffColumn(p, schema.LogicalSwitchPort, cur.UUID, cur.Ports, d.Ports, &row.Ports, mut)
			}}
	}
	return planParents(p, schema.LogicalSwitch, "logical switch", ds)
}

// diffColumn diffs one column of children (children) and notes in mut
// what the parent's column col gains and loses.
func diffColumn[T any, PT interface {
	*T
	model.Model
}](p *planner, sp schema.Spec[T], parent string, current []string, desired []T, col *[]string, mut colMuts) error {
	ins, rem, err := children[T, PT](p, sp, parent, current, desired)
	if err != nil {
		return err
	}
	mut[col] = &[2][]string{ins, rem}
	return nil
}

// planParents plans the routers or switches (sp's table) of a piece: the
// desired ones and their children, then the piece's rows on the others.
func planParents[T any, PT interface {
	*T
	model.Model
}](p *planner, sp schema.Spec[T], kind string, desired []desiredParent[T]) error {
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
}](p *planner, sp schema.Spec[T], desired []desiredParent[T]) ([]PT, map[string]PT, error) {
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
}](p *planner, sp schema.Spec[T], kind string, d *desiredParent[T], ex PT) error {
	exists := ex != nil
	ref, err := p.reference(kind, sp.Key(&d.row), d.ref, d.shared, exists, exists && p.owner.Owns(*sp.IDs((*T)(ex)), ex))
	if foreign := (*rows.ForeignRowError)(nil); errors.As(err, &foreign) {
		foreign.RowNetwork = (*sp.IDs((*T)(ex)))[rows.ExternalIDNetwork]
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
	mut, err := d.children(&cur, &row)
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
func (p *planner) dropStale(table string, m model.Model, uuid string, ids map[string]string) error {
	cols := p.childColumns(table, m)
	if ids[ExternalIDShared] == "true" && p.unsure() {
		return errUnlinked
	}
	if p.owner.Owns(ids, m) && !keepShared(ids, cols) {
		p.gone = append(p.gone, index.RowRef{Table: table, UUID: uuid})
		return p.add(p.api.Where(m).Delete())
	}
	return p.dropChildren(m, cols)
}

// childColumns lists a parent row's columns of children (package schema)
// with the piece's ownership of each child.
func (p *planner) childColumns(table string, m model.Model) []childColumn {
	kids := schema.ChildTables(table)
	cols := make([]childColumn, 0, len(kids))
	for _, c := range kids {
		cols = append(cols, childColumn{col: c.In(m), table: c.Name, owned: p.ownedIn(c.Name)})
	}
	return cols
}

// unsure says whether a decision that needs every child of a parent must
// wait until the parent of every child is known.
func (p *planner) unsure() bool {
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
	m[ExternalIDShared] = "true"
	*ids = m
}

// keepShared says whether an owned Shared router or switch that its piece no
// longer wants must stay because other pieces still have rows on it: then
// only the piece's own rows go, and the row itself goes with a later Apply
// of the piece that finds it bare.
func keepShared(ids map[string]string, cols []childColumn) bool {
	if ids[ExternalIDShared] != "true" {
		return false
	}
	for _, c := range cols {
		for _, u := range *c.col {
			if !c.owned(u) {
				return true
			}
		}
	}
	return false
}

// reference says whether a desired router or switch is handled as another's
// (only this piece's children are managed), or fails: a Ref must exist; a
// Shared one that exists but is foreign is referenced; any other that exists
// must be this piece's.
func (p *planner) reference(kind, name string, ref, shared, exists, owned bool) (bool, error) {
	switch {
	case ref && !exists:
		return false, fmt.Errorf("%s %q not found: it is created by another piece and must exist first", kind, name)
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
func preferred(owner Owner, prevIDs, nextIDs map[string]string, prev, next any, prevSize, nextSize int) bool {
	if owner.Owns(prevIDs, prev) != owner.Owns(nextIDs, next) {
		return owner.Owns(nextIDs, next)
	}
	return nextSize > prevSize
}

// parent creates a missing parent with its new children, or updates an
// existing one's managed columns and mutates its child columns.
func (p *planner) parent(ex, row model.Model, ref bool, ids *map[string]string, fields []any,
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
}

// dropChildren removes this piece's children from a parent it does not own.
func (p *planner) dropChildren(parent model.Model, cols []childColumn) error {
	var mutations []model.Mutation
	for _, c := range cols {
		var drop []string
		for _, u := range *c.col {
			if c.owned(u) {
				drop = append(drop, u)
				p.gone = append(p.gone, index.RowRef{Table: c.table, UUID: u})
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

// ownedIn says whether a child row of table is the piece's.
func (p *planner) ownedIn(table string) func(string) bool {
	return func(u string) bool {
		m := p.row(table, u)
		if m == nil {
			return false
		}
		_, ids, _, _ := schema.RowFields(table, m)
		return p.owner.Owns(ids, m)
	}
}

func ptr[T any](v T) *T { return &v }

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
