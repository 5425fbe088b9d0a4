// Package engine applies one topology piece's desired rows to the
// Northbound database: it takes the network's lock (serving together the
// network's Applies that waited for it, group.go), plans (package plan),
// cuts the plan into transactions (package txn), sends them with fairness
// between networks (fair.go), waits until the client's index shows them,
// and heals: it notices owned rows that the database lost or another client
// changed, and asks the controllers to re-apply their networks (heal.go),
// and applies again the rows whose port groups name a port that has just
// appeared (members.go).
//
// Lock order, for the whole dataplane (a lock is only ever taken while
// holding those above it, never one above while holding one below):
//
//  1. applying: the network's lock (KeyLocks, by the network's OVN name
//     prefix), held by the Apply leading the network's group for its whole
//     round: unless, plans, transactions and waitVisible of every Apply it
//     serves. Applies of different networks never wait for each other
//     here. KeyLocks' own mutex is held only to find the key's lock.
//     Under it, an Apply whose plan inserts zone rows (a missing default
//     COPP) takes zone, plans again and holds it until it returns: the
//     Applies of different networks wait for each other only then.
//     RemoveUnless (remove.go) holds several networks' locks, taken in
//     sorted order (as zone's), and never zone: an Apply holds one
//     network's lock, so no two holders wait for each other in a cycle.
//     The removals it leaves to an Apply of their own run after it has
//     released them.
//  2. ahead.mu (fair.go): counted in and out briefly; yield waits with no
//     lock held.
//  3. the index's locks (package index states their order), taken by plans
//     and waitVisible through index.Read; the index reads the cache's rows
//     under the libovsdb cache's own lock, innermost.
//  4. groups.mu (group.go: to queue, take or hand over a network's waiting
//     Applies), healing.mu, healing.own.mu and healing.members.mu: leaves, held only
//     to read or update their maps, never while taking another lock; the
//     cache's event handler (healer) takes only these.
//
// Invariants:
//   - An Apply plans only against a cache the monitor has resynchronised
//     (ovsconn.WaitUp) and returns only once the index shows what it
//     committed (waitVisible): an immediate second Apply plans nothing.
//   - Everything is validated and planned before the first transaction; a
//     split Apply that fails after k transactions leaves a consistent
//     prefix that the next Apply completes.
//   - Hooks are the tests' only way in (New): production passes none.
package engine
