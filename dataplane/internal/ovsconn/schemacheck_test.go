package ovsconn

import "testing"

func TestOlderVersion(t *testing.T) {
	for _, tc := range []struct {
		a, b  string
		older bool
	}{
		{"7.0.0", "7.18.0", true},
		{"7.11.0", "7.18.0", true},
		{"7.18.0", "7.18.0", false},
		{"7.18.1", "7.18.0", false},
		{"7.9.0", "7.18.0", true}, // numeric, not lexical
		{"8.0.0", "7.18.0", false},
		{"6.99.99", "7.0.0", true},
		{"7.18", "7.18.0", true}, // unparsable counts as older
		{"x.18.0", "7.18.0", true},
	} {
		if got := olderVersion(tc.a, tc.b); got != tc.older {
			t.Errorf("olderVersion(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.older)
		}
	}
}
