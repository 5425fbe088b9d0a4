package schema

import (
	"hash/maphash"
	"maps"
	"reflect"
	"slices"
)

// Two functions decide whether a desired row equals its cached row, and
// they must agree: SameFields compares the managed columns of stamped rows
// (package plan sets the owner's external_ids on a desired row before it
// compares it), Fingerprint hashes them the way SameFields compares (sets
// and maps unordered, an empty map as a missing one, an unset optional
// value apart from every set one). The planner takes a desired row whose
// fingerprint matches the one last found equal as equal without comparing
// it (plan's column memo), so a column type one of them treats differently
// from the other makes the plan skip a real difference or redo an equal
// row forever. A column type added to one is added to the other;
// compare_test.go checks them against each other.

// SameFields compares managed columns the way OVSDB stores them: sets are
// unordered, an empty map equals a missing one, optional values compare by value.
func SameFields(a, b []any) bool {
	for i := range a {
		if !SameField(a[i], b[i]) {
			return false
		}
	}
	return true
}

// SameField compares one managed column: the column types of the rows udnkit
// writes without reflection (it is the planner's inner loop: every desired row
// of a network is compared on every Apply), any other through sameValue.
func SameField(a, b any) bool {
	switch x := a.(type) {
	case *map[string]string:
		y := b.(*map[string]string)
		return maps.Equal(*x, *y) // nil and empty compare equal, as OVSDB stores them
	case *[]string:
		y := b.(*[]string)
		if len(*x) != len(*y) {
			return false
		}
		if slices.Equal(*x, *y) {
			return true
		}
		xs, ys := slices.Clone(*x), slices.Clone(*y)
		slices.Sort(xs)
		slices.Sort(ys)
		return slices.Equal(xs, ys)
	case **string:
		y := b.(**string)
		if *x == nil || *y == nil {
			return *x == nil && *y == nil
		}
		return **x == **y
	case *string:
		return *x == *b.(*string)
	case *int:
		return *x == *b.(*int)
	}
	return sameValue(reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem())
}

func sameValue(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.Map:
		if a.Len() == 0 && b.Len() == 0 {
			return true
		}
		return reflect.DeepEqual(a.Interface(), b.Interface())
	case reflect.Slice:
		if a.Len() != b.Len() {
			return false
		}
		x, okx := a.Interface().([]string)
		y, oky := b.Interface().([]string)
		if okx && oky {
			x, y = slices.Clone(x), slices.Clone(y)
			slices.Sort(x)
			slices.Sort(y)
			return slices.Equal(x, y)
		}
		return reflect.DeepEqual(a.Interface(), b.Interface())
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return sameValue(a.Elem(), b.Elem())
	default:
		return reflect.DeepEqual(a.Interface(), b.Interface())
	}
}

// SameSet says whether two sets of strings (UUIDs) hold the same ones.
func SameSet(a, b []string) bool { return SameField(&a, &b) }

// SameMap says whether a and b are one map (not merely equal ones).
func SameMap(a, b map[string]string) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// fpSeed seeds the fingerprints (one process's memos compare them).
var fpSeed = maphash.MakeSeed()

// Fingerprint hashes a row's managed columns (fields, external_ids first,
// as Spec.Fields gives them) the way SameFields compares them once the
// planner has stamped the owner's external_ids on the row (owner's entries
// set on its external_ids): sets and maps unordered, an empty map as a
// missing one, an unset optional value apart from every set one. A row
// hashes alike stamped or not, so a plan recognises an unchanged desired
// row without stamping it. ownerFP is MapFP(owner). ok is false for a
// column type it does not know (the row is then always compared). Two rows
// with equal fingerprints are taken as equal: with 64 bits, a wrong match
// has a probability of 2⁻⁶⁴ per comparison.
func Fingerprint(fields []any, owner map[string]string, ownerFP uint64) (fp uint64, ok bool) {
	mix := func(tag, v uint64) { fp = maphash.Comparable(fpSeed, [3]uint64{fp, tag, v}) }
	for i, f := range fields {
		switch x := f.(type) {
		case *map[string]string:
			if i == 0 {
				mix(1, stampedFP(*x, owner, ownerFP))
				continue
			}
			mix(1, MapFP(*x))
		case *[]string:
			var sum uint64
			for _, s := range *x {
				sum += maphash.String(fpSeed, s)
			}
			mix(2, sum+uint64(len(*x)))
		case **string:
			if *x == nil {
				mix(3, 0)
				continue
			}
			mix(4, maphash.String(fpSeed, **x))
		case *string:
			mix(5, maphash.String(fpSeed, *x))
		case *int:
			mix(6, uint64(*x))
		default:
			return 0, false
		}
	}
	return fp, fp != 0
}

// stampedFP is MapFP of ids with owner's entries set on them, without
// building that map: owner's entries (ownerFP) and the others of ids.
func stampedFP(ids, owner map[string]string, ownerFP uint64) uint64 {
	if len(ids) == 0 || SameMap(ids, owner) {
		return ownerFP
	}
	sum := ownerFP
	for k, v := range ids {
		if _, ok := owner[k]; !ok {
			sum += entryFP(k, v)
		}
	}
	return sum
}

// MapFP is an order-independent hash of a map's entries.
func MapFP(m map[string]string) uint64 {
	var sum uint64
	for k, v := range m {
		sum += entryFP(k, v)
	}
	return sum
}

func entryFP(k, v string) uint64 { return maphash.Comparable(fpSeed, [2]string{k, v}) }
