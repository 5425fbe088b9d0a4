package base

import (
	"net/netip"
	"slices"

	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// IPFamily is the OVN match prefix of an address's family.
func IPFamily(a netip.Addr) string { return FamilyOf(a.Is6()) }

// FamilyOf is the OVN match prefix of a family (true: IPv6).
func FamilyOf(v6 bool) string {
	if v6 {
		return "ip6"
	}
	return "ip4"
}

// Ptr is a pointer to a copy of v (an optional column's value).
func Ptr[T any](v T) *T { return &v }

// SortedFamilies returns the prefixes IPv4 first.
func SortedFamilies(ps []netip.Prefix) []netip.Prefix {
	out := slices.Clone(ps)
	slices.SortStableFunc(out, func(a, b netip.Prefix) int {
		if a.Addr().Is4() == b.Addr().Is4() {
			return 0
		}
		if a.Addr().Is4() {
			return -1
		}
		return 1
	})
	return out
}

// PrefixStrings are the prefixes as strings.
func PrefixStrings(ps []netip.Prefix) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// StaticRoute is a route; policy "" leaves the column empty, which OVN
// reads as dst-ip, where upstream leaves it empty.
func StaticRoute(prefix, nexthop, policy string, out *string) nbdb.LogicalRouterStaticRoute {
	r := nbdb.LogicalRouterStaticRoute{IPPrefix: prefix, Nexthop: nexthop, OutputPort: out}
	if policy != "" {
		r.Policy = Ptr(policy)
	}
	return r
}
