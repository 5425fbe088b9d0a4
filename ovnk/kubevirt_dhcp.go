package ovnk

import "net/netip"

// The DHCP server OVN answers a KubeVirt VM's DHCP requests as (upstream's
// kubevirt/switch.go ARPProxyIPv4/IPv6, the VM's stable default gateway
// across a live migration) and the lease it grants (kubevirt/dhcp.go
// dhcpLeaseTime, in seconds).
var (
	KubeVirtARPProxyIPv4 = netip.MustParseAddr("169.254.1.1")
	KubeVirtARPProxyIPv6 = netip.MustParseAddr("fe80::1")
)

// KubeVirtDHCPLeaseTime is the DHCPv4 lease_time upstream grants VMs.
const KubeVirtDHCPLeaseTime = 3500
