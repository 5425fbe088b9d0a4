package ovnk

import "testing"

// HashForOVN must give upstream's names byte for byte: FNV-1a 64 in decimal after "a".
func TestHashForOVN(t *testing.T) {
	for in, want := range map[string]string{
		"":  "a14695981039346656037", // the FNV-1a 64 offset basis
		"a": "a12638187200555641996",
	} {
		if got := HashForOVN(in); got != want {
			t.Errorf("HashForOVN(%q) = %s, want %s", in, got, want)
		}
	}
	n := NamesFor("ns_blue")
	if n.SubnetsAddressSet("ip4") == n.SubnetsAddressSet("ip6") || n.SubnetsAddressSet("ip4") == NamesFor("ns_red").SubnetsAddressSet("ip4") {
		t.Error("address set names collide across families or networks")
	}
}
