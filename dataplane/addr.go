package dataplane

import "net/netip"

// ipFamily is the OVN match prefix of an address's family.
func ipFamily(a netip.Addr) string {
	if a.Is4() {
		return "ip4"
	}
	return "ip6"
}

func ptr[T any](v T) *T { return &v }
