// Package base holds what every topology builder shares: the topology and
// piece names that group a network's rows (rows.Owner's Topology and
// Piece, written to external_ids), the rows several pieces share (the
// zone's COPP, a Layer3 network's cluster router) and the small helpers of
// addresses and static routes. It imports only rows, nbdb and ovnk, so the builders of package topology
// and of its sub-packages (multivtep, migration) all build on it.
package base
