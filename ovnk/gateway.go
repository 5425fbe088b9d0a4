package ovnk

import (
	"fmt"
	"net/netip"
	"slices"
)

// Layer2GatewayAndManagement returns, per subnet of a Primary Layer2 network
// (in order), its gateway and management-port addresses, by upstream's rule
// (util's gateway/management IP computation for Layer2 with
// preconfigured-udn-addresses-enable): the gateway is the subnet family's
// defaultGatewayIP, else the first free address of the family's
// infrastructureSubnets, else the subnet's first address (.1); the
// management port is the first free infrastructure address after that, else
// the second address (.2), or .1 when the gateway is .2. "Free" skips the
// network address, the IPv4 broadcast address and the gateway.
//
// With the feature off OVN-Kubernetes ignores defaultGatewayIPs and
// infrastructureSubnets (they are not in the NetConf): pass none, and the
// gateway is .1 and the management port .2.
func Layer2GatewayAndManagement(subnets, infra []netip.Prefix, defaultGateways []netip.Addr) (gateways, management []netip.Addr, err error) {
	for _, s := range subnets {
		s = s.Masked()
		v6 := s.Addr().Is6()
		exclude := []netip.Addr{s.Addr()}
		if !v6 {
			exclude = append(exclude, LastAddr(s))
		}
		gw, _ := AddrOfFamily(defaultGateways, v6)
		var famInfra []netip.Prefix
		for _, p := range infra {
			if p.Addr().Is6() == v6 {
				famInfra = append(famInfra, p.Masked())
			}
		}
		var mgmt netip.Addr
		if len(famInfra) > 0 {
			if gw.IsValid() {
				exclude = append(exclude, gw)
			} else if gw = firstFree(famInfra, exclude); gw.IsValid() {
				exclude = append(exclude, gw)
			}
			mgmt = firstFree(famInfra, exclude)
		}
		if !gw.IsValid() {
			if gw, err = AddrAt(s, 1); err != nil {
				return nil, nil, fmt.Errorf("subnet %s has no gateway address: %w", s, err)
			}
		}
		if !mgmt.IsValid() {
			if mgmt, err = AddrAt(s, 2); err != nil {
				return nil, nil, fmt.Errorf("subnet %s has no management address: %w", s, err)
			}
			if mgmt == gw {
				mgmt, _ = AddrAt(s, 1)
			}
		}
		gateways, management = append(gateways, gw), append(management, mgmt)
	}
	return gateways, management, nil
}

func firstFree(ranges []netip.Prefix, exclude []netip.Addr) netip.Addr {
	for _, r := range ranges {
		for a := r.Addr(); r.Contains(a); a = a.Next() {
			if !slices.Contains(exclude, a) {
				return a
			}
		}
	}
	return netip.Addr{}
}
