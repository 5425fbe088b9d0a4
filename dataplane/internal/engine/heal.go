package engine

import (
	"slices"
	"sync"
	"time"

	"github.com/ovn-kubernetes/libovsdb/cache"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/udnkit/udnkit/dataplane/internal/ovsconn"
	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/ovnk"
)

// Healing. The Northbound database can lose or change udnkit's rows without
// any Apply of udnkit: an ovsdb-server restarted on an emptied or restored
// file, or another client (an operator's ovn-nbctl) deleting or editing them.
// libovsdb reconnects and refills its cache by itself, and the plans see the
// truth, but no controller plans again until its objects change. The client
// finds out and asks its controllers (OnResync) to re-apply the networks:
//
//   - database_replaced: after the cache was refilled (a reconnect), the
//     database's NB_Global row (one per database, created by ovn-northd or
//     `ovn-nbctl init`) is another one, or gone: every network is re-applied;
//   - owned_rows_lost: after the cache was refilled (a reconnect, or events
//     libovsdb dropped), rows udnkit owned are missing or their managed
//     columns differ: those rows' networks are re-applied;
//   - foreign_edit: while connected, the monitor reports the deletion of an
//     owned row, or a change of its managed columns, or the insert of a row
//     that carries udnkit's piece and a network (inserts.go), that no
//     transaction of this client made: that network is re-applied (which
//     removes a row it does not desire), at once the first time and then
//     with a wait that doubles while the edits go on (another writer
//     fighting udnkit is reported, and never makes it spin). The dataplane
//     asks for it too (ForeignEdit) when a Southbound Port_Binding loses
//     the encap it set.
//
// A row is owned when its external_ids carry udnkit's piece and a network
// (rows.Owner.owns); other rows, OVN-Kubernetes' own among them, are never
// looked at. Apply notes, before each transaction, the owned rows it
// updates or deletes, and how many it inserts (ownEdits); the monitor's
// event for each such row is its own.

// Resync asks the dataplane's controllers to re-apply networks.
type Resync struct {
	// Reason is ResyncDatabaseReplaced, ResyncOwnedRowsLost or
	// ResyncForeignEdit (the reason label of udnkit_dataplane_resyncs_total).
	Reason string
	// All asks for every network; otherwise Networks lists them (the
	// values of their rows' k8s.ovn.org/network), sorted.
	All      bool
	Networks []string
}

// The reasons of a Resync.
const (
	ResyncDatabaseReplaced = "database_replaced"
	ResyncOwnedRowsLost    = "owned_rows_lost"
	ResyncForeignEdit      = "foreign_edit"
)

// OnResync sets what the client calls, from its own goroutine, when the
// Northbound database no longer holds networks' rows as udnkit wrote them;
// set it before Connect. Every resync is also logged and counted in
// udnkit_dataplane_resyncs_total{reason}.
func (e *Engine) OnResync(f func(Resync)) {
	e.healing.mu.Lock()
	defer e.healing.mu.Unlock()
	e.healing.notify = f
}

// Rate of foreign-edit resyncs of one network: the first goes at once, each
// within foreignQuiet of the previous one waits twice as long as the last
// (from foreignMinWait up to foreignMaxWait).
const (
	foreignMinWait = time.Second
	foreignMaxWait = 5 * time.Minute
	foreignQuiet   = 5 * time.Minute
	// foreignFight is the wait from which the edits count as another
	// writer fighting udnkit (logged at each doubling).
	foreignFight = 8 * time.Second
	// ownGrace is how long after its Apply an owned row's expected event
	// is still taken as the Apply's own (a row the transaction did not
	// actually change sends none).
	ownGrace = 10 * time.Second
	// foreignSettle is how long a network's foreign edits must pause
	// before its resync: the events of one transaction come one by one.
	foreignSettle = 50 * time.Millisecond
	// HealTick is how often the client looks for resyncs to make.
	HealTick = 200 * time.Millisecond
)

// healer finds the networks to re-apply; it is a cache.EventHandler of the
// Northbound cache.
type healer struct {
	own ownEdits
	mu  sync.Mutex
	// notify is OnResync's function.
	notify func(Resync)
	// foreign: networks with a foreign edit not yet resynced → when the
	// last one came.
	foreign map[string]time.Time
	// fights: networks resynced for foreign edits lately.
	fights map[string]*fight
	// buf is Table.Changed's scratch space (events come on one goroutine).
	buf [2][]any
	// members watches for the ports port groups name that are missing
	// (members.go).
	members memberWatch
	// cache is the Northbound cache (nil: inserts are not looked at);
	// fill tells its fills' Add events from inserts (inserts.go).
	cache func() *cache.TableCache
	fill  refill
}

// fight is one network's recent foreign-edit resyncs.
type fight struct {
	last time.Time
	wait time.Duration
	// held says the network's pending resync was counted as held back.
	held bool
}

func (h *healer) OnAdd(table string, m model.Model) {
	h.members.seen(table, m, true)
	h.inserted(table, m)
}
func (h *healer) OnUpdate(table string, old, cur model.Model) { h.edited(table, old, cur) }
func (h *healer) OnDelete(table string, m model.Model) {
	h.members.seen(table, m, false)
	h.edited(table, m, nil)
}

// edited notes an owned row deleted (cur nil) or changed in its managed
// columns by another client.
func (h *healer) edited(table string, old, cur model.Model) {
	uuid, ids, _, ok := schema.RowFields(table, old)
	if !ok || ids[ovnk.ExternalIDPiece] == "" || ids[ovnk.ExternalIDNetwork] == "" {
		return
	}
	if cur != nil && !schema.Lookup(table).Changed(old, cur, &h.buf) {
		// Another component's column (ovn-northd sets a port's up).
		return
	}
	if h.own.consume(uuid) {
		return
	}
	h.noteForeign(ids[ovnk.ExternalIDNetwork], time.Now())
}

// HealLoop looks for resyncs to make every HealTick, until stop is closed.
func (e *Engine) HealLoop(stop <-chan struct{}) {
	tick := time.NewTicker(HealTick)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		e.healOnce(time.Now())
	}
}

// healOnce makes the resyncs due now.
func (e *Engine) healOnce(now time.Time) {
	h := &e.healing
	h.own.sweep(now)
	if ovsconn.Up(e.NB) {
		// After a reconnect, the index is rebuilt from the refilled cache
		// now rather than by the next plan: the rebuild is what compares.
		if e.Index.Stale(e.NB) {
			e.Index.Read(e.NB)()
		}
		e.Index.NoteIdentity(e.NB)
	}
	if rep := e.Index.TakeReport(); rep != nil {
		switch {
		case rep.Replaced:
			e.resync(Resync{Reason: ResyncDatabaseReplaced, All: true, Networks: rep.Networks})
		case len(rep.Lost) > 0:
			var nets []string
			for net, uuids := range rep.Lost {
				if !slices.ContainsFunc(uuids, func(u string) bool { return !h.own.has(u) }) {
					continue // every row of it is an Apply's own (events it dropped)
				}
				nets = append(nets, net)
			}
			if len(nets) > 0 {
				slices.Sort(nets)
				e.resync(Resync{Reason: ResyncOwnedRowsLost, Networks: nets})
			}
		}
	}
	if due := h.dueForeign(now); len(due) > 0 {
		e.resync(Resync{Reason: ResyncForeignEdit, Networks: due})
	}
	e.applyAwaited()
}

// dueForeign returns, sorted, the networks whose foreign-edit resync is due
// now, and holds back the others.
func (h *healer) dueForeign(now time.Time) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var due []string
	for net, seen := range h.foreign {
		if now.Sub(seen) < foreignSettle {
			continue // more of the edit's events may follow
		}
		f := h.fights[net]
		if f != nil && now.Sub(f.last) < f.wait {
			if !f.held {
				f.held = true
				resyncsHeld.Inc()
			}
			continue
		}
		delete(h.foreign, net)
		due = append(due, net)
		if h.fights == nil {
			h.fights = map[string]*fight{}
		}
		if f == nil || now.Sub(f.last) > foreignQuiet {
			f = &fight{wait: foreignMinWait}
			h.fights[net] = f
		} else {
			f.wait = min(2*f.wait, foreignMaxWait)
			if f.wait >= foreignFight {
				log.Log.WithName("ovn").Info("another OVSDB client keeps changing the network's rows; re-applying them less often",
					"network", net, "nextResyncAfter", f.wait.String())
			}
		}
		f.last, f.held = now, false
	}
	for net, f := range h.fights {
		if now.Sub(f.last) > foreignQuiet+f.wait {
			delete(h.fights, net)
		}
	}
	slices.Sort(due)
	return due
}

// resync logs and counts r and hands it to OnResync's function.
func (e *Engine) resync(r Resync) {
	resyncs.WithLabelValues(r.Reason).Inc()
	shown := r.Networks
	if len(shown) > 10 {
		shown = shown[:10]
	}
	log.Log.WithName("ovn").Info("the OVN databases no longer hold udnkit's rows as written: re-applying networks",
		"reason", r.Reason, "all", r.All, "networks", len(r.Networks), "first", shown)
	e.healing.mu.Lock()
	notify := e.healing.notify
	e.healing.mu.Unlock()
	if notify != nil {
		notify(r)
	}
}

// ownEdits are the owned rows the transactions of Applies under way (and
// for ownGrace after) update or delete, by UUID, and insert, by table and
// network: the monitor's event for each is the Apply's own.
type ownEdits struct {
	mu sync.Mutex
	// rows: UUID → the edits expecting its event.
	rows map[string]ownQueue
	// ins: table and network → the edits expecting Add events of its
	// rows, oldest first.
	ins map[insKey][]*ownEdit
	// done: the edits of finished Applies, until their grace ends.
	done []*ownEdit
}

// ownEdit is one Apply's rows.
type ownEdit struct {
	uuids []string
	// ins: how many Add events of each table and network are expected.
	ins   map[insKey]int
	until time.Time // zero while the Apply runs
}

// ownQueue is the edits expecting one row's event, oldest first: first,
// then more (a row two Applies changed before the first one's event came).
type ownQueue struct {
	first *ownEdit
	more  []*ownEdit
}

// note adds the rows that ops update, delete or insert to e (nil: a new
// edit) and returns it. descendants returns the children of routers, switches and
// ports, and theirs (a deleted or unreferenced row's are garbage-collected
// with it).
func (o *ownEdits) note(e *ownEdit, ops []ovsdb.Operation, descendants func(parents []string) []string) *ownEdit {
	n := 0
	if e != nil {
		n = len(e.uuids)
	}
	var collected []string // rows the server garbage-collects with their children
	var ins []insKey
	for _, op := range ops {
		switch op.Op {
		case ovsdb.OperationInsert:
			if k, ok := insertKey(op); ok {
				ins = append(ins, k)
			}
		case ovsdb.OperationUpdate, ovsdb.OperationDelete:
			if e == nil {
				e = &ownEdit{}
			}
			e.uuids = append(e.uuids, schema.WhereUUID(op))
			if op.Op == ovsdb.OperationDelete && childColumns[op.Table] != nil {
				collected = append(collected, schema.WhereUUID(op))
			}
		case ovsdb.OperationMutate:
			// Children taken out of their parent are garbage-collected; the
			// parent's columns of children are not monitored.
			cols := childColumns[op.Table]
			for _, m := range op.Mutations {
				if cols[m.Column] != "" && m.Mutator == ovsdb.MutateOperationDelete {
					if e == nil {
						e = &ownEdit{}
					}
					e.uuids = append(e.uuids, schema.UUIDs(m.Value)...)
					collected = append(collected, schema.UUIDs(m.Value)...)
				}
			}
		}
	}
	if len(collected) > 0 {
		e.uuids = append(e.uuids, descendants(collected)...)
	}
	if len(ins) > 0 && e == nil {
		e = &ownEdit{}
	}
	if e == nil || (len(e.uuids) == n && len(ins) == 0) {
		return e
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.noteInserts(e, ins)
	if o.rows == nil {
		o.rows = map[string]ownQueue{}
	}
	for _, u := range e.uuids[n:] {
		q := o.rows[u]
		if q.first == nil {
			q.first = e
		} else {
			q.more = append(q.more, e)
		}
		o.rows[u] = q
	}
	return e
}

// finish starts e's grace (its Apply is done).
func (o *ownEdits) finish(e *ownEdit, now time.Time) {
	if e == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	e.until = now.Add(ownGrace)
	o.done = append(o.done, e)
}

// consume takes a row's event as an Apply's own, if one expects it.
func (o *ownEdits) consume(uuid string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	q, ok := o.rows[uuid]
	if !ok {
		return false
	}
	if len(q.more) == 0 {
		delete(o.rows, uuid)
	} else {
		o.rows[uuid] = ownQueue{first: q.more[0], more: q.more[1:]}
	}
	return true
}

// has says whether an Apply expects a row's event.
func (o *ownEdits) has(uuid string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.rows[uuid]
	return ok
}

// sweep forgets the rows of edits whose grace ended.
func (o *ownEdits) sweep(now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	keep := o.done[:0]
	for _, e := range o.done {
		if now.Before(e.until) {
			keep = append(keep, e)
			continue
		}
		o.sweepInserts(e)
		for _, u := range e.uuids {
			q, ok := o.rows[u]
			if !ok {
				continue
			}
			all := slices.DeleteFunc(append([]*ownEdit{q.first}, q.more...), func(x *ownEdit) bool { return x == e })
			if len(all) == 0 {
				delete(o.rows, u)
			} else {
				o.rows[u] = ownQueue{first: all[0], more: all[1:]}
			}
		}
	}
	clear(o.done[len(keep):])
	o.done = keep
}

// ForgetFights forgets the networks' recent foreign-edit resyncs (tests
// that provoke a fight start from none).
func (e *Engine) ForgetFights() {
	e.healing.mu.Lock()
	defer e.healing.mu.Unlock()
	e.healing.fights = nil
}
