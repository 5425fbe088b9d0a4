package index

import (
	"slices"
	"sync"
	"time"

	"github.com/ovn-kubernetes/libovsdb/cache"
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/ovnk"
)

// Index holds the Northbound rows the planner reads, with where to find
// a piece's rows, so that an Apply costs what its network holds and not what
// the database holds: libovsdb's cache offers one row only as a clone and a
// table only as a copy of all its rows (of every network), and a plan that
// scanned every router's children for the piece's costs milliseconds at a
// thousand networks.
//
// It is kept up to date from the cache's events, which libovsdb delivers in
// order but after the cache has changed: the index may lag the cache by the
// events in flight, as the cache lags the server. It is rebuilt from the
// cache when the cache was refilled after a reconnect (its row caches are
// new) and when libovsdb dropped events (its event buffer was full); a
// Rebuild compares the owned rows before and after it, and the database's
// NB_Global, for the healer (TakeReport). An Apply waits until the index,
// not only the cache, shows its transaction (waitVisible), so the next plan
// sees it.
//
// The models are the cache's own (layout.go), looked up when an event names
// their row; the package doc states what that lets callers rely on.
type Index struct {
	// ready says whether a client's cache is resynchronised (rebuilds read
	// only such a cache); keep bounds a followed column's change log.
	ready func(client.Client) bool
	keep  func(children int) int

	// mu guards pending, lost and changed; the event handler takes only
	// mu, so it never waits for a plan.
	mu      sync.Mutex
	pending []rowEvent
	lost    bool
	// changed, when set, is closed by the next event (see next).
	changed chan struct{}

	// rw guards the rest: plans read under its read lock.
	rw sync.RWMutex
	// from are the row caches the index was built from (nil: never built).
	from map[string]*cache.RowCache
	rows map[string]map[string]model.Model
	// byNet: table → network (external_ids) → UUIDs.
	byNet map[string]map[string]uuidSet
	// byPart: table → network and k8s.ovn.org/owner (partKey) → UUIDs:
	// the rows a part of a piece narrowed to a Service's load balancers
	// (rows.Owner.Only) may own, so its plan looks at them alone.
	byPart map[string]map[string]uuidSet
	// byName: Logical_Router and Logical_Switch name → UUIDs.
	byName map[string]map[string]uuidSet
	// kids: router or switch UUID → column of children → the children
	// (see links.go: the cache does not hold these columns).
	kids map[string]map[string]uuidSet
	// sorted keeps children's sorted slices, by parent and column, and
	// relate notes the sets' changes in edits, which the next read applies
	// (so a plan of a large router does not sort its ports again). Plans
	// Fill both under rw's read
	// lock, so they have their own lock.
	sortedMu sync.Mutex
	sorted   map[[2]string][]string
	edits    map[[2]string]*sortEdits
	// parents: child UUID → the routers and switches whose columns hold it
	// (one, but for another client's doing; a slice is a fraction of a
	// set's memory, with a quarter of a million children).
	parents map[string][]string
	// unparented: children a look-up found in no parent (removed since the
	// cache showed them), not looked up again while their row is there.
	unparented uuidSet
	// loose: child → its table, for the children with a row, no known
	// parent and not looked up in vain (what unlinked("") lists), kept as
	// the rest changes: a plan that needs every child's parent asks whether
	// there is any, and a scan of every child for that grew each plan with
	// the whole database.
	loose map[string]string
	// netParents: network → router or switch UUID → how many of the
	// network's indexed children it holds (what scan adds to a network's
	// own rows), kept as rows and links change: collecting them from every
	// child of the network grew each plan with the network's size.
	netParents map[string]map[string]int
	// follows: the parents' columns of children that a plan's column memo
	// follows → the children whose row or link changed since (changesSince).
	// Only followed columns log their changes: one log of every change
	// held the UUIDs of every row deleted lately (a large network's Apply
	// and removal), heap the garbage collector marked while another
	// network's Apply waited. Writers (with rw held for writing) use it
	// freely; plans, which hold rw for reading, under followMu.
	followMu sync.Mutex
	follows  map[ColKey]*ChangeLog
	// pieces: table → topology and piece (external_ids) → network → rows.
	pieces map[string]map[[2]string]map[string]int

	// identity is the database's NB_Global UUID ("" none) as the cache
	// showed it (under mu); identityFrom is the cache's NB_Global table it
	// was read from (written by rebuild).
	identity     string
	identityFrom *cache.RowCache
	// report is what the rebuilds since the last takeReport found (under mu).
	report *HealReport
	// prefetched: the links a connection started reading for the next
	// Rebuild (under mu; prefetch.go).
	prefetched *prefetch
	// flights: this process's transactions whose links are not learnt yet
	// (flight.go).
	flights flights
}

// HealReport is what a rebuild found changed from the rows indexed before
// it (see healer).
type HealReport struct {
	// replaced: the database's NB_Global is another one or gone; networks
	// are those that had owned rows.
	Replaced bool
	Networks []string
	// lost: network → its owned rows missing or changed in managed columns.
	Lost map[string][]string
}

type uuidSet = map[string]struct{}

// rowEvent is a row the cache changed, or (table "") links learnt
// otherwise (links.go), applied in the order they came.
type rowEvent struct {
	table, uuid string
	row         model.Model // nil: deleted
	links       []Link
	// unparented: children looked up in vain; all: every link (replaces
	// the index's).
	unparented []string
	all        map[string]map[string]uuidSet
}

// New returns an empty index; Read builds it from a client's cache.
// ready says whether a client's cache is resynchronised after a reconnect
// (the index is rebuilt only from such a cache). keepChanges bounds, for a
// parent's column of children, how many changes its log keeps: a memo
// further behind reads the column afresh (the planner's bound).
func New(ready func(client.Client) bool, keepChanges func(children int) int) *Index {
	return &Index{ready: ready, keep: keepChanges}
}

// tables are the tables the index follows (package schema).
var tables = schema.Indexed()

// drainAt is how many pending events make the event handler apply them
// itself (when no plan reads the index).
const drainAt = 4096

func (ix *Index) push(table string, m model.Model, deleted bool) {
	uuid, _, _, ok := schema.RowFields(table, m)
	if !ok {
		return
	}
	if deleted {
		m = nil
	}
	ix.enqueue(rowEvent{table: table, uuid: uuid, row: m})
}

// enqueue adds an event to the pending ones.
func (ix *Index) enqueue(e rowEvent) {
	ix.mu.Lock()
	ix.pending = append(ix.pending, e)
	n := len(ix.pending)
	if ix.changed != nil {
		close(ix.changed)
		ix.changed = nil
	}
	ix.mu.Unlock()
	if n >= drainAt && ix.rw.TryLock() {
		ix.drain()
		ix.rw.Unlock()
	}
}

// Learn queues links a committed transaction made (the cache does not
// show them: links.go).
func (ix *Index) Learn(links []Link) {
	if len(links) > 0 {
		ix.enqueue(rowEvent{links: links})
	}
}

// OnAdd, OnUpdate and OnDelete make the index a cache.EventHandler.
func (ix *Index) OnAdd(table string, m model.Model)       { ix.push(table, m, false) }
func (ix *Index) OnUpdate(table string, _, m model.Model) { ix.push(table, m, false) }
func (ix *Index) OnDelete(table string, m model.Model)    { ix.push(table, m, true) }

// Dropped tells the index that the cache dropped events: the next Read
// rebuilds it.
func (ix *Index) Dropped() { ix.mu.Lock(); ix.lost = true; ix.mu.Unlock() }

// Next returns a channel that the next event closes.
func (ix *Index) Next() <-chan struct{} {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.changed == nil {
		ix.changed = make(chan struct{})
	}
	return ix.changed
}

// drain applies the pending events (with rw held for writing).
func (ix *Index) drain() {
	ix.mu.Lock()
	events, lost := ix.pending, ix.lost
	ix.pending, ix.lost = nil, false
	ix.mu.Unlock()
	if lost {
		ix.from = nil // rebuilt by the next read
	}
	if ix.rows == nil {
		return
	}
	for _, e := range events {
		if e.table == "" {
			ix.learn(e)
			continue
		}
		m := e.row
		if rc := ix.from[e.table]; rc != nil && rowCacheLayout.ok {
			// The cache's own model, as of now (nil: deleted since).
			m = cachedModel(rc, e.uuid)
		}
		ix.put(e.table, e.uuid, m)
	}
}

// Read brings the index up to date with the events delivered so far (and
// rebuilds it from api's cache when it must and api is connected), then
// read-locks it; the caller reads it until it calls the returned unlock.
func (ix *Index) Read(api client.Client) (unlock func()) {
	ix.rw.RLock()
	ix.mu.Lock()
	clean := len(ix.pending) == 0 && !ix.lost
	ix.mu.Unlock()
	if clean && ix.current(api) && !ix.behind() {
		return ix.rw.RUnlock
	}
	ix.rw.RUnlock()
	ix.rw.Lock()
	ix.drain()
	// Rebuild only from a resynchronised cache (see up): while libovsdb
	// reconnects, its new row caches fill up.
	for tries := 0; !ix.current(api) && ix.ready(api) && tries < 3; tries++ {
		if err := ix.Rebuild(api); err != nil {
			log.Log.WithName("ovn").Info("reading the Northbound links failed, retrying", "error", err.Error())
		}
	}
	// The cache may already hold rows whose events are not delivered yet
	// (another client's insert or delete that a caller waited for in the
	// cache): wait a moment for them, so that a plan sees what the cache
	// shows (a plan against an index without another client's just-inserted
	// ports would plan nothing for them).
	for deadline := time.Now().Add(catchUpWait); ix.current(api) && ix.behind() && time.Now().Before(deadline); {
		select {
		case <-ix.Next():
		case <-time.After(time.Millisecond):
		}
		ix.drain()
	}
	ix.rw.Unlock()
	ix.rw.RLock()
	return ix.rw.RUnlock
}

// catchUpWait bounds how long read waits for events the cache has already
// applied.
const catchUpWait = 500 * time.Millisecond

// behind says whether a row cache holds a different number of rows than
// the index: events the cache applied are still on their way (with ix.rw
// held).
func (ix *Index) behind() bool {
	for t, rc := range ix.from {
		if rc != nil && rc.Len() != len(ix.rows[t]) {
			return true
		}
	}
	return false
}

// current says whether the index was built from api's row caches.
func (ix *Index) current(api client.Client) bool {
	if ix.from == nil {
		return false
	}
	c := api.Cache()
	for _, t := range tables {
		if c == nil || c.Table(t) != ix.from[t] {
			return false
		}
	}
	return true
}

// Rebuild fills the index from api's cache. The events pending now show
// what the cache already shows; those delivered later are applied on top.
func (ix *Index) Rebuild(api client.Client) error {
	ix.mu.Lock()
	ix.pending, ix.lost = nil, false
	oldID := ix.identity
	ix.mu.Unlock()
	old := ix.rows
	ix.from = map[string]*cache.RowCache{}
	ix.rows = map[string]map[string]model.Model{}
	ix.byNet = map[string]map[string]uuidSet{}
	ix.byPart = map[string]map[string]uuidSet{}
	ix.byName = map[string]map[string]uuidSet{}
	ix.pieces = map[string]map[[2]string]map[string]int{}
	ix.setLinks(nil)
	for _, t := range tables {
		rc := api.Cache().Table(t)
		ix.from[t] = rc
		ix.rows[t] = map[string]model.Model{}
		if rc == nil {
			continue
		}
		for u, m := range rc.RowsShallow() {
			ix.put(t, u, m)
		}
	}
	ix.identityFrom = api.Cache().Table(nbdb.NBGlobalTable)
	id := firstUUID(ix.identityFrom)
	ix.mu.Lock()
	ix.identity = id
	ix.mu.Unlock()
	if old != nil {
		ix.compare(old, oldID, id)
	}
	// The links the connection prefetched with its initial copy (those of
	// rows the cache holds: prefetch.go), or the links as the server has
	// them now: at least as new as the cache's rows (the reply comes after
	// the updates before it).
	kids, err := ix.takePrefetched(), error(nil)
	if kids == nil {
		kids, err = selectLinks(api)
	}
	if err != nil {
		ix.from = nil // built again by the next read
		return err
	}
	ix.setLinks(kids)
	return nil
}

// compare adds to the report what changed from the rows indexed before a
// Rebuild (old, of the database whose NB_Global was oldID) to the rows
// indexed now (of newID).
func (ix *Index) compare(old map[string]map[string]model.Model, oldID, newID string) {
	replaced := oldID != "" && newID != oldID
	nets := map[string]bool{}
	lost := map[string][]string{}
	var buf [2][]any
	for t, byUUID := range old {
		for u, m := range byUUID {
			_, ids, _, _ := schema.RowFields(t, m)
			net := ids[ovnk.ExternalIDNetwork]
			if net == "" || ids[ovnk.ExternalIDPiece] == "" {
				continue
			}
			if replaced {
				nets[net] = true
				continue
			}
			if cur := ix.rows[t][u]; cur == nil || schema.Lookup(t).Changed(m, cur, &buf) {
				lost[net] = append(lost[net], u)
			}
		}
	}
	if !replaced && len(lost) == 0 {
		return
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.report == nil {
		ix.report = &HealReport{Lost: map[string][]string{}}
	}
	r := ix.report
	if replaced {
		r.Replaced = true
		for n := range nets {
			r.Networks = append(r.Networks, n)
		}
		slices.Sort(r.Networks)
		r.Networks = slices.Compact(r.Networks)
	}
	for n, uuids := range lost {
		r.Lost[n] = append(r.Lost[n], uuids...)
	}
}

// TakeReport returns and forgets what the rebuilds found (nil: nothing).
func (ix *Index) TakeReport() *HealReport {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	r := ix.report
	ix.report = nil
	return r
}

// Stale says whether the index must be rebuilt from api's cache: the cache
// was refilled (a reconnect) or dropped events.
func (ix *Index) Stale(api client.Client) bool {
	ix.mu.Lock()
	lost := ix.lost
	ix.mu.Unlock()
	if lost {
		return true
	}
	ix.rw.RLock()
	defer ix.rw.RUnlock()
	return !ix.current(api)
}

// NoteIdentity follows the database's NB_Global row (which ovn-northd may
// create after the index was built) while the cache is the one the index
// was built from; a refilled cache's is compared by the rebuild.
func (ix *Index) NoteIdentity(api client.Client) {
	ix.rw.RLock()
	defer ix.rw.RUnlock()
	c := api.Cache()
	if c == nil || ix.identityFrom == nil || c.Table(nbdb.NBGlobalTable) != ix.identityFrom {
		return
	}
	id := firstUUID(ix.identityFrom)
	ix.mu.Lock()
	ix.identity = id
	ix.mu.Unlock()
}

// firstUUID is the UUID of a table's row with the least UUID ("" none):
// NB_Global's one row.
func firstUUID(rc *cache.RowCache) string {
	if rc == nil {
		return ""
	}
	var out string
	for u := range rc.RowsShallow() {
		if out == "" || u < out {
			out = u
		}
	}
	return out
}

// put sets (nil: deletes) one row and what is derived from it.
func (ix *Index) put(table, uuid string, m model.Model) {
	byUUID, ok := ix.rows[table]
	old := byUUID[uuid]
	if !ok || old == m {
		// The same model is the same row content (the cache's model looked
		// up again: a row changed more than once since the last drain).
		return
	}
	if pc, child := parentColumns[table]; child {
		for _, p := range ix.parents[uuid] {
			ix.logChange(p, pc[1], uuid)
		}
	}
	if old != nil {
		ix.link(table, uuid, old, false)
	}
	if m == nil {
		delete(byUUID, uuid)
	} else {
		byUUID[uuid] = m
		ix.link(table, uuid, m, true)
	}
	if m == nil {
		// A deleted parent holds no children, a deleted child is in no
		// parent (the server garbage-collects children no parent holds).
		ix.orphan(table, uuid)
		ix.disown(table, uuid)
	}
	if _, child := parentColumns[table]; child {
		ix.recheck(table, uuid)
	}
}

// link adds (or removes) a row's entries in byNet, byPart, byName and
// pieces.
func (ix *Index) link(table, uuid string, m model.Model, add bool) {
	_, ids, name, _ := schema.RowFields(table, m)
	mark(ix.byNet, table, ids[ovnk.ExternalIDNetwork], uuid, add)
	if n, o := ids[ovnk.ExternalIDNetwork], ids[ovnk.ExternalIDLoadBalancerOwner]; n != "" && o != "" {
		if ix.byPart == nil {
			ix.byPart = map[string]map[string]uuidSet{}
		}
		mark(ix.byPart, table, partKey(n, o), uuid, add)
	}
	ix.count(table, ids, add)
	if _, child := parentColumns[table]; child {
		for _, p := range ix.parents[uuid] {
			ix.holds(ids[ovnk.ExternalIDNetwork], p, add)
		}
	}
	mark(ix.byName, table, name, uuid, add) // routers' and switches'
}

// count counts a row in (or out of) pieces.
func (ix *Index) count(table string, ids map[string]string, add bool) {
	network := ids[ovnk.ExternalIDNetwork]
	if network == "" {
		return
	}
	piece := [2]string{ids[ovnk.ExternalIDTopology], ids[ovnk.ExternalIDPiece]}
	byPiece := ix.pieces[table]
	if byPiece == nil {
		byPiece = map[[2]string]map[string]int{}
		ix.pieces[table] = byPiece
	}
	nets := byPiece[piece]
	if nets == nil {
		nets = map[string]int{}
		byPiece[piece] = nets
	}
	if add {
		nets[network]++
		return
	}
	if nets[network]--; nets[network] <= 0 {
		delete(nets, network)
		if len(nets) == 0 {
			delete(byPiece, piece)
		}
		if len(byPiece) == 0 {
			delete(ix.pieces, table)
		}
	}
}

// Networks returns, sorted, the networks with rows of a topology piece in
// the tables.
func (ix *Index) Networks(topology, piece string, tables ...string) []string {
	var out []string
	for _, t := range tables {
		for n := range ix.pieces[t][[2]string{topology, piece}] {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// HasNetwork says whether the network owns a row of a topology piece in one
// of the tables: Networks' answer for one network, without listing them all.
func (ix *Index) HasNetwork(topology, piece, network string, tables ...string) bool {
	for _, t := range tables {
		if _, ok := ix.pieces[t][[2]string{topology, piece}][network]; ok {
			return true
		}
	}
	return false
}

func mark(m map[string]map[string]uuidSet, table, key, uuid string, add bool) {
	if key == "" {
		return
	}
	byKey := m[table]
	if byKey == nil {
		if !add {
			return
		}
		byKey = map[string]uuidSet{}
		m[table] = byKey
	}
	s := byKey[key]
	if add {
		if s == nil {
			s = uuidSet{}
			byKey[key] = s
		}
		s[uuid] = struct{}{}
		return
	}
	delete(s, uuid)
	if len(s) == 0 {
		delete(byKey, key)
	}
}

// Row returns a row as the cache holds it now (the index says where rows
// are; the cache what they hold: the events of one transaction arrive one
// by one, and a plan must not see a router without the port whose row it
// sees). Without rowCacheLayout, the index's model.
// rc is the cache's table.
func (ix *Index) Row(rc *cache.RowCache, table, uuid string) model.Model {
	if !rowCacheLayout.ok {
		return ix.rows[table][uuid]
	}
	if rc == nil {
		return nil
	}
	return cachedModel(rc, uuid)
}

// Scan returns, in UUID order, the rows of a root table a plan for owner
// looks at: those of the owner's network, those named one of names, and
// (parents) those holding the network's child rows. Every row the
// owner owns carries its network, so the rows left out are neither the
// owner's nor have children that are: a plan finds nothing to do on them.
func (ix *Index) Scan(table, network string, names []string, parents bool) []string {
	seen := uuidSet{}
	for u := range ix.byNet[table][network] {
		seen[u] = struct{}{}
	}
	for _, n := range names {
		for u := range ix.byName[table][n] {
			seen[u] = struct{}{}
		}
	}
	if parents {
		for u := range ix.netParents[network] {
			if _, ok := ix.rows[table][u]; ok {
				seen[u] = struct{}{}
			}
		}
	}
	out := make([]string, 0, len(seen))
	for u := range seen {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

// partKey is byPart's key of a network's rows of one k8s.ovn.org/owner.
func partKey(network, owner string) string { return network + "\x00" + owner }

// ScanPart returns, in UUID order, the rows of a root table of the network
// whose k8s.ovn.org/owner is owner: every row a piece narrowed to that pair
// (rows.Owner.Only) may own, as Scan returns every row of the network.
func (ix *Index) ScanPart(table, network, owner string) []string {
	set := ix.byPart[table][partKey(network, owner)]
	out := make([]string, 0, len(set))
	for u := range set {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

// Built says whether the index was ever built from a cache (read-locked).
func (ix *Index) Built() bool { return ix.rows != nil }

// Has says whether the index holds a row (read-locked).
func (ix *Index) Has(table, uuid string) bool {
	_, ok := ix.rows[table][uuid]
	return ok
}

// Identity is the database's NB_Global UUID as the cache showed it ("" none).
func (ix *Index) Identity() string {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.identity
}

// RowRef names one row.
type RowRef struct{ Table, UUID string }

// Held is the model the index holds for a row, nil none (read-locked).
func (ix *Index) Held(table, uuid string) model.Model { return ix.rows[table][uuid] }

// Len is how many rows of a table the index holds (read-locked).
func (ix *Index) Len(table string) int { return len(ix.rows[table]) }
