package nbtest

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"
)

// snapshot renders every row of every table c's cache holds.
func snapshot(tb testing.TB, c client.Client) Rows {
	tb.Helper()
	r := renderer{c: c, dbModel: c.Cache().DatabaseModel(), schema: c.Schema()}
	out := Rows{}
	for _, table := range sortedKeys(r.schema.Tables) {
		rc := c.Cache().Table(table)
		if rc == nil {
			continue
		}
		for _, m := range rc.Rows() {
			s, err := r.row(table, m, 0)
			if err != nil {
				tb.Fatal(err)
			}
			out[table] = append(out[table], s)
		}
		sort.Strings(out[table])
	}
	return out
}

// renderer renders a row's columns but _uuid, each reference as the
// referred row (so two databases that hold the same rows under different
// UUIDs render alike).
type renderer struct {
	c       client.Client
	dbModel model.DatabaseModel
	schema  ovsdb.DatabaseSchema
}

// maxDepth bounds the references followed (the schema has no cycles of
// strong references; weak ones could loop).
const maxDepth = 6

func (r renderer) row(table string, m model.Model, depth int) (string, error) {
	info, err := r.dbModel.NewModelInfo(m)
	if err != nil {
		return "", err
	}
	ts := r.schema.Tables[table]
	var cols []string
	for _, col := range sortedKeys(ts.Columns) {
		v, err := info.FieldByColumn(col)
		if err != nil {
			return "", err
		}
		s, err := r.value(ts.Columns[col], reflect.ValueOf(v), depth)
		if err != nil {
			return "", err
		}
		cols = append(cols, col+"="+s)
	}
	return "{" + strings.Join(cols, " ") + "}", nil
}

// value renders one column's value: sets sorted, maps by key, references
// (keys or values of a column that refers to a table) as the referred row.
func (r renderer) value(cs *ovsdb.ColumnSchema, v reflect.Value, depth int) (string, error) {
	var keyRef, valueRef string
	if cs.TypeObj != nil {
		keyRef = refTable(cs.TypeObj.Key)
		valueRef = refTable(cs.TypeObj.Value)
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return "[]", nil
		}
		return r.value(cs, v.Elem(), depth)
	case reflect.Slice:
		var items []string
		for i := 0; i < v.Len(); i++ {
			s, err := r.atom(keyRef, v.Index(i), depth)
			if err != nil {
				return "", err
			}
			items = append(items, s)
		}
		sort.Strings(items)
		return "[" + strings.Join(items, ",") + "]", nil
	case reflect.Map:
		var items []string
		for _, k := range v.MapKeys() {
			ks, err := r.atom(keyRef, k, depth)
			if err != nil {
				return "", err
			}
			vs, err := r.atom(valueRef, v.MapIndex(k), depth)
			if err != nil {
				return "", err
			}
			items = append(items, ks+":"+vs)
		}
		sort.Strings(items)
		return "{" + strings.Join(items, ",") + "}", nil
	default:
		return r.atom(keyRef, v, depth)
	}
}

// atom renders one atom: a reference to ref (when set) as the row it
// refers to, anything else as it prints.
func (r renderer) atom(ref string, v reflect.Value, depth int) (string, error) {
	if ref == "" || v.Kind() != reflect.String {
		return fmt.Sprintf("%q", fmt.Sprint(v.Interface())), nil
	}
	uuid := v.String()
	rc := r.c.Cache().Table(ref)
	if depth >= maxDepth || rc == nil {
		return ref + ":?", nil
	}
	m := rc.Row(uuid)
	if m == nil {
		return ref + ":missing", nil
	}
	s, err := r.row(ref, m, depth+1)
	return ref + s, err
}

func refTable(b *ovsdb.BaseType) string {
	if b == nil || b.Type != ovsdb.TypeUUID {
		return ""
	}
	t, err := b.RefTable()
	if err != nil {
		return ""
	}
	return t
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
