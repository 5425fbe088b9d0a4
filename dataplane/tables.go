package dataplane

import "github.com/udnkit/udnkit/dataplane/internal/schema"

// The per-table facts the client and the planner read (package schema).
var (
	// parentColumns: child table → its parent table and column.
	parentColumns = schema.ParentColumns()
	// childColumns: parent table → column of children → child table.
	childColumns = schema.ChildColumns()
	// indexedTables: the tables the index follows.
	indexedTables = schema.Indexed()
)
