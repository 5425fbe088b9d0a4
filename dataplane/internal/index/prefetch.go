package index

import "github.com/ovn-kubernetes/libovsdb/client"

// prefetch is a select of every link that a connection sends while the
// cache's initial copy is on its way (Prefetch); the next Rebuild uses it
// instead of a select of its own.
type prefetch struct {
	done chan struct{}
	kids map[string]map[string]uuidSet
	err  error
}

// Prefetch starts reading every router's and switch's children from api's
// server now, for the next Rebuild. A connection calls it before it starts
// its monitor: the reply is then read and decoded while the cache is filled
// (or while the server composes the monitor's reply), not after, when the
// first plan rebuilds the index and would wait for it. The channel it
// returns is closed once the reply is in.
//
// The server answers the select and the monitor in the order it got them,
// so the links may be older or newer than the cache's rows: Rebuild keeps
// only the links whose parent and child the cache holds (kept), and a child
// left with no parent is looked up as another client's new child is.
func (ix *Index) Prefetch(api client.Client) <-chan struct{} {
	p := &prefetch{done: make(chan struct{})}
	ix.mu.Lock()
	ix.prefetched = p
	ix.mu.Unlock()
	go func() {
		defer close(p.done)
		p.kids, p.err = selectLinks(api)
	}()
	return p.done
}

// takePrefetched waits for the prefetched links, if any, and returns those
// kept (nil: none prefetched, or the select failed).
func (ix *Index) takePrefetched() map[string]map[string]uuidSet {
	ix.mu.Lock()
	p := ix.prefetched
	ix.prefetched = nil
	ix.mu.Unlock()
	if p == nil {
		return nil
	}
	<-p.done
	if p.err != nil {
		return nil
	}
	return ix.kept(p.kids)
}

// kept drops from kids the parents and children the index has no row of
// (with rw held for writing, after the rows are indexed).
func (ix *Index) kept(kids map[string]map[string]uuidSet) map[string]map[string]uuidSet {
	for parent, cols := range kids {
		table := ix.parentTable(parent)
		if table == "" {
			delete(kids, parent)
			continue
		}
		for col, children := range cols {
			rows := ix.rows[childColumns[table][col]]
			for c := range children {
				if _, ok := rows[c]; !ok {
					delete(children, c)
				}
			}
		}
	}
	return kids
}

// parentTable is the table of a router's or switch's row (UUIDs are unique
// across tables), "" when the index has none.
func (ix *Index) parentTable(uuid string) string {
	for t := range childColumns {
		if _, ok := ix.rows[t][uuid]; ok {
			return t
		}
	}
	return ""
}
