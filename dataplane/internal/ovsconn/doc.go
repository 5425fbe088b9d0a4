// Package ovsconn is the dataplane's connection to the OVN databases: the
// endpoints (a server, or the leader of a RAFT cluster), TLS with a client
// certificate read again at each reconnect, libovsdb's reconnect with
// backoff, an echo probe of idle connections, the schema-version check that
// refuses a server older than the models, the health check's message and
// the udnkit_ovn_connected and udnkit_ovn_schema_too_old gauges.
//
// Invariants:
//   - A cache is trusted only while Up: libovsdb's Connected stays true
//     while it reconnects, when the cache may miss the last transactions;
//     CurrentEndpoint is empty until the monitors have brought the cache up
//     to date. Plans and index rebuilds wait for Up.
//   - The cache's event handlers (Options.Handlers) are added once, at the
//     first connection, in order; libovsdb keeps them across reconnects.
//   - libovsdb's cache reports a dropped event only in its log: the logger
//     Open gives libovsdb recognises that message (dropsink.go) and calls
//     Options.Dropped, so that the index is rebuilt.
//
// The package knows no table: what to monitor comes from package schema
// through Options.
package ovsconn
