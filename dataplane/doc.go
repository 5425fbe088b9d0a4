// Package dataplane programs OVN for udnkit's networks with libovsdb. It is
// the front of the dataplane: Client (New and Connect, or Dial) holds the
// connections to both OVN databases and applies the desired rows package
// topology builds: Apply makes the database hold exactly those rows, in one
// transaction or, for a large difference, in a sequence of bounded
// transactions that each leave a consistent topology. The client also
// notices when the database loses or changes the rows it owns without an
// Apply of its own (a replaced database, another client's edit or insert),
// or a Southbound binding loses the encap SetPortEncaps set, and asks its
// controllers to re-apply those networks (OnResync).
//
// The layers below, each importing only those before it (layers_test.go
// enforces it):
//
//   - internal/schema: one file per OVSDB table, from which every per-table
//     list is derived;
//   - rows: the desired rows and their owner;
//   - internal/ovsconn: the connections; internal/index: the rows plans read;
//   - internal/plan: the diff; internal/txn: splitting it into transactions;
//   - internal/engine: Apply, per-network locks, fairness, healing, and the
//     dataplane's lock order;
//   - topology: the pure builders of each piece's desired rows.
//
// Client embeds nothing: it forwards to its engine only what callers use
// (apply.go). Callers import rows for the desired rows and topology for the
// builders; the external-ID keys are ovnk's. Config and TLS (conn.go) are
// ovsconn's types under the names the manager's flags fill in.
package dataplane
