package ovnk

import (
	"net/netip"
	"testing"
)

// Upstream's own examples: network ID 1 -> .11/.12, ID 2 -> .13/.14; IPv6 alike.
func TestUDNMasqueradeIPs(t *testing.T) {
	for _, c := range []struct {
		subnet string
		id     int
		gr, mp string
	}{
		{"169.254.0.0/17", 1, "169.254.0.11", "169.254.0.12"},
		{"169.254.0.0/17", 2, "169.254.0.13", "169.254.0.14"},
		{"fd69::/112", 1, "fd69::b", "fd69::c"},
	} {
		gr, mp, err := UDNMasqueradeIPs(netip.MustParsePrefix(c.subnet), c.id)
		if err != nil || gr.String() != c.gr || mp.String() != c.mp {
			t.Errorf("%s id %d: got %v %v %v, want %s %s", c.subnet, c.id, gr, mp, err, c.gr, c.mp)
		}
	}
	if _, _, err := UDNMasqueradeIPs(netip.MustParsePrefix("169.254.0.0/29"), 1); err == nil {
		t.Error("a /29 has no offset 12, want an error")
	}
	if _, _, err := UDNMasqueradeIPs(netip.MustParsePrefix("169.254.0.0/17"), 0); err == nil {
		t.Error("network ID 0, want an error")
	}
}
