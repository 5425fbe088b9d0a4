package schema_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/sbdb"
)

// The tables' files agree with one another and with the OVSDB schemas the
// models are generated from: every table is monitored, every table the
// planner diffs is indexed and knows its rows, every child table names a
// parent column that holds it, and the managed columns exist.
func TestTablesAgreeWithTheOVSDBSchema(t *testing.T) {
	schemas := map[string]ovsdb.DatabaseSchema{schema.Northbound: nbdb.Schema(), schema.Southbound: sbdb.Schema()}
	for _, tb := range schema.Tables() {
		db, ok := schemas[tb.DB]
		if !ok {
			t.Errorf("%s: unknown database %q", tb.Name, tb.DB)
			continue
		}
		ts, ok := db.Tables[tb.Name]
		if !ok {
			t.Errorf("%s: no such table in %s", tb.Name, tb.DB)
			continue
		}
		if tb.Monitor == nil {
			t.Errorf("%s: not monitored (Table.Monitor is nil): the cache holds none of its rows", tb.Name)
		}
		switch tb.Kind {
		case schema.Root, schema.Parent, schema.Child:
			checkPlanned(t, tb, db, ts)
		case schema.Zone:
			checkZone(t, tb, db, ts)
		case schema.Identity, schema.Watched:
			if tb.Indexed {
				t.Errorf("%s: indexed, but the planner never reads it", tb.Name)
			}
		default:
			t.Errorf("%s: no Kind", tb.Name)
		}
	}
}

// checkPlanned checks a table the planner diffs.
func checkPlanned(t *testing.T, tb *schema.Table, db ovsdb.DatabaseSchema, ts ovsdb.TableSchema) {
	t.Helper()
	if !tb.Indexed {
		t.Errorf("%s: not indexed (Table.Indexed is false): plans would not see its rows", tb.Name)
	}
	if !slices.Contains(schema.Indexed(), tb.Name) {
		t.Errorf("%s: missing from schema.Indexed()", tb.Name)
	}
	if tb.Describe == nil {
		t.Errorf("%s: no Describe: udnctl plan could not show its rows", tb.Name)
	}
	if tb.Row == nil || tb.Changed == nil {
		t.Errorf("%s: no Row or Changed (register it with planned)", tb.Name)
	}
	if root := tb.Kind != schema.Child; ts.IsRoot != root {
		t.Errorf("%s: isRoot is %v in the OVSDB schema, Kind %d says %v", tb.Name, ts.IsRoot, tb.Kind, root)
	}
	switch {
	case ts.Column("external_ids") == nil:
		// Owned otherwise (a static MAC binding by its router port).
		if len(tb.Managed) == 0 {
			t.Errorf("%s: no managed columns", tb.Name)
		}
	case len(tb.Managed) == 0 || tb.Managed[0] != "external_ids":
		t.Errorf("%s: managed columns %v do not start with external_ids", tb.Name, tb.Managed)
	}
	for _, col := range tb.Managed {
		if ts.Column(col) == nil {
			t.Errorf("%s: managed column %q is not in the OVSDB schema", tb.Name, col)
		}
	}
	if tb.Kind == schema.Child {
		checkChild(t, tb, db)
	}
}

// checkZone checks a zone table: indexed (a plan finds its rows by name
// and waits until the index shows those it inserted), and a non-root one
// is held by a strong reference of another zone table (the server deletes
// it otherwise; a plan inserts all its zone rows in one transaction).
func checkZone(t *testing.T, tb *schema.Table, db ovsdb.DatabaseSchema, ts ovsdb.TableSchema) {
	t.Helper()
	if !tb.Indexed || !slices.Contains(schema.Indexed(), tb.Name) {
		t.Errorf("%s: a zone table not indexed: plans would not find its rows by name", tb.Name)
	}
	if tb.Describe == nil || tb.Row == nil || tb.Changed == nil {
		t.Errorf("%s: no Describe, Row or Changed (register it with planned)", tb.Name)
	}
	if tb.Parent != "" || tb.Column != "" {
		t.Errorf("%s: a zone table with a parent column %s.%s", tb.Name, tb.Parent, tb.Column)
	}
	if ts.IsRoot {
		return
	}
	for _, other := range schema.Tables() {
		if other.Kind != schema.Zone || other.DB != tb.DB {
			continue
		}
		for _, col := range db.Tables[other.Name].Columns {
			if col.TypeObj == nil || col.TypeObj.Key == nil {
				continue
			}
			ref, _ := col.TypeObj.Key.RefTable()
			if kind, _ := col.TypeObj.Key.RefType(); ref == tb.Name && kind == ovsdb.Strong {
				return
			}
		}
	}
	t.Errorf("%s: not a root table and no zone table holds it by a strong reference: the server would delete its rows", tb.Name)
}

// checkChild checks that a child table's parent column holds its rows.
func checkChild(t *testing.T, tb *schema.Table, db ovsdb.DatabaseSchema) {
	t.Helper()
	if tb.Parent == "" || tb.Column == "" || tb.In == nil {
		t.Errorf("%s: a child table without a parent column (Parent %q, Column %q, In set %v): a split Apply would separate it from its parent",
			tb.Name, tb.Parent, tb.Column, tb.In != nil)
		return
	}
	if tb.Group == nil || tb.GroupInsert == nil {
		t.Errorf("%s: no grouping (Group, GroupInsert): a split Apply would not keep its rows together", tb.Name)
	}
	for _, pt := range tb.Parents() {
		checkParentColumn(t, tb, db, pt)
	}
}

// checkParentColumn checks that one parent table's column holds a child
// table's rows and In returns it.
func checkParentColumn(t *testing.T, tb *schema.Table, db ovsdb.DatabaseSchema, pt string) {
	t.Helper()
	parent := schema.Lookup(pt)
	if parent == nil || parent.Kind != schema.Parent && parent.Kind != schema.Child {
		t.Errorf("%s: parent %s is not a registered Parent or Child table", tb.Name, pt)
		return
	}
	if got := schema.ChildColumns()[pt][tb.Column]; got != tb.Name {
		t.Errorf("%s: ChildColumns()[%s][%s] = %q", tb.Name, pt, tb.Column, got)
	}
	col := db.Tables[pt].Column(tb.Column)
	if col == nil || col.TypeObj == nil || col.TypeObj.Key == nil {
		t.Errorf("%s: %s has no column %q", tb.Name, pt, tb.Column)
		return
	}
	if ref, _ := col.TypeObj.Key.RefTable(); ref != tb.Name {
		t.Errorf("%s: %s.%s refers to %q", tb.Name, pt, tb.Column, ref)
	}
	// In returns the parent model's field of that column.
	m := newModel(t, pt)
	got := reflect.ValueOf(tb.In(m)).Pointer()
	v := reflect.ValueOf(m).Elem()
	for i := range v.NumField() {
		if v.Type().Field(i).Tag.Get("ovsdb") == tb.Column && v.Field(i).Addr().Pointer() != got {
			t.Errorf("%s: In does not return %s's %s field", tb.Name, pt, tb.Column)
		}
	}
}

func newModel(t *testing.T, table string) model.Model {
	t.Helper()
	m, err := nbdb.FullDatabaseModel()
	if err != nil {
		t.Fatal(err)
	}
	typ, ok := m.Types()[table]
	if !ok {
		t.Fatalf("no model of %s", table)
	}
	return reflect.New(typ.Elem()).Interface().(model.Model)
}

// Every model the desired rows (package rows) hold has its table's file:
// a table added to Desired without one fails here.
func TestTheDesiredRowsTablesAreRegistered(t *testing.T) {
	m, err := nbdb.FullDatabaseModel()
	if err != nil {
		t.Fatal(err)
	}
	tables := map[reflect.Type]string{}
	for name, typ := range m.Types() {
		tables[typ.Elem()] = name
	}
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		switch typ.Kind() {
		case reflect.Slice, reflect.Pointer:
			walk(typ.Elem())
			return
		case reflect.Struct:
		default:
			return
		}
		if seen[typ] {
			return
		}
		seen[typ] = true
		if name, ok := tables[typ]; ok {
			if schema.Lookup(name) == nil {
				t.Errorf("the desired rows hold %s rows, but %s has no file in package schema", name, name)
			}
			return
		}
		for i := range typ.NumField() {
			walk(typ.Field(i).Type)
		}
	}
	walk(reflect.TypeFor[rows.Desired]())
	if len(seen) < 10 {
		t.Fatalf("walked only %d types of rows.Desired", len(seen))
	}
}
