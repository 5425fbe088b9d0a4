// Package rows is the dataplane's vocabulary: the desired Northbound rows of
// one topology piece (Desired, Router, Switch), the owner that marks them
// (Owner) and the external-ID keys udnkit writes. The topology builders fill
// these types; the dataplane client applies them.
//
// Invariants: a row is the piece's exactly when Owner.Owns says so, and
// every row a piece writes carries Owner.IDs; nothing else in the dataplane
// decides ownership. The package holds plain data; it imports the generated
// models and package schema (each row's line in Describe is its table's).
package rows
