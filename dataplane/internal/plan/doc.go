// Package plan computes the operations that make the Northbound database
// hold one topology piece's desired rows (rows.Desired): it diffs them
// against the cached rows the index says the piece may own, creating what
// is missing, updating what differs in a managed column (package schema)
// and removing the piece's rows that are no longer desired. Rows the piece
// does not own (rows.Owner.Owns) are never touched; a desired router or
// switch that exists and is another's is refused unless it is Ref or
// Shared. A child's own children (a router port's gateway chassis) are
// diffed with the same two diffs, under the port's UUID: a port the plan
// inserts holds its new ones in its insert, an existing port's column is
// mutated. Zone rows (a router's COPP: rows.Copp) are owned by no piece: a
// plan references the existing ones and inserts the missing ones, and
// never updates or deletes one; zone meters (rows.ZoneMeter) and load
// balancer groups (which have no external_ids) are zone rows too, except
// that the plan of a piece that goes away (not a part of one:
// rows.Owner.Only) deletes its network's load balancer groups (ovnk names)
// once no router, switch or other piece's load balancer keeps them.
//
// Some columns hold members rather than children (schema.Table.Members,
// and a router's or switch's load_balancer_group, a load balancer group's
// load_balancer): weak or strong references to rows the column does not
// own. A plan adds the members the piece names and takes out only those
// the piece owns (on a row the piece owns, every one it no longer names),
// never rewriting the column, so other pieces' members stay. Names are
// resolved to the named UUID of an insert of the same plan or to the
// cached row's UUID; a name that is neither fails the plan, except a port
// group's port, which is left out (Planner.MemberPorts: it may be another
// writer's, not created yet; package engine adds it when it appears). Static MAC
// bindings have no external_ids either: a binding is the piece's when its
// logical_port is one of the piece's router ports. Package refs plans
// these rows the piece names rather than holds (zone rows, members,
// bindings) for the plan; this package diffs routers, switches, port
// groups, their children and root rows.
//
// Invariants:
//   - One diff, two implementations that must agree: children reads every
//     child of a parent's column, rememberedChildren (colmemo.go) reads only
//     what the index says changed since the column's memo was built, and
//     skips a desired row whose fingerprint matches the one last found
//     equal. For any database and desired rows they emit the same
//     operations; a test compares every incremental plan with the full diff
//     (Full), and schema.SameFields and schema.Fingerprint agree (package
//     schema says how). A change to one diff is made to the other.
//   - Memos key what they computed by a cached model's pointer (package
//     index states why that is sound); a plan never modifies a model the
//     cache or the index handed out.
//   - A plan reads the index under its read lock (index.Read) and the
//     caller holds the network's lock, so two plans of one network never
//     interleave and a network's memo is used by one plan at a time.
//   - A decision that needs every child of a parent (whether a shared router
//     still holds another piece's rows, which of two same-named routers to
//     keep) is made only once the parent of every child is known
//     (errUnlinked makes the caller look the rest up first).
package plan
