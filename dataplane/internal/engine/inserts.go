package engine

import (
	"sync"
	"time"

	"github.com/ovn-kubernetes/libovsdb/cache"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/ovnk"
)

// Foreign inserts. Another client inserting a row that carries udnkit's
// piece and a network makes the planner own it: the network is re-applied
// (foreign_edit), which removes it. The monitor reports every insert as an
// Add event, but so does each fill of the cache (the monitor's copy of the
// tables after every connect), and udnkit's own inserts are sent under
// named UUIDs (the server's UUIDs come with the reply, and ovsdb-server
// sends a transaction's update before its reply). So:
//
//   - an Apply counts, before each transaction, the owned rows it inserts
//     per table and network (ownEdits.note); an Add event of such a row
//     takes one of them, for as long as the Apply's edits are expected;
//   - a fill is told apart by its row caches: libovsdb replaces every
//     table's before filling them, under the cache's lock, and queues the
//     fill's events before any later update's, so the first Add event
//     showing new row caches starts a fill of as many Add events per table
//     as its row cache then holds (refill).

// insKey is the table and network of inserted owned rows.
type insKey struct{ table, network string }

// insertKey is the table and network of an insert of an owned row.
func insertKey(op ovsdb.Operation) (insKey, bool) {
	ids, ok := op.Row["external_ids"].(ovsdb.OvsMap)
	if !ok {
		return insKey{}, false
	}
	piece, _ := ids.GoMap[ovnk.ExternalIDPiece].(string)
	network, _ := ids.GoMap[ovnk.ExternalIDNetwork].(string)
	if piece == "" || network == "" {
		return insKey{}, false
	}
	return insKey{op.Table, network}, true
}

// noteInserts adds to e's expected Add events the inserts of ks (with
// o.mu held).
func (o *ownEdits) noteInserts(e *ownEdit, ks []insKey) {
	if len(ks) == 0 {
		return
	}
	if o.ins == nil {
		o.ins = map[insKey][]*ownEdit{}
	}
	if e.ins == nil {
		e.ins = map[insKey]int{}
	}
	for _, k := range ks {
		if e.ins[k] == 0 {
			o.ins[k] = append(o.ins[k], e)
		}
		e.ins[k]++
	}
}

// consumeInsert takes an Add event of an owned row of k as an Apply's
// own insert, if one expects it.
func (o *ownEdits) consumeInsert(k insKey) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	q := o.ins[k]
	if len(q) == 0 {
		return false
	}
	e := q[0]
	if e.ins[k]--; e.ins[k] == 0 {
		delete(e.ins, k)
		if len(q) == 1 {
			delete(o.ins, k)
		} else {
			o.ins[k] = q[1:]
		}
	}
	return true
}

// sweepInserts forgets the inserts e still expects (its grace ended; with
// o.mu held).
func (o *ownEdits) sweepInserts(e *ownEdit) {
	for k := range e.ins {
		q := o.ins[k]
		for i, x := range q {
			if x == e {
				q = append(q[:i:i], q[i+1:]...)
				break
			}
		}
		if len(q) == 0 {
			delete(o.ins, k)
		} else {
			o.ins[k] = q
		}
	}
	e.ins = nil
}

// refill tells the Add events of a cache fill from those of later inserts.
type refill struct {
	mu sync.Mutex
	// rcs: the row caches of the last fill, by table; left: how many of
	// its Add events per table are still to come.
	rcs  map[string]*cache.RowCache
	left map[string]int
}

// filling says whether an Add event of table belongs to a fill of tc.
func (f *refill) filling(tc *cache.TableCache, table string) bool {
	rc := tc.Table(table)
	f.mu.Lock()
	defer f.mu.Unlock()
	if rc != f.rcs[table] {
		// A new fill: Table waited for it to complete.
		f.rcs, f.left = map[string]*cache.RowCache{}, map[string]int{}
		for _, t := range tc.Tables() {
			if r := tc.Table(t); r != nil {
				f.rcs[t], f.left[t] = r, r.Len()
			}
		}
	}
	if f.left[table] > 0 {
		f.left[table]--
		return true
	}
	return false
}

// inserted notes an owned row inserted by another client while connected.
// An Apply's own insert is taken first: a row the cache held when a fill
// was told apart may be one (its Add event still queued).
func (h *healer) inserted(table string, m model.Model) {
	if h.cache == nil {
		return
	}
	tc := h.cache()
	if tc == nil {
		return
	}
	fill := h.fill.filling(tc, table)
	_, ids, _, ok := schema.RowFields(table, m)
	if !ok || ids[ovnk.ExternalIDPiece] == "" || ids[ovnk.ExternalIDNetwork] == "" {
		return
	}
	if h.own.consumeInsert(insKey{table, ids[ovnk.ExternalIDNetwork]}) || fill {
		return
	}
	h.noteForeign(ids[ovnk.ExternalIDNetwork], time.Now())
}

// noteForeign notes a foreign edit of a network's rows.
func (h *healer) noteForeign(network string, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.foreign == nil {
		h.foreign = map[string]time.Time{}
	}
	h.foreign[network] = now
}

// ForeignEdit asks for a network's foreign-edit resync, as an edit of its
// Northbound rows does: another client changed what udnkit wrote for it
// elsewhere (a Southbound Port_Binding's encap).
func (e *Engine) ForeignEdit(network string) { e.healing.noteForeign(network, time.Now()) }
