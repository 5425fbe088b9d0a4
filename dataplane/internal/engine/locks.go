package engine

import (
	"slices"
	"sync"
)

// KeyLocks is one mutex per key (a network), existing only while someone
// holds or waits for it; the zero value is ready. Different keys never wait
// for each other.
type KeyLocks struct {
	mu    sync.Mutex
	locks map[string]*keyLock
}

type keyLock struct {
	sync.Mutex
	users int
}

// Waiting is how many wait for key (for tests).
func (l *KeyLocks) Waiting(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if nl := l.locks[key]; nl != nil {
		return nl.users - 1
	}
	return 0
}

// Lock locks key and returns its unlock.
func (l *KeyLocks) Lock(key string) func() {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*keyLock{}
	}
	nl := l.locks[key]
	if nl == nil {
		nl = &keyLock{}
		l.locks[key] = nl
	}
	nl.users++
	l.mu.Unlock()
	nl.Lock()
	return func() {
		nl.Unlock()
		l.mu.Lock()
		if nl.users--; nl.users == 0 {
			delete(l.locks, key)
		}
		l.mu.Unlock()
	}
}

// LockAll locks every key, in sorted order (so two callers holding some of
// the same keys never wait for each other in a cycle), and returns their
// unlock. keys must be sorted and distinct.
func (l *KeyLocks) LockAll(keys []string) func() {
	unlocks := make([]func(), 0, len(keys))
	for _, k := range keys {
		unlocks = append(unlocks, l.Lock(k))
	}
	return func() {
		for _, u := range slices.Backward(unlocks) {
			u()
		}
	}
}
