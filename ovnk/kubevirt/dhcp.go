package kubevirt

import "net/netip"

// The DHCP server OVN answers a VM's DHCP requests as (upstream's
// kubevirt/switch.go ARPProxyIPv4/IPv6, the VM's stable default gateway
// across a live migration) and the lease it grants (kubevirt/dhcp.go
// dhcpLeaseTime, in seconds).
var (
	ARPProxyIPv4 = netip.MustParseAddr("169.254.1.1")
	ARPProxyIPv6 = netip.MustParseAddr("fe80::1")
)

// DHCPLeaseTime is the DHCPv4 lease_time upstream grants VMs.
const DHCPLeaseTime = 3500
