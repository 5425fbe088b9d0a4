package plan

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"time"

	"github.com/ovn-kubernetes/libovsdb/cache"
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/index"
	"github.com/udnkit/udnkit/dataplane/internal/plan/refs"
	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/ovnk"
)

// Planner accumulates the operations of one transaction.
type Planner struct {
	api   client.Client
	owner rows.Owner
	// Ops are the plan's operations, in order.
	Ops   []ovsdb.Operation
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
	// Gone are the rows the plan deletes or unreferences (garbage-collected).
	Gone []index.RowRef
	// memo, when set, remembers the keys of the owner's cached rows between plans.
	memo *Memo
	// inserted: the named UUIDs of the children the plan inserts, by
	// table and key (a port group's new ports).
	inserted map[[2]string]string
	// refs resolves the rows the piece names rather than holds.
	refs *refs.Resolver
	// Zone names the zone rows (package schema) the plan inserts, as
	// "table/name", which another network's concurrent Apply may be
	// inserting too (nil: none).
	Zone []string
	// want and have hold the columns of the two rows being compared.
	want, have [8]any
}

// mutate mutates the columns of one cached row, found by its UUID (the
// condition libovsdb's Where(row) builds too). Where(row) looks the row up in
// the cache and clones it through JSON, which for a transit router with
// thousands of ports and routes costs milliseconds on every Apply that adds
// or removes a node.
func (p *Planner) mutate(target, row model.Model, mutations []model.Mutation) error {
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
	p.Ops = append(p.Ops, op)
	return nil
}

// row returns a cached row (read-only) by UUID, nil when there is none.
func (p *Planner) row(table, uuid string) model.Model {
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
// index.Scan; a Service's part's: index.ScanPart); without it (a full
// diff), every row.
func (p *Planner) scan(table string, names []string, parents bool) []string {
	if p.ix != nil {
		if only := p.owner.Only; only[0] == ovnk.ExternalIDLoadBalancerOwner && len(names) == 0 && !parents {
			// A part's rows carry its pair: the rest of the network's
			// are another part's.
			return p.ix.ScanPart(table, p.owner.Network, only[1])
		}
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
func (p *Planner) rows(table string) map[string]model.Model {
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

// Incremental plans an Apply of d against the index with the owner's key
// memo (under the network's lock, which the caller holds).
func Incremental(api client.Client, ix *index.Index, memos *Memos, d *rows.Desired) (*Planner, error) {
	if d.Empty() {
		// The piece goes away (its network was deleted): so does its memo.
		memos.drop(d.Owner)
		return Indexed(api, ix, d, nil)
	}
	memo := memos.Get(d.Owner)
	p, err := Indexed(api, ix, d, memo)
	if memo != nil {
		memo.prune()
	}
	return p, err
}

// Removals plans the removal of each of ds (pieces that go away: empty
// Desireds) as Incremental does, in order, but reads the zone's routers
// and switches once for them all where each plan alone reads them all
// (refs.DropUnreferenced: whether a router or switch the plan leaves still
// names one of its network's load balancer groups).
func Removals(api client.Client, ix *index.Index, memos *Memos, ds []*rows.Desired) ([]*Planner, error) {
	ps := make([]*Planner, len(ds))
	rs := make([]*refs.Resolver, len(ds))
	for i, d := range ds {
		if !d.Empty() {
			return nil, fmt.Errorf("remove %s/%s/%s: the piece has rows", d.Owner.Network, d.Owner.Topology, d.Owner.Piece)
		}
		memos.drop(d.Owner)
		p, err := against(api, ix, d, nil, true, true)
		if err != nil {
			return nil, fmt.Errorf("remove %s/%s/%s: %w", d.Owner.Network, d.Owner.Topology, d.Owner.Piece, err)
		}
		ps[i], rs[i] = p, p.refs
	}
	if len(rs) > 0 {
		if err := refs.DropUnreferenced(rs); err != nil {
			return nil, err
		}
	}
	return ps, nil
}

// Indexed plans d against the index (memo nil: without a memo).
func Indexed(api client.Client, ix *index.Index, d *rows.Desired, memo *Memo) (*Planner, error) {
	return against(api, ix, d, memo, true, false)
}

// Full is the full diff of d against the client's cache (every row of the
// tables read, no memo), with the index's links.
func Full(api client.Client, ix *index.Index, d *rows.Desired) (*Planner, error) {
	return against(api, ix, d, nil, false, false)
}

// against plans d once the index knows the parents of the network's
// children (those another client inserted are looked up first), and of
// every child when the plan needs it (errUnlinked); later leaves the
// zone's check of dropped load balancer groups to the caller
// (refs.Resolver.Later).
func against(api client.Client, ix *index.Index, d *rows.Desired, memo *Memo, indexed, later bool) (*Planner, error) {
	lookedUp := map[string]bool{}
	var waitUntil time.Time
	network := d.Owner.Network
	for {
		unlock := ix.Read(api)
		if !ix.Built() {
			unlock()
			return nil, fmt.Errorf("the OVN database %s is not connected yet", api.CurrentEndpoint())
		}
		if !lookedUp[network] {
			lookedUp[network] = true
			children := ix.Unlinked(network)
			if network != "" && d.Owner.AdoptLegacy && d.Owner.Legacy != nil {
				children = append(children, ix.UnlinkedBare()...)
			}
			if len(children) > 0 {
				unlock()
				// This process's transactions in flight may hold
				// them: once their links are learnt, only another
				// client's are left to look up (index.Sending). Others
				// may land meanwhile: wait again, up to FlightWait in all.
				if waitUntil.IsZero() {
					waitUntil = time.Now().Add(index.FlightWait)
				}
				if left := time.Until(waitUntil); left > 0 && ix.AwaitFlights(left) {
					delete(lookedUp, network)
					continue
				}
				if err := ix.LookUp(api, children); err != nil {
					return nil, err
				}
				continue
			}
		}
		var rowsIx *index.Index
		if indexed {
			rowsIx = ix
		}
		p, err := newPlanWith(api, d, memo, rowsIx, ix, network != "", later)
		unlock()
		if errors.Is(err, errUnlinked) {
			network = "" // every child's
			continue
		}
		return p, err
	}
}

func newPlanWith(api client.Client, d *rows.Desired, memo *Memo, ix, links *index.Index, strict, later bool) (*Planner, error) {
	p := &Planner{api: api, owner: d.Owner, memo: memo, ix: ix, links: links, strict: strict,
		inserted: map[[2]string]string{}}
	p.refs = refs.New(host{p}, d.Owner)
	if later {
		p.refs.Later()
	}
	if memo != nil {
		if memo.ids == nil {
			memo.ids = d.Owner.IDs()
		}
		p.ownerIDs = memo.ids
	}
	if err := p.refs.Meters(d.Meters); err != nil {
		return nil, err
	}
	if err := roots(p, schema.LoadBalancer, d.LoadBalancers); err != nil {
		return nil, err
	}
	p.refs.LoadBalancers()
	if err := p.refs.LBGroups(d.LoadBalancerGroups); err != nil {
		return nil, err
	}
	if err := roots(p, schema.DHCPOptions, d.DHCPOptions); err != nil {
		return nil, err
	}
	p.refs.DHCPOptions()
	if err := p.routers(d.Routers); err != nil {
		return nil, err
	}
	if err := p.switches(d.Switches); err != nil {
		return nil, err
	}
	if err := p.refs.MACBindings(d.StaticMACBindings); err != nil {
		return nil, err
	}
	if err := p.portGroups(d.PortGroups); err != nil {
		return nil, err
	}
	if err := roots(p, schema.AddressSet, d.AddressSets); err != nil {
		return nil, err
	}
	if d.Empty() && d.Owner.Only[0] == "" {
		// A part of the piece (Only) that goes away leaves the groups to
		// the whole piece's removal.
		if err := p.refs.DropLBGroups(ovnk.NamesFor(d.Owner.Network).LoadBalancerGroups(), p.gone()); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// gone says whether the plan so far deletes a row.
func (p *Planner) gone() func(table, uuid string) bool {
	set := make(map[index.RowRef]bool, len(p.Gone))
	for _, g := range p.Gone {
		set[g] = true
	}
	return func(table, uuid string) bool { return set[index.RowRef{Table: table, UUID: uuid}] }
}

func (p *Planner) name() string {
	p.named++
	return "udnkit" + strconv.Itoa(p.named)
}

func (p *Planner) add(ops []ovsdb.Operation, err error) error {
	if err != nil {
		return err
	}
	p.Ops = append(p.Ops, ops...)
	return nil
}

// MemberPorts are the logical switch ports the plan's port groups name,
// by name: true for those found or inserted, false for those it left out
// because they do not exist (yet).
func (p *Planner) MemberPorts() map[string]bool { return p.refs.Ports() }

// Memo is the key memo the plan used (nil: none).
func (p *Planner) Memo() *Memo { return p.memo }

// Len is how many owners have a memo.
func (k *Memos) Len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.memos)
}
