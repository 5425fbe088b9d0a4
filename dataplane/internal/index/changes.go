package index

// ChangeLog lists the children of a parent's column whose row or link
// changed, in order; start is the position of entries[0].
type ChangeLog struct {
	start   uint64
	entries []string
}

// end is the log's position after its last entry.
func (cl *ChangeLog) end() uint64 { return cl.start + uint64(len(cl.entries)) }

// logChange records, when a memo follows the column, that a child's row or
// link changed (with rw held for writing). The log keeps what a memo may
// apply (Config.KeepChanges of the column's size) and drops older entries: a
// memo further behind is built again.
func (ix *Index) logChange(parent, column, child string) {
	cl := ix.follows[ColKey{Parent: parent, Column: column}]
	if cl == nil {
		return
	}
	if keep := ix.keep(len(ix.kids[parent][column])) + 1; len(cl.entries) >= 2*keep {
		n := len(cl.entries) - keep
		cl.entries = append([]string(nil), cl.entries[n:]...)
		cl.start += uint64(n)
	}
	cl.entries = append(cl.entries, child)
}

// Follow starts logging a column's changes, if not yet, and returns its
// log and position now (with rw held for reading).
func (ix *Index) Follow(ck ColKey) (*ChangeLog, uint64) {
	ix.followMu.Lock()
	defer ix.followMu.Unlock()
	cl := ix.follows[ck]
	if cl == nil {
		if ix.follows == nil {
			ix.follows = map[ColKey]*ChangeLog{}
		}
		cl = &ChangeLog{}
		ix.follows[ck] = cl
	}
	return cl, cl.end()
}

// ChangesSince returns the children of a column whose row or link changed
// after a position of its log (read-only), and the position after them; ok
// is false when the log no longer says: the column is followed anew (every
// link replaced, or the parent deleted) or the entries were dropped.
func (ix *Index) ChangesSince(ck ColKey, cl *ChangeLog, seq uint64) (changed []string, end uint64, ok bool) {
	ix.followMu.Lock()
	defer ix.followMu.Unlock()
	if ix.follows[ck] != cl || seq < cl.start || seq > cl.end() {
		return nil, 0, false
	}
	return cl.entries[seq-cl.start:], cl.end(), true
}

// ColKey names a parent's column of children.
type ColKey struct{ Parent, Column string }
