package topology

import (
	"net/netip"

	"github.com/udnkit/udnkit/ovnk"
)

// managementIP is the management port's address of one family (invalid
// when the network has no subnet of it), by upstream's rule.
func (net Layer2Network) managementIP(v6 bool) netip.Addr {
	s, ok := ovnk.FamilyOf(net.Subnets, v6)
	if !ok {
		return netip.Addr{}
	}
	_, mgmts, err := ovnk.Layer2GatewayAndManagement([]netip.Prefix{s}, net.InfrastructureSubnets, net.DefaultGatewayIPs)
	if err != nil {
		return netip.Addr{}
	}
	return mgmts[0]
}

// masqueradeNetworks are the management-port masquerade IPs with their
// subnets' length, for the families MasqueradeBits has.
func (net Layer2Network) masqueradeNetworks() []string {
	var out []string
	for _, ip := range net.MasqueradeIPs {
		family := 4
		if ip.Is6() {
			family = 6
		}
		if bits, ok := net.MasqueradeBits[family]; ok {
			out = append(out, netip.PrefixFrom(ip, bits).String())
		}
	}
	return out
}
