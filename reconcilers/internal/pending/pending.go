// Package pending holds the owners whose last write is not yet verified
// (write-then-verify: a network's IDs, a node's IDs and host subnets).
package pending

import "sync"

// Set is a set of owners, safe for concurrent use; its zero value is empty.
type Set struct {
	mu sync.Mutex
	m  map[string]bool
}

// Has says whether owner is in the set.
func (s *Set) Has(owner string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[owner]
}

// Set adds owner (v) or removes it (!v).
func (s *Set) Set(owner string, v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]bool{}
	}
	if v {
		s.m[owner] = true
	} else {
		delete(s.m, owner)
	}
}
