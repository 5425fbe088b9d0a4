package schema

import (
	"cmp"
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"
)

// Spec is one table as the planner diffs it, typed by its model.
type Spec[T any] struct {
	Table string
	// Key identifies a row within its parent (a Root table's: within the
	// table; a Parent's and a Zone table's: its name, "" for a Zone row
	// found only through the row that references it).
	Key func(*T) string
	// UUID and IDs give access to the row's _uuid and external_ids.
	UUID func(*T) *string
	IDs  func(*T) *map[string]string
	// Fields appends to buf the columns udnkit manages (compared and
	// updated), external_ids first.
	Fields func(r *T, buf []any) []any
}

// Kind is what the dataplane does with a table's rows.
type Kind int

const (
	// Root rows (DHCP_Options, Address_Set) are kept until deleted and
	// diffed by their key.
	Root Kind = iota + 1
	// Parent rows (routers, switches) are found by name and hold Child rows
	// in columns. A Child table may hold rows of its own too (a router
	// port's gateway chassis).
	Parent
	// Child rows are held by a parent's column; the server deletes a child
	// no parent holds.
	Child
	// Identity is NB_Global: its one row tells one database from another.
	Identity
	// Watched rows (Southbound) are read, never written.
	Watched
	// Zone rows belong to no network but to the zone: every network's
	// routers use them (the default COPP, its meters and their band). A
	// plan finds them by name (Spec.Key), references them as they are,
	// whoever wrote them, and inserts the missing ones together in one
	// transaction; it never updates or deletes one.
	Zone
)

// Database names, as the models' schemas spell them.
const (
	Northbound = "OVN_Northbound"
	Southbound = "OVN_Southbound"
)

// Table is one table's entry; the file of the table fills it.
type Table struct {
	Name string
	DB   string
	Kind Kind
	// Parent and Column: a Child's parent table and the parent's column
	// that holds its rows; In returns that column of a parent row (of
	// any of its parent tables). AlsoIn are other parent tables whose
	// column of the same name holds rows of the table too (an ACL is a
	// switch's or a port group's): one row is held by one parent.
	Parent, Column string
	AlsoIn         []string
	In             func(parent model.Model) *[]string
	// Members: a Parent's columns of weak references to rows of a Child
	// table that are no children of it (a port group's ports): column →
	// that table. A plan adds and removes its rows' members one by one; a
	// split Apply adds a member with the transaction that inserts it.
	Members map[string]Member
	// Monitor is what the client's cache holds of the table (nil: nothing).
	Monitor func() client.MonitorOption
	// Indexed says the dataplane's index follows the table's rows.
	Indexed bool
	// Managed names the columns udnkit manages (Spec.Fields'), external_ids
	// first. Filled from the Spec.
	Managed []string
	// Row returns a row's UUID, external_ids and (Parent) name; ok is false
	// for a model of another table. Filled from the Spec.
	Row func(model.Model) (uuid string, ids map[string]string, name string, ok bool)
	// Changed says whether a row's change touches its identity or a
	// managed column; buf holds two scratch lists. Filled from the Spec
	// (and a table's own Changed, for what Fields leaves out).
	Changed func(old, cur model.Model, buf *[2][]any) bool
	// Describe is a row's line in `udnctl plan` (rows.Desired.Describe),
	// close to `ovn-nbctl show`; mark follows a router's or switch's name.
	Describe func(m model.Model, mark string) string
	// Group and GroupInsert read what the grouping of a split Apply needs
	// of a Child row: cached (one the plan removes) or in an insert.
	Group       func(model.Model) GroupRow
	GroupInsert func(ovsdb.Row) GroupRow
}

// Member is a column of weak references a Parent's row holds members in
// (Table.Members): the members' table, and the column of a row.
type Member struct {
	Table string
	In    func(model.Model) *[]string
}

// GroupRow is what grouping needs to know of one child row: rows that
// name one another (a port's peer, a route's output port, a next hop inside
// a port's networks) go in one transaction.
type GroupRow struct {
	Table string
	// Target: rows that name this row (Peer, Port) or a next hop inside
	// its Networks join it (router ports).
	Target   bool
	Name     string
	Networks []netip.Prefix
	Peer     string   // a router port's peer
	Port     string   // a switch port's router-port, a route's output_port, a NAT's logical_port
	Nexthops []string // a route's nexthop, a policy's nexthops
}

var registry = map[string]*Table{}

func register(t *Table) *Table {
	if _, dup := registry[t.Name]; dup {
		panic("schema: table " + t.Name + " registered twice")
	}
	registry[t.Name] = t
	return t
}

// planned registers a table the planner diffs with sp: Row and Changed
// come from sp.
func planned[T any, PT interface {
	*T
	model.Model
}](sp Spec[T], t Table) *Table {
	t.Name, t.DB = sp.Table, Northbound
	t.Managed = columnsOf(sp.Fields)
	named := t.Kind == Parent || t.Kind == Zone
	t.Row = func(m model.Model) (string, map[string]string, string, bool) {
		r, ok := m.(PT)
		if !ok {
			return "", nil, "", false
		}
		name := ""
		if named {
			name = sp.Key((*T)(r))
		}
		return *sp.UUID((*T)(r)), *sp.IDs((*T)(r)), name, true
	}
	also := t.Changed // a change of what Fields leaves out (Members)
	t.Changed = func(old, cur model.Model, buf *[2][]any) bool {
		a, b := (*T)(old.(PT)), (*T)(cur.(PT))
		buf[0], buf[1] = sp.Fields(a, buf[0][:0]), sp.Fields(b, buf[1][:0])
		return !SameFields(buf[0], buf[1]) || sp.Key(a) != sp.Key(b) || also != nil && also(old, cur, buf)
	}
	return register(&t)
}

// Lookup returns a table's entry (nil: none).
func Lookup(name string) *Table { return registry[name] }

// Tables returns every table's entry, by name.
func Tables() []*Table {
	out := make([]*Table, 0, len(registry))
	for _, t := range registry {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Indexed lists the tables the index follows, by name.
func Indexed() []string {
	var out []string
	for _, t := range Tables() {
		if t.Indexed {
			out = append(out, t.Name)
		}
	}
	return out
}

// Monitor is what the client monitors of a database's tables.
func Monitor(db string) []client.MonitorOption {
	var out []client.MonitorOption
	for _, t := range Tables() {
		if t.DB == db && t.Monitor != nil {
			out = append(out, t.Monitor())
		}
	}
	return out
}

// Parents lists the tables whose Column holds a Child table's rows:
// Parent, then AlsoIn.
func (t *Table) Parents() []string {
	if t.Kind != Child {
		return nil
	}
	return append([]string{t.Parent}, t.AlsoIn...)
}

// ChildColumns maps each Parent table to its columns of children and their
// tables.
func ChildColumns() map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, t := range Tables() {
		for _, p := range t.Parents() {
			if out[p] == nil {
				out[p] = map[string]string{}
			}
			out[p][t.Column] = t.Name
		}
	}
	return out
}

// ParentColumns maps each Child table to its (first) parent table and
// its column (Parents lists every parent table).
func ParentColumns() map[string][2]string {
	out := map[string][2]string{}
	for _, t := range Tables() {
		if t.Kind == Child {
			out[t.Name] = [2]string{t.Parent, t.Column}
		}
	}
	return out
}

// Children returns the Child tables a Parent table holds, by column.
func Children(parent string) []*Table {
	var out []*Table
	for _, t := range Tables() {
		if slices.Contains(t.Parents(), parent) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b *Table) int { return cmp.Compare(a.Column, b.Column) })
	return out
}

// childrenOf is Children of every table that has some (routers and
// switches, and a child table holding rows of its own), computed once all the
// tables' files have registered (package variables are initialised before
// init functions run).
var childrenOf map[string][]*Table

func init() {
	childrenOf = map[string][]*Table{}
	for _, t := range Tables() {
		if kids := Children(t.Name); len(kids) > 0 {
			childrenOf[t.Name] = kids
		}
	}
}

// ChildUUIDs returns a parent row's children by column (nil for a row of
// another kind of table).
func ChildUUIDs(table string, m model.Model) map[string][]string {
	kids := childrenOf[table]
	if kids == nil {
		return nil
	}
	out := make(map[string][]string, len(kids))
	for _, c := range kids {
		out[c.Column] = *c.In(m)
	}
	return out
}

// ChildTables returns the Child tables a Parent table holds, by column.
func ChildTables(parent string) []*Table { return childrenOf[parent] }

// ChildCount is how many children a parent row holds.
func ChildCount(table string, m model.Model) int {
	n := 0
	for _, c := range childrenOf[table] {
		n += len(*c.In(m))
	}
	return n
}

// FillChildren sets a parent row's columns of children (on a copy the
// caller owns) from children(parent UUID, column).
func FillChildren(table string, m model.Model, children func(parent, column string) []string) {
	kids := childrenOf[table]
	if len(kids) == 0 {
		return
	}
	uuid, _, _, _ := RowFields(table, m)
	for _, c := range kids {
		*c.In(m) = children(uuid, c.Column)
	}
}

// RowFields returns a row's UUID, external_ids and name (routers,
// switches and zone rows) as its table's entry reads them; ok is false for
// a table the planner does not diff.
func RowFields(table string, m model.Model) (uuid string, ids map[string]string, name string, ok bool) {
	t := registry[table]
	if t == nil || t.Row == nil {
		return "", nil, "", false
	}
	return t.Row(m)
}

// columnsOf names the columns fields appends, by their models' ovsdb tags.
func columnsOf[T any](fields func(*T, []any) []any) []string {
	row := new(T)
	v := reflect.ValueOf(row).Elem()
	var out []string
	for _, f := range fields(row, nil) {
		name := "?"
		for i := range v.NumField() {
			if v.Field(i).Addr().Interface() == f {
				name = v.Type().Field(i).Tag.Get("ovsdb")
			}
		}
		out = append(out, name)
	}
	return out
}

// Describe is a row's line in `udnctl plan` (Table.Describe).
func Describe(table string, m model.Model, mark string) string {
	return registry[table].Describe(m, mark)
}

// kv formats a map column for Describe: label{k=v,...}, "" when empty.
func kv(label string, m map[string]string) string {
	if len(m) == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return label + "{" + strings.Join(parts, ",") + "}"
}
