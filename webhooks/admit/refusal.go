// Package admit is what udnkit's webhooks share: refusals bounded in size
// (Bounded, Excerpt), the admission answers built from them (Verdict,
// Denied) and the udnkit_admission_decisions_total metric they record.
package admit

import (
	"fmt"
	"regexp"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Bounds of every refusal the webhooks return, so that a refusal is never
// larger than the request that caused it: a request of 900 IPs gets five
// causes and a count, not 900 causes; a 10,000-character value is echoed as
// its first characters and its length, not whole (and not twice, in the
// message and in the cause).
const (
	// MaxCausesPerField is how many errors one field keeps (list entries
	// of one list count as one field); the rest become one "and N more".
	MaxCausesPerField = 5
	// MaxEchoedChars is how much of a value an error echoes.
	MaxEchoedChars = 64
	// maxDetailChars bounds an error's sentence, which may quote a value
	// (a decoder's error, say).
	maxDetailChars = 512
)

// listIndex matches a list index of a field path.
var listIndex = regexp.MustCompile(`\[[0-9]+\]`)

// Bounded returns errs cut to MaxCausesPerField errors per field, in order,
// each field's remainder counted in one error on the field with its list
// indices written [*] ("and 894 more errors like these."), and every echoed
// value and sentence shortened by Excerpt. Every validator passes its
// refusal through it.
func Bounded(errs field.ErrorList) field.ErrorList {
	kept := make(field.ErrorList, 0, len(errs))
	count := map[string]int{}
	var order []string
	first := map[string]*field.Error{}
	for _, e := range errs {
		key := listIndex.ReplaceAllString(e.Field, "[*]")
		if count[key] == 0 {
			order = append(order, key)
			first[key] = e
		}
		count[key]++
		if count[key] > MaxCausesPerField {
			continue
		}
		c := *e
		c.BadValue = excerptValue(e.BadValue)
		c.Detail = excerpt(e.Detail, maxDetailChars)
		kept = append(kept, &c)
	}
	for _, key := range order {
		if n := count[key] - MaxCausesPerField; n > 0 {
			kept = append(kept, &field.Error{Type: first[key].Type, Field: key, BadValue: field.OmitValueType{},
				Detail: fmt.Sprintf("and %d more errors like these.", n)})
		}
	}
	return kept
}

// Excerpt returns s when it has at most MaxEchoedChars characters, else its
// first MaxEchoedChars characters, an ellipsis and its length: "{"name": …
// (10000 characters)".
func Excerpt(s string) string { return excerpt(s, MaxEchoedChars) }

func excerpt(s string, limit int) string {
	n := utf8.RuneCountInString(s)
	if n <= limit {
		return s
	}
	cut, i := 0, 0
	for i = range s {
		if cut == limit {
			break
		}
		cut++
	}
	return fmt.Sprintf("%s… (%d characters)", s[:i], n)
}

// excerptValue shortens a field.Error's BadValue: a string by Excerpt, any
// other value whose text is long by Excerpt of its text.
func excerptValue(v any) any {
	switch v := v.(type) {
	case nil, field.OmitValueType:
		return v
	case string:
		return Excerpt(v)
	default:
		if s := fmt.Sprintf("%v", v); utf8.RuneCountInString(s) > MaxEchoedChars {
			return Excerpt(s)
		}
		return v
	}
}
