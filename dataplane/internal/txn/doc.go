// Package txn cuts a plan's operations into transactions. A large plan is
// split into a sequence of transactions ("chunks"), each of
// which leaves a consistent topology:
//
//   - a child row (router port, route, policy, NAT, switch port) is inserted
//     in the same transaction as the parent insert or mutation that
//     references it (OVSDB garbage-collects unreferenced non-root rows), and
//     so is a child's own child (a router port's gateway chassis): with the
//     insert of its port, or with the mutation of an existing port;
//   - rows that belong together go in one transaction: a router port with the
//     routes, policies and NATs that use it (output port, logical port, a
//     next hop within its networks on the same router) and with its peer
//     router port or router-type switch port, i.e. one node's rows;
//   - a parent is inserted in the first transaction that adds one of its
//     children, later ones mutate it by the UUID the first one returned;
//   - the zone rows a plan inserts (the default COPP, its meters and their
//     band) go in one transaction, the first, so no transaction leaves half
//     a COPP and the routers naming it find it;
//   - root rows (address sets, DHCP options) are inserted first, so nothing
//     refers to a missing one, and deleted last, as are routers and switches;
//     a router or switch with more children than one transaction takes loses
//     them first, a node's rows at a time; a zone row a plan deletes (a
//     network's load balancer group) goes after them all.
//
// Planning (validation, ownership refusals) is done for the whole plan before
// the first transaction; a failure between transactions leaves a consistent
// prefix that the next Apply completes (the plan is a diff).
//
// Invariants: Split never changes what a plan does, only how many
// transactions carry it; a plan within the bound is one chunk, exactly as
// planned. Which rows are children of which parent column, and which rows
// others join, comes from package schema (Table.Parent, Table.Group): a
// child table without a parent column would be split from its parent. A
// later chunk names a row an earlier chunk inserted (a parent it mutates, a
// COPP a router's copp references) by its named UUID; the caller resolves
// it (Chunk.Resolve) with the UUIDs the server returned, and Committed
// reads the links a committed transaction made with the same names.
package txn
