// Package index holds the Northbound rows the planner reads, by network,
// name, topology piece and parent, kept up to date from the client's cache
// events, and the links between routers and switches and their children
// (which the cache does not hold: package schema says why).
//
// Invariants:
//   - Cached rows are compared by pointer. The index holds the cache's own
//     models (layout.go), and libovsdb replaces a cached model whenever its
//     row changes (and refills the cache with new models after a reconnect)
//     and never modifies one in place: a model seen again is the same row
//     content. The planner's memos (package plan) remember what they
//     computed from a row by its model's pointer; nothing in the dataplane
//     may modify a model the cache or the index hands out (Fill and the
//     planner's withChildren work on copies).
//   - Lock order: rw, then mu (Read holds rw while it drains mu's pending
//     events); sortedMu and followMu are taken under rw (read or write) and
//     never the other way round. The cache's event handler takes only mu,
//     so it never waits for a plan; it drains pending events itself only
//     when it gets rw without waiting.
//   - A reader calls Read and keeps the read lock until it calls the
//     returned unlock; the methods documented "read-locked" assume it.
//
// The package imports package schema for every per-table fact, and the
// libovsdb cache's private layout (layout.go) for its one use of unsafe.
package index
