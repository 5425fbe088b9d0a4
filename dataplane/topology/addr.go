package topology

import (
	"net/netip"
	"slices"

	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// ipFamily is the OVN match prefix of an address's family.
func ipFamily(a netip.Addr) string { return familyOf(a.Is6()) }

// familyOf is the OVN match prefix of a family (true: IPv6).
func familyOf(v6 bool) string {
	if v6 {
		return "ip6"
	}
	return "ip4"
}

func ptr[T any](v T) *T { return &v }

// sortedFamilies returns the prefixes IPv4 first.
func sortedFamilies(ps []netip.Prefix) []netip.Prefix {
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

func prefixStrings(ps []netip.Prefix) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// staticRoute is a route; policy "" leaves the column empty, which OVN
// reads as dst-ip, where upstream leaves it empty.
func staticRoute(prefix, nexthop, policy string, out *string) nbdb.LogicalRouterStaticRoute {
	r := nbdb.LogicalRouterStaticRoute{IPPrefix: prefix, Nexthop: nexthop, OutputPort: out}
	if policy != "" {
		r.Policy = ptr(policy)
	}
	return r
}
