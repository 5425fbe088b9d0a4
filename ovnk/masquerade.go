package ovnk

import (
	"fmt"
	"net/netip"
)

// udnMasqueradeIPBase is upstream's userDefinedNetworkMasqueradeIPBase
// (pkg/generator/udn/masquerade_ips.go).
const udnMasqueradeIPBase = 10

// UDNMasqueradeIPs are a user-defined network's masquerade addresses in one
// masquerade subnet, as upstream's allocateMasqueradeIPs computes them: the
// gateway router's at offset 10+2·ID−1 and the management port's at
// 10+2·ID (network ID 1 in 169.254.0.0/17: 169.254.0.11 and 169.254.0.12).
// The management port's is the external IP of the network's management-port SNAT.
func UDNMasqueradeIPs(masqueradeSubnet netip.Prefix, networkID int) (gatewayRouter, managementPort netip.Addr, err error) {
	if networkID < 1 {
		return netip.Addr{}, netip.Addr{}, fmt.Errorf("masquerade IPs: network ID %d must be at least 1", networkID)
	}
	off := uint64(udnMasqueradeIPBase + 2*networkID)
	if gatewayRouter, err = AddrAt(masqueradeSubnet, off-1); err != nil {
		return netip.Addr{}, netip.Addr{}, fmt.Errorf("masquerade IPs of network ID %d: %w", networkID, err)
	}
	if managementPort, err = AddrAt(masqueradeSubnet, off); err != nil {
		return netip.Addr{}, netip.Addr{}, fmt.Errorf("masquerade IPs of network ID %d: %w", networkID, err)
	}
	return gatewayRouter, managementPort, nil
}

// HostMasqueradeIP is the host's masquerade address in a masquerade subnet
// (its second address, upstream's V4HostMasqueradeIP/V6HostMasqueradeIP as
// AllocateV4MasqueradeIPs derives them: 169.254.0.2 in 169.254.0.0/17).
func HostMasqueradeIP(masqueradeSubnet netip.Prefix) (netip.Addr, error) {
	return AddrAt(masqueradeSubnet.Masked(), 2)
}

// DummyNextHopMasqueradeIP is the next hop a gateway router sends
// host-bound service replies to (the subnet's fourth address, upstream's
// V4DummyNextHopMasqueradeIP: 169.254.0.4 in 169.254.0.0/17).
func DummyNextHopMasqueradeIP(masqueradeSubnet netip.Prefix) (netip.Addr, error) {
	return AddrAt(masqueradeSubnet.Masked(), 4)
}

// ServiceHairpinMasqueradeIP is the address a load balancer SNATs hairpin
// traffic to (a pod reaching itself through a Service): the masquerade
// subnet's fifth address, upstream's V4OVNServiceHairpinMasqueradeIP and
// V6OVNServiceHairpinMasqueradeIP (169.254.0.5 in 169.254.0.0/17, fd69::5
// in fd69::/112), which every network's load balancers share.
func ServiceHairpinMasqueradeIP(masqueradeSubnet netip.Prefix) (netip.Addr, error) {
	return AddrAt(masqueradeSubnet.Masked(), 5)
}

// HostETPLocalMasqueradeIP is the vip a node's switch load balancer adds
// for a NodePort Service with externalTrafficPolicy Local: the masquerade
// subnet's third address, upstream's V4HostETPLocalMasqueradeIP and
// V6HostETPLocalMasqueradeIP (169.254.0.3 in 169.254.0.0/17).
func HostETPLocalMasqueradeIP(masqueradeSubnet netip.Prefix) (netip.Addr, error) {
	return AddrAt(masqueradeSubnet.Masked(), 3)
}
