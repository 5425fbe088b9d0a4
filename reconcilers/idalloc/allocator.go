package idalloc

import (
	"errors"
	"fmt"
	"sort"
	"sync"
)

// ErrExhausted is wrapped by every allocator error that means "no free value".
var ErrExhausted = errors.New("exhausted")

// IDAllocator hands out integers from [min, max] to named owners. It is safe
// for concurrent use. State is rebuilt by Reserve-ing what the cluster's
// annotations record, before anything is allocated.
type IDAllocator struct {
	name     string
	min, max int

	mu      sync.Mutex
	owners  map[int]string
	byOwner map[string]map[int]struct{}
	next    int
}

// NewIDAllocator returns an allocator of [min, max]; name appears in errors.
func NewIDAllocator(name string, min, max int) *IDAllocator {
	return &IDAllocator{
		name: name, min: min, max: max, next: min,
		owners: map[int]string{}, byOwner: map[string]map[int]struct{}{},
	}
}

// Range returns the allocator's bounds.
func (a *IDAllocator) Range() (min, max int) { return a.min, a.max }

// Reserve records that owner holds id. It fails if id is out of range or
// held by another owner; reserving an id the owner already holds is a no-op.
func (a *IDAllocator) Reserve(owner string, id int) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if id < a.min || id > a.max {
		return fmt.Errorf("%s %d is outside [%d, %d]", a.name, id, a.min, a.max)
	}
	if cur, ok := a.owners[id]; ok {
		if cur == owner {
			return nil
		}
		return fmt.Errorf("%s %d is already held by %s", a.name, id, cur)
	}
	a.take(owner, id)
	return nil
}

func (a *IDAllocator) take(owner string, id int) {
	a.owners[id] = owner
	if a.byOwner[owner] == nil {
		a.byOwner[owner] = map[int]struct{}{}
	}
	a.byOwner[owner][id] = struct{}{}
}

// Allocate gives owner a free id, the lowest one at or after the last
// allocation (wrapping around), so released ids are not reused at once.
func (a *IDAllocator) Allocate(owner string) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	size := a.max - a.min + 1
	if len(a.owners) >= size {
		return 0, fmt.Errorf("all %d %ss in [%d, %d] are in use: %w", size, a.name, a.min, a.max, ErrExhausted)
	}
	id := a.next
	for i := 0; i < size; i++ {
		if _, used := a.owners[id]; !used {
			a.take(owner, id)
			a.next = id + 1
			if a.next > a.max {
				a.next = a.min
			}
			return id, nil
		}
		id++
		if id > a.max {
			id = a.min
		}
	}
	return 0, fmt.Errorf("all %d %ss in [%d, %d] are in use: %w", size, a.name, a.min, a.max, ErrExhausted)
}

// Release frees id if owner holds it.
func (a *IDAllocator) Release(owner string, id int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.free(owner, id)
}

// Unallocate takes back the id Allocate just gave owner, for an allocation
// nobody saw (its write failed): the id is freed and, when it is the last
// one handed out, the next Allocate hands it out again, so a retried write
// records the id the failed one would have, as if it had not happened.
// Release keeps the round robin going instead, for ids that were in use.
func (a *IDAllocator) Unallocate(owner string, id int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.free(owner, id) {
		return
	}
	if last := a.next - 1; last == id || (a.next == a.min && id == a.max) {
		a.next = id
	}
}

// free drops id from owner's holdings; false when owner does not hold it.
func (a *IDAllocator) free(owner string, id int) bool {
	if a.owners[id] != owner {
		return false
	}
	delete(a.owners, id)
	delete(a.byOwner[owner], id)
	if len(a.byOwner[owner]) == 0 {
		delete(a.byOwner, owner)
	}
	return true
}

// ReleaseOwner frees every id owner holds.
func (a *IDAllocator) ReleaseOwner(owner string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id := range a.byOwner[owner] {
		delete(a.owners, id)
	}
	delete(a.byOwner, owner)
}

// Owned returns how many ids owner holds.
func (a *IDAllocator) Owned(owner string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.byOwner[owner])
}

// Held returns the ids owner holds, in ascending order.
func (a *IDAllocator) Held(owner string) []int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]int, 0, len(a.byOwner[owner]))
	for id := range a.byOwner[owner] {
		out = append(out, id)
	}
	sort.Ints(out)
	return out
}

// Owner returns who holds id.
func (a *IDAllocator) Owner(id int) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	o, ok := a.owners[id]
	return o, ok
}

// InUse is the number of ids held.
func (a *IDAllocator) InUse() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.owners)
}
