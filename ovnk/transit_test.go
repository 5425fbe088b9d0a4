package ovnk

import (
	"net/netip"
	"strings"
	"testing"
)

// An admitted Primary Layer2 network may cover the default transit subnet
// with a very large prefix; choosing the transit subnet must jump past it,
// not walk it /127 by /127 (found by FuzzAdmittedSpecToRows: fd97::/127
// stepping through ::/0 never ended).
func TestChooseTransitSubnetSkipsLargeUsedPrefixes(t *testing.T) {
	p := netip.MustParsePrefix
	for _, tc := range []struct {
		def  string
		used []string
		want string // "" means an error
	}{
		{"fd97::/127", []string{"fd00::/8"}, "fe00::/127"},
		{"fd97::/127", []string{"fd97::/126", "fd00::/8"}, "fe00::/127"},
		{"fd97::/127", []string{"fd97::/128"}, "fd97::2/127"},
		{"fd97::/127", []string{"::/0"}, ""},
		{"fd97::/127", []string{"fc00::/7"}, "fe00::/127"},
		{"100.88.0.0/16", []string{"64.0.0.0/2"}, "128.0.0.0/16"},
		{"100.88.0.0/16", []string{"0.0.0.0/0"}, ""},
	} {
		var used []netip.Prefix
		for _, u := range tc.used {
			used = append(used, p(u))
		}
		got, err := ChooseTransitSubnet(p(tc.def), used)
		switch {
		case tc.want == "" && (err == nil || !strings.Contains(err.Error(), "avoids the network's subnets")):
			t.Errorf("ChooseTransitSubnet(%s, %v) = %v, %v; want an error", tc.def, tc.used, got, err)
		case tc.want != "" && (err != nil || got != p(tc.want)):
			t.Errorf("ChooseTransitSubnet(%s, %v) = %v, %v; want %s", tc.def, tc.used, got, err, tc.want)
		}
	}
}
