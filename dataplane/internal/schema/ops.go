package schema

import "github.com/ovn-kubernetes/libovsdb/ovsdb"

// How rows and columns appear in OVSDB operations.

// UUIDs lists the UUIDs (real or named) of a column value.
func UUIDs(v any) []string {
	switch x := v.(type) {
	case ovsdb.UUID:
		return []string{x.GoUUID}
	case ovsdb.OvsSet:
		var out []string
		for _, e := range x.GoSet {
			if u, ok := e.(ovsdb.UUID); ok {
				out = append(out, u.GoUUID)
			}
		}
		return out
	}
	return nil
}

// Strings lists the strings of a column value.
func Strings(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case ovsdb.OvsSet:
		var out []string
		for _, e := range x.GoSet {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// first is the first string of a column value ("" none).
func first(v any) string {
	for _, s := range Strings(v) {
		return s
	}
	return ""
}

// Set is the OVSDB set of UUIDs (real or named).
func Set(uuids ...string) ovsdb.OvsSet {
	s := ovsdb.OvsSet{GoSet: make([]any, 0, len(uuids))}
	for _, u := range uuids {
		s.GoSet = append(s.GoSet, ovsdb.UUID{GoUUID: u})
	}
	return s
}

// WhereUUID is the UUID an operation's where clause selects by _uuid.
func WhereUUID(op ovsdb.Operation) string {
	for _, w := range op.Where {
		if u, ok := w.Value.(ovsdb.UUID); ok && w.Column == "_uuid" && w.Function == ovsdb.ConditionEqual {
			return u.GoUUID
		}
	}
	return ""
}

// CopyRow is a shallow copy of an operation's row.
func CopyRow(row ovsdb.Row) ovsdb.Row {
	out := make(ovsdb.Row, len(row))
	for k, v := range row {
		out[k] = v
	}
	return out
}

// Deref is an optional string's value ("" unset).
func Deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
