// Package rows is the dataplane's vocabulary: the desired Northbound rows of
// one topology piece (Desired, Router, Switch) and the owner (Owner) that
// marks them with the external-ID keys of ovnk/externalids.go. The topology
// builders fill these types; the dataplane client applies them.
//
// Invariants: a row is the piece's exactly when Owner.Owns says so, and
// every row a piece writes carries Owner.IDs; nothing else in the dataplane
// decides ownership. The package holds plain data; it imports the generated
// models and package schema (each row's line in Describe is its table's).
package rows
