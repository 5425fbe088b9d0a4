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

	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// planner accumulates the operations of one transaction.
type planner struct {
	api   client.Client
	owner Owner
	ops   []ovsdb.Operation
	named int
	// ix, when set, is where the plan reads the cached rows (read-locked);
	// otherwise tables holds the snapshots of whole tables it read.
	ix     *rowIndex
	caches map[string]*cache.RowCache // the cache's tables, with ix
	tables map[string]map[string]model.Model
	// links is the index whose links give the routers' and switches'
	// children (read-locked), with or without ix; strict makes a decision
	// that needs every child of a parent fail with errUnlinked while some
	// child's parent is not known.
	links  *rowIndex
	strict bool
	// ownerIDs is the owner's external_ids, shared read-only by the desired
	// rows that have no other external_ids.
	ownerIDs map[string]string
	// gone are the rows the plan deletes or unreferences (garbage-collected).
	gone []rowRef
	// memo, when set, remembers the keys of the owner's cached rows between plans.
	memo *keyMemo
	// want and have hold the columns of the two rows being compared.
	want, have [8]any
}

// rowRef names one row.
type rowRef struct{ table, uuid string }

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
	cols    map[colKey]*columnMemo
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
func memoKey[T any](p *planner, m model.Model, sp spec[T], row *T) memoRow {
	if p.memo != nil {
		p.memo.used++
		if r, ok := p.memo.rows[m]; ok {
			p.memo.hits++
			return r
		}
	}
	r := ownedKey(p, m, sp, row)
	if r.owned && p.memo != nil && p.owner.settled(*sp.ids(row)) {
		p.memo.rows[m] = r
	}
	return r
}

// ownedKey is memoKey without the memo.
func ownedKey[T any](p *planner, m model.Model, sp spec[T], row *T) memoRow {
	ids := *sp.ids(row)
	if !p.owner.owns(ids, m) {
		return memoRow{}
	}
	return memoRow{key: sp.key(row), owned: true, ownerIDs: maps.Equal(ids, p.sharedIDs())}
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
		return p.ix.row(rc, table, uuid)
	}
	return p.rows(table)[uuid]
}

// scan returns, in UUID order, the rows of a root table the plan looks at:
// with the index, the owner's and those that may matter to it (see
// rowIndex.scan); without it (a full diff), every row.
func (p *planner) scan(table string, names []string, parents bool) []string {
	if p.ix != nil {
		return p.ix.scan(table, p.owner.Network, names, parents)
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
		unlock := c.index.read(c.NB)
		if c.index.rows == nil {
			unlock()
			return nil, fmt.Errorf("the OVN database %s is not connected yet", c.NB.CurrentEndpoint())
		}
		if !lookedUp[network] {
			lookedUp[network] = true
			if children := c.index.unlinked(network); len(children) > 0 {
				unlock()
				if err := c.index.lookUp(c.NB, children); err != nil {
					return nil, err
				}
				continue
			}
		}
		var ix *rowIndex
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

func newPlanWith(api client.Client, d *Desired, memo *keyMemo, ix, links *rowIndex, strict bool) (*planner, error) {
	p := &planner{api: api, owner: d.Owner, memo: memo, ix: ix, links: links, strict: strict}
	if memo != nil {
		if memo.ids == nil {
			memo.ids = d.Owner.ids()
		}
		p.ownerIDs = memo.ids
	}
	if err := p.routers(d.Routers); err != nil {
		return nil, err
	}
	if err := p.switches(d.Switches); err != nil {
		return nil, err
	}
	if err := roots(p, dhcpSpec, d.DHCPOptions); err != nil {
		return nil, err
	}
	if err := roots(p, addressSetSpec, d.AddressSets); err != nil {
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

// spec describes how to diff one child table.
type spec[T any] struct {
	table string
	// key identifies a row within its parent.
	key func(*T) string
	// uuid and ids give access to the row's _uuid and external_ids.
	uuid func(*T) *string
	ids  func(*T) *map[string]string
	// fields appends to buf the columns udnkit manages (compared and
	// updated), external_ids first.
	fields func(r *T, buf []any) []any
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
}](p *planner, sp spec[T], parent string, current []string, desired []T) (insert, remove []string, err error) {
	if cm := column[T, PT](p, sp, parent, current); cm != nil {
		ops := len(p.ops)
		insert, remove, err := rememberedChildren[T, PT](p, sp, cm, desired)
		if err == nil {
			return insert, p.removing(sp.table, remove), nil
		}
		if !errors.Is(err, errMemoBehind) {
			return nil, nil, err
		}
		p.ops = p.ops[:ops]
		delete(p.memo.cols, colKey{parent, parentColumns[sp.table][1]})
	}
	type found struct {
		row      PT
		ownerIDs bool
		claimed  bool // by a desired row
	}
	existing := make(map[string]found, len(current))
	var extra []string
	for _, u := range current {
		m := p.row(sp.table, u)
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
			if pu := *sp.uuid((*T)(prev.row)); u < pu {
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
		k := sp.key(d)
		ex, ok := existing[k]
		if ok && ex.claimed || !ok && created[k] {
			return nil, nil, duplicateRows(sp.table, k)
		}
		shared := p.stamp(sp.ids(d))
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
			remove = append(remove, *sp.uuid((*T)(f.row)))
		}
	}
	return insert, p.removing(sp.table, append(remove, extra...)), nil
}

// removing sorts the children a plan takes out of their parent's column
// and notes them gone (Apply waits until the cache shows them deleted).
func (p *planner) removing(table string, uuids []string) []string {
	slices.Sort(uuids)
	for _, u := range uuids {
		p.gone = append(p.gone, rowRef{table, u})
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
}](p *planner, sp spec[T], d *T, k string, created *map[string]bool) (string, error) {
	if *created == nil {
		*created = map[string]bool{}
	}
	(*created)[k] = true
	u := p.name()
	*sp.uuid(d) = u
	return u, p.add(p.api.Create(PT(d)))
}

// updateChild compares a desired child with its cached row and emits an
// update when they differ; same says they did not. stamped and ownerIDs say
// the desired and the cached external_ids are exactly the owner's.
func updateChild[T any, PT interface {
	*T
	model.Model
}](p *planner, sp spec[T], d *T, row PT, stamped, ownerIDs bool) (same bool, err error) {
	want, have := sp.fields(d, p.want[:0]), sp.fields((*T)(row), p.have[:0])
	if stamped && ownerIDs && want[0] == any(sp.ids(d)) {
		// Both external_ids are exactly the owner's: compare the rest.
		want, have = want[1:], have[1:]
	}
	if sameFields(want, have) {
		return true, nil
	}
	return false, p.add(p.api.Where(row).Update(PT(d), sp.fields(d, nil)...))
}

// stamp adds the owner's external_ids to a desired row's. Rows with no
// external_ids of their own (most of them) share one read-only map.
func (p *planner) stamp(ids *map[string]string) (shared bool) {
	if len(*ids) == 0 || sameMap(*ids, p.sharedIDs()) {
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
		p.ownerIDs = p.owner.ids()
	}
	return p.ownerIDs
}

// sameMap says whether a and b are one map (not merely equal ones).
func sameMap(a, b map[string]string) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

var (
	lrpSpec = spec[nbdb.LogicalRouterPort]{
		table: nbdb.LogicalRouterPortTable,
		key:   func(r *nbdb.LogicalRouterPort) string { return r.Name },
		uuid:  func(r *nbdb.LogicalRouterPort) *string { return &r.UUID },
		ids:   func(r *nbdb.LogicalRouterPort) *map[string]string { return &r.ExternalIDs },
		fields: func(r *nbdb.LogicalRouterPort, buf []any) []any {
			return append(buf, &r.ExternalIDs, &r.MAC, &r.Networks, &r.Options, &r.Peer, &r.Ipv6RaConfigs)
		},
	}
	routeSpec = spec[nbdb.LogicalRouterStaticRoute]{
		table: nbdb.LogicalRouterStaticRouteTable,
		key: func(r *nbdb.LogicalRouterStaticRoute) string {
			pol := nbdb.LogicalRouterStaticRoutePolicyDstIP
			if r.Policy != nil {
				pol = *r.Policy
			}
			// One concatenation, one allocation: every desired route's key is
			// built on every Apply of its network.
			return r.RouteTable + "|" + r.IPPrefix + "|" + r.Nexthop + "|" + pol + "|" + deref(r.OutputPort)
		},
		uuid: func(r *nbdb.LogicalRouterStaticRoute) *string { return &r.UUID },
		ids:  func(r *nbdb.LogicalRouterStaticRoute) *map[string]string { return &r.ExternalIDs },
		fields: func(r *nbdb.LogicalRouterStaticRoute, buf []any) []any {
			return append(buf, &r.ExternalIDs, &r.Options)
		},
	}
	policySpec = spec[nbdb.LogicalRouterPolicy]{
		table: nbdb.LogicalRouterPolicyTable,
		key:   func(r *nbdb.LogicalRouterPolicy) string { return strconv.Itoa(r.Priority) + "|" + r.Match },
		uuid:  func(r *nbdb.LogicalRouterPolicy) *string { return &r.UUID },
		ids:   func(r *nbdb.LogicalRouterPolicy) *map[string]string { return &r.ExternalIDs },
		fields: func(r *nbdb.LogicalRouterPolicy, buf []any) []any {
			return append(buf, &r.ExternalIDs, &r.Action, &r.Nexthops, &r.Options)
		},
	}
	natSpec = spec[nbdb.NAT]{
		table: nbdb.NATTable,
		key: func(r *nbdb.NAT) string {
			return r.Type + "|" + r.LogicalIP + "|" + r.ExternalIP + "|" + deref(r.LogicalPort)
		},
		uuid: func(r *nbdb.NAT) *string { return &r.UUID },
		ids:  func(r *nbdb.NAT) *map[string]string { return &r.ExternalIDs },
		fields: func(r *nbdb.NAT, buf []any) []any {
			return append(buf, &r.ExternalIDs, &r.Options, &r.ExternalPortRange)
		},
	}
	lspSpec = spec[nbdb.LogicalSwitchPort]{
		table: nbdb.LogicalSwitchPortTable,
		key:   func(r *nbdb.LogicalSwitchPort) string { return r.Name },
		uuid:  func(r *nbdb.LogicalSwitchPort) *string { return &r.UUID },
		ids:   func(r *nbdb.LogicalSwitchPort) *map[string]string { return &r.ExternalIDs },
		fields: func(r *nbdb.LogicalSwitchPort, buf []any) []any {
			return append(buf, &r.ExternalIDs, &r.Type, &r.Addresses, &r.Options, &r.PortSecurity)
		},
	}
)

// ExternalIDVM names the VM (namespace/name) a DHCP_Options row serves.
const ExternalIDVM = "k8s.ovn.org/vm"

var dhcpSpec = spec[nbdb.DHCPOptions]{
	table:  nbdb.DHCPOptionsTable,
	key:    func(r *nbdb.DHCPOptions) string { return r.ExternalIDs[ExternalIDVM] + "|" + r.Cidr },
	uuid:   func(r *nbdb.DHCPOptions) *string { return &r.UUID },
	ids:    func(r *nbdb.DHCPOptions) *map[string]string { return &r.ExternalIDs },
	fields: func(r *nbdb.DHCPOptions, buf []any) []any { return append(buf, &r.ExternalIDs, &r.Options) },
}

var addressSetSpec = spec[nbdb.AddressSet]{
	table:  nbdb.AddressSetTable,
	key:    func(r *nbdb.AddressSet) string { return r.Name },
	uuid:   func(r *nbdb.AddressSet) *string { return &r.UUID },
	ids:    func(r *nbdb.AddressSet) *map[string]string { return &r.ExternalIDs },
	fields: func(r *nbdb.AddressSet, buf []any) []any { return append(buf, &r.ExternalIDs, &r.Addresses) },
}

// roots diffs rows of a root table (kept until deleted) that this piece owns.
func roots[T any, PT interface {
	*T
	model.Model
}](p *planner, sp spec[T], desired []T) error {
	_, remove, err := children[T, PT](p, sp, "", p.scan(sp.table, nil, false), desired)
	if err != nil {
		return err
	}
	for _, u := range remove {
		row := PT(new(T))
		*sp.uuid((*T)(row)) = u
		if err := p.add(p.api.Where(row).Delete()); err != nil {
			return err
		}
	}
	return nil
}

// routers plans the routers and their children.
func (p *planner) routers(desired []Router) error {
	byName := map[string]*nbdb.LogicalRouter{}
	var current []*nbdb.LogicalRouter
	names := make([]string, len(desired))
	for i := range desired {
		names[i] = desired[i].Row.Name
	}
	for _, r := range rowsOf[nbdb.LogicalRouter](p, nbdb.LogicalRouterTable, names) {
		r = withChildren(p.links, r)
		current = append(current, r)
		size := func(x *nbdb.LogicalRouter) int {
			return len(x.Ports) + len(x.StaticRoutes) + len(x.Policies) + len(x.Nat)
		}
		prev, dup := byName[r.Name]
		if dup && p.unsure() {
			return errUnlinked
		}
		if !dup || preferred(p.owner, prev.ExternalIDs, r.ExternalIDs, prev, r, size(prev), size(r)) {
			byName[r.Name] = r
		}
	}
	wanted := map[string]bool{}
	for i := range desired {
		d := &desired[i]
		wanted[d.Row.Name] = true
		ex := byName[d.Row.Name]
		ref, err := p.reference("logical router", d.Row.Name, d.Ref, d.Shared, ex != nil, ex != nil && p.owner.owns(ex.ExternalIDs, ex))
		if err != nil {
			return err
		}
		var cur nbdb.LogicalRouter
		if ex != nil {
			cur = *ex
		}
		mut := map[*[]string]*[2][]string{}
		collect := func(col *[]string, ins, rem []string) {
			mut[col] = &[2][]string{ins, rem}
		}
		row := d.Row
		markShared(&row.ExternalIDs, d.Shared)
		ins, rem, err := children[nbdb.LogicalRouterPort](p, lrpSpec, cur.UUID, cur.Ports, d.Ports)
		if err != nil {
			return err
		}
		collect(&row.Ports, ins, rem)
		if ins, rem, err = children[nbdb.LogicalRouterStaticRoute](p, routeSpec, cur.UUID, cur.StaticRoutes, d.Routes); err != nil {
			return err
		}
		collect(&row.StaticRoutes, ins, rem)
		if ins, rem, err = children[nbdb.LogicalRouterPolicy](p, policySpec, cur.UUID, cur.Policies, d.Policies); err != nil {
			return err
		}
		collect(&row.Policies, ins, rem)
		if ins, rem, err = children[nbdb.NAT](p, natSpec, cur.UUID, cur.Nat, d.NATs); err != nil {
			return err
		}
		collect(&row.Nat, ins, rem)
		if err := p.parent(ex, &row, ref, &row.ExternalIDs, []any{&row.ExternalIDs, &row.Options}, mut,
			func() []any { return []any{&ex.ExternalIDs, &ex.Options} }); err != nil {
			return err
		}
	}
	for _, r := range current {
		// A second row with a wanted name (Logical_Router and Logical_Switch have
		// no name index, so a race can create one) is handled like a stale row.
		if wanted[r.Name] && byName[r.Name] == r {
			continue
		}
		cols := []childColumn{
			{&r.Ports, lrpSpec.table, ownedIn(p, lrpSpec)}, {&r.StaticRoutes, routeSpec.table, ownedIn(p, routeSpec)},
			{&r.Policies, policySpec.table, ownedIn(p, policySpec)}, {&r.Nat, natSpec.table, ownedIn(p, natSpec)},
		}
		if r.ExternalIDs[ExternalIDShared] == "true" && p.unsure() {
			return errUnlinked
		}
		if p.owner.owns(r.ExternalIDs, r) && !keepShared(r.ExternalIDs, cols) {
			// Its ports, routes, policies and NATs are garbage-collected with it.
			p.gone = append(p.gone, rowRef{nbdb.LogicalRouterTable, r.UUID})
			if err := p.add(p.api.Where(r).Delete()); err != nil {
				return err
			}
			continue
		}
		if err := p.dropChildren(r, cols); err != nil {
			return err
		}
	}
	return nil
}

// switches plans the switches and their ports.
func (p *planner) switches(desired []Switch) error {
	byName := map[string]*nbdb.LogicalSwitch{}
	var current []*nbdb.LogicalSwitch
	names := make([]string, len(desired))
	for i := range desired {
		names[i] = desired[i].Row.Name
	}
	for _, s := range rowsOf[nbdb.LogicalSwitch](p, nbdb.LogicalSwitchTable, names) {
		s = withChildren(p.links, s)
		current = append(current, s)
		prev, dup := byName[s.Name]
		if dup && p.unsure() {
			return errUnlinked
		}
		if !dup || preferred(p.owner, prev.ExternalIDs, s.ExternalIDs, prev, s, len(prev.Ports), len(s.Ports)) {
			byName[s.Name] = s
		}
	}
	wanted := map[string]bool{}
	for i := range desired {
		d := &desired[i]
		wanted[d.Row.Name] = true
		ex := byName[d.Row.Name]
		ref, err := p.reference("logical switch", d.Row.Name, d.Ref, d.Shared, ex != nil, ex != nil && p.owner.owns(ex.ExternalIDs, ex))
		if err != nil {
			return err
		}
		var cur nbdb.LogicalSwitch
		if ex != nil {
			cur = *ex
		}
		row := d.Row
		markShared(&row.ExternalIDs, d.Shared)
		ins, rem, err := children[nbdb.LogicalSwitchPort](p, lspSpec, cur.UUID, cur.Ports, d.Ports)
		if err != nil {
			return err
		}
		mut := map[*[]string]*[2][]string{&row.Ports: {ins, rem}}
		if err := p.parent(ex, &row, ref, &row.ExternalIDs, []any{&row.ExternalIDs, &row.OtherConfig}, mut,
			func() []any { return []any{&ex.ExternalIDs, &ex.OtherConfig} }); err != nil {
			return err
		}
	}
	for _, s := range current {
		// A second row with a wanted name (Logical_Router and Logical_Switch have
		// no name index, so a race can create one) is handled like a stale row.
		if wanted[s.Name] && byName[s.Name] == s {
			continue
		}
		cols := []childColumn{{&s.Ports, lspSpec.table, ownedIn(p, lspSpec)}}
		if s.ExternalIDs[ExternalIDShared] == "true" && p.unsure() {
			return errUnlinked
		}
		if p.owner.owns(s.ExternalIDs, s) && !keepShared(s.ExternalIDs, cols) {
			p.gone = append(p.gone, rowRef{nbdb.LogicalSwitchTable, s.UUID})
			if err := p.add(p.api.Where(s).Delete()); err != nil {
				return err
			}
			continue
		}
		if err := p.dropChildren(s, cols); err != nil {
			return err
		}
	}
	return nil
}

// unsure says whether a decision that needs every child of a parent must
// wait until the parent of every child is known.
func (p *planner) unsure() bool {
	return p.strict && len(p.links.loose) > 0
}

// ExternalIDShared marks a router or switch a piece created as Shared.
const ExternalIDShared = "k8s.ovn.org/udnkit-shared"

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
		return false, fmt.Errorf("%s %q exists but is not owned by network %q (%s/%s): refusing to touch it",
			kind, name, p.owner.Network, p.owner.Topology, p.owner.Piece)
	}
	return ref, nil
}

// preferred says whether a second row with the same name should replace the
// first as the one udnkit works on: an owned row beats a foreign one, then the
// row with more children wins (the other is the leftover of a race).
func preferred(owner Owner, prevIDs, nextIDs map[string]string, prev, next any, prevSize, nextSize int) bool {
	if owner.owns(prevIDs, prev) != owner.owns(nextIDs, next) {
		return owner.owns(nextIDs, next)
	}
	return nextSize > prevSize
}

// parent creates a missing parent with its new children, or updates an
// existing one's managed columns and mutates its child columns.
func (p *planner) parent(ex, row model.Model, ref bool, ids *map[string]string, fields []any,
	mut map[*[]string]*[2][]string, exFields func() []any) error {
	p.stamp(ids)
	if reflect.ValueOf(ex).IsNil() {
		for col, m := range mut {
			*col = m[0]
		}
		return p.add(p.api.Create(row))
	}
	if !ref && !sameFields(fields, exFields()) {
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
				p.gone = append(p.gone, rowRef{c.table, u})
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

func ownedIn[T any](p *planner, sp spec[T]) func(string) bool {
	return func(u string) bool {
		m := p.row(sp.table, u)
		if m == nil {
			return false
		}
		return p.owner.owns(*sp.ids(m.(*T)), m)
	}
}

// sameFields compares managed columns the way OVSDB stores them: sets are
// unordered, an empty map equals a missing one, optional values compare by value.
func sameFields(a, b []any) bool {
	for i := range a {
		if !sameField(a[i], b[i]) {
			return false
		}
	}
	return true
}

// sameField compares one managed column: the column types of the rows udnkit
// writes without reflection (it is the planner's inner loop: every desired row
// of a network is compared on every Apply), any other through sameValue.
func sameField(a, b any) bool {
	switch x := a.(type) {
	case *map[string]string:
		y := b.(*map[string]string)
		return maps.Equal(*x, *y) // nil and empty compare equal, as OVSDB stores them
	case *[]string:
		y := b.(*[]string)
		if len(*x) != len(*y) {
			return false
		}
		if slices.Equal(*x, *y) {
			return true
		}
		xs, ys := slices.Clone(*x), slices.Clone(*y)
		slices.Sort(xs)
		slices.Sort(ys)
		return slices.Equal(xs, ys)
	case **string:
		y := b.(**string)
		if *x == nil || *y == nil {
			return *x == nil && *y == nil
		}
		return **x == **y
	case *string:
		return *x == *b.(*string)
	case *int:
		return *x == *b.(*int)
	}
	return sameValue(reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem())
}

func sameValue(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.Map:
		if a.Len() == 0 && b.Len() == 0 {
			return true
		}
		return reflect.DeepEqual(a.Interface(), b.Interface())
	case reflect.Slice:
		if a.Len() != b.Len() {
			return false
		}
		x, okx := a.Interface().([]string)
		y, oky := b.Interface().([]string)
		if okx && oky {
			x, y = slices.Clone(x), slices.Clone(y)
			slices.Sort(x)
			slices.Sort(y)
			return slices.Equal(x, y)
		}
		return reflect.DeepEqual(a.Interface(), b.Interface())
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return sameValue(a.Elem(), b.Elem())
	default:
		return reflect.DeepEqual(a.Interface(), b.Interface())
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func ptr[T any](v T) *T { return &v }
