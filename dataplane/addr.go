package dataplane

import "net/netip"

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
