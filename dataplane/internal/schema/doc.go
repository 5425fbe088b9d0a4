// Package schema is what the dataplane knows of each OVSDB table it reads or
// writes, one file per table: the row's identity (Spec.Key), the columns
// udnkit manages (Spec.Fields), where a child row lives (Table.Parent and
// Table.Column), what the cache monitors (Table.Monitor), whether the index
// follows it (Table.Indexed), what transaction splitting groups by
// (Table.Group) and how a row reads in `udnctl plan` (Table.Describe).
// Every per-table list of the dataplane (the monitor, the index's tables,
// the parents' columns of children, the links, the grouping of a split
// Apply, the healer's managed-column check, Describe) is derived from these
// files: adding a table is adding a file (and the builder that fills it).
//
// Invariants:
//   - A Child table names its Parent and the parent's Column; that column
//     is a set of references to the child table in the OVSDB schema, and the
//     child table is not a root table (the server garbage-collects a child no
//     parent holds). A Root or Parent table is a root table.
//   - A Zone table's rows (the default COPP, its meters and their band)
//     carry no owner: plans find them by name and never update or delete
//     one (but a network's load balancer groups, which are the network's by
//     name and go with its last piece); a non-root Zone table is held by a
//     strong reference of another.
//   - Every table the planner reads (Root, Parent, Child, Zone) is
//     monitored and indexed; schema_test.go checks all of this against the generated
//     models' OVSDB schema.
//   - The Northbound monitor leaves out the parents' columns of children
//     (ports, static_routes, policies, nat): a router of a large network has
//     thousands of children, and libovsdb applies every change of such a
//     column by walking and copying the whole set (through reflection), on
//     the one goroutine that also reads every transaction's reply. So a
//     router or switch read from the cache has empty child columns; the
//     index knows each child's parent instead (its links), and fills the
//     columns of the copies it hands out.
//   - SameFields and Fingerprint (compare.go) must agree: see there.
//
// The package imports the generated models and libovsdb only.
package schema
