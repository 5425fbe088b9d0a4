package podannotation

import (
	"fmt"
	"net"
	"net/netip"
)

// Layer3PodNetwork is the entry of a pod on a Layer3 network, as upstream's
// AddRoutesGatewayIP (pkg/allocator/pod/pod_annotation.go, Layer3 case)
// writes it: ips carry the node's host subnet length, and each one's
// gateway is the first address of its host subnet (GetNodeGatewayIP). Per
// address, in order: a route to each cluster subnet of its family via the
// gateway; on a Primary network also a route to each service CIDR and to
// the join subnet of its family via the gateway, and the gateway itself
// unless the pod asked for its own default routes (gatewayRequest, the
// NetworkSelectionElement's default-route, which come first).
func Layer3PodNetwork(ips []netip.Prefix, mac net.HardwareAddr, clusterSubnets []netip.Prefix, primary bool,
	serviceCIDRs, joinSubnets []netip.Prefix, gatewayRequest []netip.Addr) (PodNetwork, error) {
	pn := PodNetwork{MACAddress: mac.String(), Role: RoleSecondary}
	if primary {
		pn.Role = RolePrimary
	}
	for _, gw := range gatewayRequest {
		pn.GatewayIPs = append(pn.GatewayIPs, gw.String())
	}
	for _, ip := range ips {
		gw := ip.Masked().Addr().Next()
		pn.IPAddresses = append(pn.IPAddresses, ip.String())
		route := func(dests ...netip.Prefix) {
			for _, d := range dests {
				if d.Addr().Is6() == ip.Addr().Is6() {
					pn.Routes = append(pn.Routes, PodRoute{Dest: d.String(), NextHop: gw.String()})
				}
			}
		}
		route(clusterSubnets...)
		if !primary {
			continue
		}
		route(serviceCIDRs...)
		route(firstOfFamily(joinSubnets, ip.Addr().Is6())...)
		if len(gatewayRequest) == 0 {
			pn.GatewayIPs = append(pn.GatewayIPs, gw.String())
		}
	}
	return pn, setSingleStack(&pn)
}

// SecondaryPodNetwork is the entry of a pod on a Secondary Layer2 or
// Localnet network (AddRoutesGatewayIP: no routes, the gateways only the
// pod's default-route request); ips is empty on a network without IPAM, and
// tunnelID is 0 but on Layer2 (DoesNetworkRequireTunnelIDs).
func SecondaryPodNetwork(ips []netip.Prefix, mac net.HardwareAddr, gatewayRequest []netip.Addr, tunnelID int) (PodNetwork, error) {
	pn := PodNetwork{MACAddress: mac.String(), Role: RoleSecondary, TunnelID: tunnelID}
	for _, ip := range ips {
		pn.IPAddresses = append(pn.IPAddresses, ip.String())
	}
	for _, gw := range gatewayRequest {
		pn.GatewayIPs = append(pn.GatewayIPs, gw.String())
	}
	return pn, setSingleStack(&pn)
}

// setSingleStack fills the deprecated ip_address and gateway_ip of a
// single-stack entry, as upstream's MarshalPodAnnotation does, which refuses
// a single-stack entry with several gateways.
func setSingleStack(pn *PodNetwork) error {
	if len(pn.IPAddresses) != 1 {
		return nil
	}
	pn.IPAddress = pn.IPAddresses[0]
	switch len(pn.GatewayIPs) {
	case 0:
	case 1:
		pn.GatewayIP = pn.GatewayIPs[0]
	default:
		return fmt.Errorf("gateway_ips: a single-stack network can only have a single gateway, got %v", pn.GatewayIPs)
	}
	return nil
}

func firstOfFamily(prefixes []netip.Prefix, v6 bool) []netip.Prefix {
	for _, p := range prefixes {
		if p.Addr().Is6() == v6 {
			return []netip.Prefix{p}
		}
	}
	return nil
}
