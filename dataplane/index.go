package dataplane

import (
	"reflect"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/go-logr/logr"
	"github.com/ovn-kubernetes/libovsdb/cache"
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// rowIndex holds the Northbound rows the planner reads, with where to find
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
// rebuild compares the owned rows before and after it, and the database's
// NB_Global, for the healer (resync.go). An Apply waits until the index,
// not only the cache, shows its transaction (waitVisible), so the next plan
// sees it.
//
// The models are the cache's own (see rowCacheLayout), looked up when an
// event names their row: libovsdb replaces a cached model when its row
// changes and never modifies one in place, so a model seen again is the
// same row content (keyMemo relies on it).
type rowIndex struct {
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
	// byName: Logical_Router and Logical_Switch name → UUIDs.
	byName map[string]map[string]uuidSet
	// kids: router or switch UUID → column of children → the children
	// (see links.go: the cache does not hold these columns).
	kids map[string]map[string]uuidSet
	// sorted keeps children's sorted slices, by parent and column, and
	// relate notes the sets' changes in edits, which the next read applies
	// (so a plan of a large router does not sort its ports again). Plans
	// fill both under rw's read
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
	follows  map[colKey]*changeLog
	// pieces: table → topology and piece (external_ids) → network → rows.
	pieces map[string]map[[2]string]map[string]int

	// identity is the database's NB_Global UUID ("" none) as the cache
	// showed it (under mu); identityFrom is the cache's NB_Global table it
	// was read from (written by rebuild).
	identity     string
	identityFrom *cache.RowCache
	// report is what the rebuilds since the last takeReport found (under mu).
	report *healReport
}

// healReport is what a rebuild found changed from the rows indexed before
// it (see healer).
type healReport struct {
	// replaced: the database's NB_Global is another one or gone; networks
	// are those that had owned rows.
	replaced bool
	networks []string
	// lost: network → its owned rows missing or changed in managed columns.
	lost map[string][]string
}

type uuidSet = map[string]struct{}

// rowEvent is a row the cache changed, or (table "") links learnt
// otherwise (links.go), applied in the order they came.
type rowEvent struct {
	table, uuid string
	row         model.Model // nil: deleted
	links       []link
	// unparented: children looked up in vain; all: every link (replaces
	// the index's).
	unparented []string
	all        map[string]map[string]uuidSet
}

// indexedTables are the tables the planner reads (package schema).
var indexedTables = schema.Indexed()

// drainAt is how many pending events make the event handler apply them
// itself (when no plan reads the index).
const drainAt = 4096

func (ix *rowIndex) push(table string, m model.Model, deleted bool) {
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
func (ix *rowIndex) enqueue(e rowEvent) {
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

// OnAdd, OnUpdate and OnDelete make the index a cache.EventHandler.
func (ix *rowIndex) OnAdd(table string, m model.Model)       { ix.push(table, m, false) }
func (ix *rowIndex) OnUpdate(table string, _, m model.Model) { ix.push(table, m, false) }
func (ix *rowIndex) OnDelete(table string, m model.Model)    { ix.push(table, m, true) }
func (ix *rowIndex) dropped()                                { ix.mu.Lock(); ix.lost = true; ix.mu.Unlock() }

// next returns a channel that the next event closes.
func (ix *rowIndex) next() <-chan struct{} {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.changed == nil {
		ix.changed = make(chan struct{})
	}
	return ix.changed
}

// drain applies the pending events (with rw held for writing).
func (ix *rowIndex) drain() {
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

// rowCacheLayout locates the unexported map of models and its lock in
// libovsdb's RowCache (v0.8.1). The index holds the cache's own models and
// not the events' (which the cache clones before it stores them): the
// events' would double the memory the rows take (tests check that the
// layout is found; without it the index holds the events' models).
var rowCacheLayout = func() (l struct {
	ok           bool
	cache, mutex uintptr
}) {
	t := reflect.TypeFor[cache.RowCache]()
	c, okC := t.FieldByName("cache")
	m, okM := t.FieldByName("mutex")
	l.ok = okC && okM && c.Type == reflect.TypeFor[map[string]model.Model]() && m.Type == reflect.TypeFor[sync.RWMutex]()
	l.cache, l.mutex = c.Offset, m.Offset
	return l
}()

// cachedModel returns the model rc holds for uuid (nil: none), not a clone
// (RowCache.Row's): read-only, like RowsShallow's.
func cachedModel(rc *cache.RowCache, uuid string) model.Model {
	mu := (*sync.RWMutex)(unsafe.Add(unsafe.Pointer(rc), rowCacheLayout.mutex))
	rows := (*map[string]model.Model)(unsafe.Add(unsafe.Pointer(rc), rowCacheLayout.cache))
	mu.RLock()
	defer mu.RUnlock()
	return (*rows)[uuid]
}

// read brings the index up to date with the events delivered so far (and
// rebuilds it from api's cache when it must and api is connected), then
// read-locks it; the caller reads it until it calls the returned unlock.
func (ix *rowIndex) read(api client.Client) (unlock func()) {
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
	for tries := 0; !ix.current(api) && up(api) && tries < 3; tries++ {
		if err := ix.rebuild(api); err != nil {
			log.Log.WithName("ovn").Info("reading the Northbound links failed, retrying", "error", err.Error())
		}
	}
	// The cache may already hold rows whose events are not delivered yet
	// (another client's insert or delete that a caller waited for in the
	// cache): wait a moment for them, so that a plan sees what the cache
	// shows (BenchmarkLayer2MultiVTEP1000Pods planned nothing against an
	// index that had not seen another client's thousand ports yet).
	for deadline := time.Now().Add(catchUpWait); ix.current(api) && ix.behind() && time.Now().Before(deadline); {
		select {
		case <-ix.next():
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
func (ix *rowIndex) behind() bool {
	for t, rc := range ix.from {
		if rc != nil && rc.Len() != len(ix.rows[t]) {
			return true
		}
	}
	return false
}

// current says whether the index was built from api's row caches.
func (ix *rowIndex) current(api client.Client) bool {
	if ix.from == nil {
		return false
	}
	c := api.Cache()
	for _, t := range indexedTables {
		if c == nil || c.Table(t) != ix.from[t] {
			return false
		}
	}
	return true
}

// rebuild fills the index from api's cache. The events pending now show
// what the cache already shows; those delivered later are applied on top.
func (ix *rowIndex) rebuild(api client.Client) error {
	ix.mu.Lock()
	ix.pending, ix.lost = nil, false
	oldID := ix.identity
	ix.mu.Unlock()
	old := ix.rows
	ix.from = map[string]*cache.RowCache{}
	ix.rows = map[string]map[string]model.Model{}
	ix.byNet = map[string]map[string]uuidSet{}
	ix.byName = map[string]map[string]uuidSet{}
	ix.pieces = map[string]map[[2]string]map[string]int{}
	ix.setLinks(nil)
	for _, t := range indexedTables {
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
	// The links as the server has them now: at least as new as the
	// cache's rows (the reply comes after the updates before it).
	kids, err := selectLinks(api)
	if err != nil {
		ix.from = nil // built again by the next read
		return err
	}
	ix.setLinks(kids)
	return nil
}

// compare adds to the report what changed from the rows indexed before a
// rebuild (old, of the database whose NB_Global was oldID) to the rows
// indexed now (of newID).
func (ix *rowIndex) compare(old map[string]map[string]model.Model, oldID, newID string) {
	replaced := oldID != "" && newID != oldID
	nets := map[string]bool{}
	lost := map[string][]string{}
	var buf [2][]any
	for t, rows := range old {
		for u, m := range rows {
			_, ids, _, _ := schema.RowFields(t, m)
			net := ids[ExternalIDNetwork]
			if net == "" || ids[ExternalIDPiece] == "" {
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
		ix.report = &healReport{lost: map[string][]string{}}
	}
	r := ix.report
	if replaced {
		r.replaced = true
		for n := range nets {
			r.networks = append(r.networks, n)
		}
		slices.Sort(r.networks)
		r.networks = slices.Compact(r.networks)
	}
	for n, uuids := range lost {
		r.lost[n] = append(r.lost[n], uuids...)
	}
}

// takeReport returns and forgets what the rebuilds found (nil: nothing).
func (ix *rowIndex) takeReport() *healReport {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	r := ix.report
	ix.report = nil
	return r
}

// stale says whether the index must be rebuilt from api's cache: the cache
// was refilled (a reconnect) or dropped events.
func (ix *rowIndex) stale(api client.Client) bool {
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

// noteIdentity follows the database's NB_Global row (which ovn-northd may
// create after the index was built) while the cache is the one the index
// was built from; a refilled cache's is compared by the rebuild.
func (ix *rowIndex) noteIdentity(api client.Client) {
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
func (ix *rowIndex) put(table, uuid string, m model.Model) {
	rows, ok := ix.rows[table]
	old := rows[uuid]
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
		delete(rows, uuid)
	} else {
		rows[uuid] = m
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

// link adds (or removes) a row's entries in byNet, byName and pieces.
func (ix *rowIndex) link(table, uuid string, m model.Model, add bool) {
	_, ids, name, _ := schema.RowFields(table, m)
	mark(ix.byNet, table, ids[ExternalIDNetwork], uuid, add)
	ix.count(table, ids, add)
	if _, child := parentColumns[table]; child {
		for _, p := range ix.parents[uuid] {
			ix.holds(ids[ExternalIDNetwork], p, add)
		}
	}
	mark(ix.byName, table, name, uuid, add) // routers' and switches'
}

// count counts a row in (or out of) pieces.
func (ix *rowIndex) count(table string, ids map[string]string, add bool) {
	network := ids[ExternalIDNetwork]
	if network == "" {
		return
	}
	piece := [2]string{ids[ExternalIDTopology], ids[ExternalIDPiece]}
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

// networks returns, sorted, the networks with rows of a topology piece in
// the tables.
func (ix *rowIndex) networks(topology, piece string, tables ...string) []string {
	var out []string
	for _, t := range tables {
		for n := range ix.pieces[t][[2]string{topology, piece}] {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
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

// row returns a row as the cache holds it now (the index says where rows
// are; the cache what they hold: the events of one transaction arrive one
// by one, and a plan must not see a router without the port whose row it
// sees). Without rowCacheLayout, the index's model.
// rc is the cache's table.
func (ix *rowIndex) row(rc *cache.RowCache, table, uuid string) model.Model {
	if !rowCacheLayout.ok {
		return ix.rows[table][uuid]
	}
	if rc == nil {
		return nil
	}
	return cachedModel(rc, uuid)
}

// scan returns, in UUID order, the rows of a root table a plan for owner
// looks at: those of the owner's network, those named one of names, and
// (parents) those holding the network's child rows. Every row the
// owner owns carries its network, so the rows left out are neither the
// owner's nor have children that are: a plan finds nothing to do on them.
func (ix *rowIndex) scan(table, network string, names []string, parents bool) []string {
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

// changeLog lists the children of a parent's column whose row or link
// changed, in order; start is the position of entries[0].
type changeLog struct {
	start   uint64
	entries []string
}

// end is the log's position after its last entry.
func (cl *changeLog) end() uint64 { return cl.start + uint64(len(cl.entries)) }

// logChange records, when a memo follows the column, that a child's row or
// link changed (with rw held for writing). The log keeps what a memo may
// apply (changedBound of the column's size) and drops older entries: a
// memo further behind is built again.
func (ix *rowIndex) logChange(parent, column, child string) {
	cl := ix.follows[colKey{parent, column}]
	if cl == nil {
		return
	}
	if keep := changedBound(len(ix.kids[parent][column])) + 1; len(cl.entries) >= 2*keep {
		n := len(cl.entries) - keep
		cl.entries = append([]string(nil), cl.entries[n:]...)
		cl.start += uint64(n)
	}
	cl.entries = append(cl.entries, child)
}

// follow starts logging a column's changes, if not yet, and returns its
// log and position now (with rw held for reading).
func (ix *rowIndex) follow(ck colKey) (*changeLog, uint64) {
	ix.followMu.Lock()
	defer ix.followMu.Unlock()
	cl := ix.follows[ck]
	if cl == nil {
		if ix.follows == nil {
			ix.follows = map[colKey]*changeLog{}
		}
		cl = &changeLog{}
		ix.follows[ck] = cl
	}
	return cl, cl.end()
}

// changesSince returns the children of a column whose row or link changed
// after a position of its log (read-only), and the position after them; ok
// is false when the log no longer says: the column is followed anew (every
// link replaced, or the parent deleted) or the entries were dropped.
func (ix *rowIndex) changesSince(ck colKey, cl *changeLog, seq uint64) (changed []string, end uint64, ok bool) {
	ix.followMu.Lock()
	defer ix.followMu.Unlock()
	if ix.follows[ck] != cl || seq < cl.start || seq > cl.end() {
		return nil, 0, false
	}
	return cl.entries[seq-cl.start:], cl.end(), true
}

// dropSink passes libovsdb's log on (to a nil sink: nowhere) and tells the
// index when the cache dropped an event (its event buffer was full): then
// the index is rebuilt.
type dropSink struct {
	inner   logr.LogSink
	dropped func()
}

func newDropSink(inner logr.LogSink, dropped func()) dropSink {
	if cd, ok := inner.(logr.CallDepthLogSink); ok {
		inner = cd.WithCallDepth(1) // the caller's file and line, not dropSink's
	}
	return dropSink{inner, dropped}
}

// droppedEvent is what libovsdb's cache logs when it drops an event.
const droppedEvent = "dropping event because event buffer is full"

func (s dropSink) Init(info logr.RuntimeInfo) {
	if s.inner != nil {
		s.inner.Init(info)
	}
}

// Enabled is true at level 0 (the dropped event's) whatever the inner sink says.
func (s dropSink) Enabled(level int) bool { return level == 0 || s.enabled(level) }

func (s dropSink) enabled(level int) bool { return s.inner != nil && s.inner.Enabled(level) }

func (s dropSink) Info(level int, msg string, kv ...any) {
	if msg == droppedEvent {
		s.dropped()
	}
	if s.enabled(level) {
		s.inner.Info(level, msg, kv...)
	}
}

func (s dropSink) Error(err error, msg string, kv ...any) {
	if s.inner != nil {
		s.inner.Error(err, msg, kv...)
	}
}

func (s dropSink) WithValues(kv ...any) logr.LogSink {
	if s.inner != nil {
		s.inner = s.inner.WithValues(kv...)
	}
	return s
}

func (s dropSink) WithName(name string) logr.LogSink {
	if s.inner != nil {
		s.inner = s.inner.WithName(name)
	}
	return s
}
