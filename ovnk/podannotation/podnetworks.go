// Package podannotation holds the codecs of the pod annotations udnkit shares
// with OVN-Kubernetes, as upstream's pkg/util/pod_annotation.go does:
// k8s.ovn.org/pod-networks (PodNetworks) and the
// v1.multus-cni.io/default-network NetworkSelectionElement. The annotation
// keys are ovnk's.
package podannotation

import (
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"

	"github.com/udnkit/udnkit/ovnk"
)

// The "role" values of a pod network (upstream's types.NetworkRole*):
// RoleInfrastructureLocked is the default network's role on a pod whose
// Primary network is user-defined (OVN-Kubernetes writes that entry).
const (
	RolePrimary              = "primary"
	RoleSecondary            = "secondary"
	RoleInfrastructureLocked = "infrastructure-locked"
)

// DefaultNetworkKey is the default network's key in the annotation
// (upstream's types.DefaultNetworkName).
const DefaultNetworkKey = "default"

// Pod tunnel IDs of Layer2 networks (OVN-Kubernetes' cluster manager: one ID
// allocator per Layer2 network up to types.MaxLogicalPortTunnelKey; 0 means
// "none" and, with the transit router, 1-9 are kept for platform ports).
const (
	FirstPodTunnelID = 10
	MaxPodTunnelID   = 32767
)

// PodNetwork is one network's entry of k8s.ovn.org/pod-networks, field for
// field OVN-Kubernetes' podAnnotation (pkg/util/pod_annotation.go), in its
// field order, plus OKEP-5535's encap_ip.
type PodNetwork struct {
	IPAddresses []string   `json:"ip_addresses"`
	MACAddress  string     `json:"mac_address"`
	GatewayIPs  []string   `json:"gateway_ips,omitempty"`
	Routes      []PodRoute `json:"routes,omitempty"`
	// IPAddress and GatewayIP repeat the single address of a single-stack pod
	// (deprecated upstream, still written).
	IPAddress      string `json:"ip_address,omitempty"`
	GatewayIP      string `json:"gateway_ip,omitempty"`
	GatewayIPv6LLA string `json:"ipv6_lla_gateway_ip,omitempty"`
	TunnelID       int    `json:"tunnel_id,omitempty"`
	Role           string `json:"role,omitempty"`
	// EncapIP is the VTEP of the pod's interface on a multi-VTEP node (OKEP-5535).
	EncapIP string `json:"encap_ip,omitempty"`
}

// PodRoute is a route of a PodNetwork.
type PodRoute struct {
	Dest    string `json:"dest"`
	NextHop string `json:"nextHop"`
}

// PodAddresses is a validated PodNetwork.
type PodAddresses struct {
	IPs      []netip.Prefix
	MAC      net.HardwareAddr
	Gateways []netip.Addr
	TunnelID int
	EncapIP  netip.Addr
}

// PodNetworks is the whole annotation.
type PodNetworks map[string]PodNetwork

// DecodePodNetworks reads the annotation from a pod's annotations; no
// annotation is an empty map. The error names the annotation.
func DecodePodNetworks(annotations map[string]string) (PodNetworks, error) {
	out := PodNetworks{}
	v, ok := annotations[ovnk.AnnotationPodNetworks]
	if !ok {
		return out, nil
	}
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		return nil, fmt.Errorf("annotation %s is not a JSON object of networks: %w", ovnk.AnnotationPodNetworks, err)
	}
	return out, nil
}

// DecodePodNetworkKeys returns the networks (NAD keys) the annotation has an
// entry for, in no particular order, without decoding the entries: a pod
// whose entries a newer OVN-Kubernetes writes differently still names its
// networks. No annotation is no keys.
func DecodePodNetworkKeys(annotations map[string]string) ([]string, error) {
	v, ok := annotations[ovnk.AnnotationPodNetworks]
	if !ok {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(v), &m); err != nil {
		return nil, fmt.Errorf("annotation %s is not a JSON object of networks: %w", ovnk.AnnotationPodNetworks, err)
	}
	return slices.Collect(maps.Keys(m)), nil
}

// DecodePodNetwork returns one network's entry, nil when the pod has none.
func DecodePodNetwork(annotations map[string]string, nadKey string) (*PodNetwork, error) {
	all, err := DecodePodNetworks(annotations)
	if err != nil {
		return nil, err
	}
	pn, ok := all[nadKey]
	if !ok {
		return nil, nil
	}
	return &pn, nil
}

// Encode renders the annotation value (keys sorted, as encoding/json does for
// maps, so the bytes equal upstream's MarshalPodAnnotation).
func (p PodNetworks) Encode() (string, error) {
	b, err := json.Marshal(map[string]PodNetwork(p))
	return string(b), err
}

// WithPodNetwork returns the annotation value of annotations with nadKey set
// to pn, keeping the other networks' entries.
func WithPodNetwork(annotations map[string]string, nadKey string, pn PodNetwork) (string, error) {
	all, err := DecodePodNetworks(annotations)
	if err != nil {
		return "", err
	}
	all[nadKey] = pn
	return all.Encode()
}

// PodNetworkField is the annotation path of a NAD key's entry, for error messages.
func PodNetworkField(nadKey string) string {
	return fmt.Sprintf("%s[%q]", ovnk.AnnotationPodNetworks, nadKey)
}

// Parse validates an entry the way upstream's UnmarshalPodAnnotation does
// (MAC, CIDRs, ip_address/ip_addresses agreement, gateways, routes of one
// family, a link-local ipv6_lla_gateway_ip; no addresses at all is an entry
// of a network without IPAM) and adds udnkit's own checks for
// values an allocator could never have written: a zero, multicast or
// non-EUI-48 MAC, two addresses of one family, a tunnel ID out of range, an
// unparsable encap_ip. Errors name the field.
func (pn PodNetwork) Parse() (PodAddresses, error) {
	var a PodAddresses
	hw, err := net.ParseMAC(pn.MACAddress)
	if err != nil {
		return a, fmt.Errorf("mac_address %q: %w", pn.MACAddress, err)
	}
	if err := CheckUnicastMAC(hw); err != nil {
		return a, fmt.Errorf("mac_address %q: %w", pn.MACAddress, err)
	}
	a.MAC = hw
	ips := pn.IPAddresses
	if len(ips) == 0 && pn.IPAddress != "" {
		ips = []string{pn.IPAddress}
	} else if pn.IPAddress != "" && pn.IPAddress != ips[0] {
		return a, fmt.Errorf("ip_address %q and ip_addresses %q conflict", pn.IPAddress, ips)
	}
	seen := map[bool]bool{}
	for i, s := range ips {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return a, fmt.Errorf("ip_addresses[%d] %q: %w", i, s, err)
		}
		if seen[p.Addr().Is4()] {
			return a, fmt.Errorf("ip_addresses[%d] %q: a second address of its IP family", i, s)
		}
		seen[p.Addr().Is4()] = true
		a.IPs = append(a.IPs, p)
	}
	gws := pn.GatewayIPs
	if len(gws) == 0 && pn.GatewayIP != "" {
		gws = []string{pn.GatewayIP}
	} else if pn.GatewayIP != "" && pn.GatewayIP != gws[0] {
		return a, fmt.Errorf("gateway_ip %q and gateway_ips %q conflict", pn.GatewayIP, gws)
	}
	for i, s := range gws {
		g, err := netip.ParseAddr(s)
		if err != nil {
			return a, fmt.Errorf("gateway_ips[%d] %q: %w", i, s, err)
		}
		a.Gateways = append(a.Gateways, g)
	}
	for i, r := range pn.Routes {
		d, err := netip.ParsePrefix(r.Dest)
		if err != nil {
			return a, fmt.Errorf("routes[%d].dest %q: %w", i, r.Dest, err)
		}
		if d.Bits() == 0 {
			return a, fmt.Errorf("routes[%d].dest %q: a default route must be given as a gateway", i, r.Dest)
		}
		if r.NextHop != "" {
			nh, err := netip.ParseAddr(r.NextHop)
			if err != nil {
				return a, fmt.Errorf("routes[%d].nextHop %q: %w", i, r.NextHop, err)
			}
			if nh.Is4() != d.Addr().Is4() {
				return a, fmt.Errorf("routes[%d]: next hop %s is of another IP family than %s", i, nh, d)
			}
		}
	}
	if pn.GatewayIPv6LLA != "" {
		lla, err := netip.ParseAddr(pn.GatewayIPv6LLA)
		if err != nil || !lla.Is6() || !lla.IsLinkLocalUnicast() {
			return a, fmt.Errorf("ipv6_lla_gateway_ip %q is not an IPv6 link-local address", pn.GatewayIPv6LLA)
		}
	}
	if pn.TunnelID < 0 || pn.TunnelID > MaxPodTunnelID {
		return a, fmt.Errorf("tunnel_id %d is outside [0, %d]", pn.TunnelID, MaxPodTunnelID)
	}
	a.TunnelID = pn.TunnelID
	if pn.EncapIP != "" {
		e, err := netip.ParseAddr(pn.EncapIP)
		if err != nil {
			return a, fmt.Errorf("encap_ip %q: %w", pn.EncapIP, err)
		}
		a.EncapIP = e
	}
	return a, nil
}

// CheckUnicastMAC refuses MACs no interface may have: not EUI-48, all zero,
// multicast or broadcast.
func CheckUnicastMAC(hw net.HardwareAddr) error {
	switch {
	case len(hw) != 6:
		return fmt.Errorf("must be an EUI-48 MAC address")
	case slices.Equal(hw, net.HardwareAddr{0, 0, 0, 0, 0, 0}):
		return fmt.Errorf("must not be the all-zero MAC address")
	case hw[0]&1 == 1:
		return fmt.Errorf("must be a unicast MAC address (the least significant bit of the first octet is the multicast bit)")
	}
	return nil
}

// Layer2PrimaryPodNetwork is the entry of a pod on a Primary Layer2 network,
// as upstream's AddRoutesGatewayIP writes it with the transit router: per
// address (in order), a route to each service CIDR and to the join subnet of
// its family via that family's gateway, and the gateway; for networks with
// IPv6, ipv6_lla_gateway_ip is the link-local address of the router port's
// MAC (derived from the IPv4 gateway when there is one).
func Layer2PrimaryPodNetwork(ips []netip.Prefix, mac net.HardwareAddr, gateways []netip.Addr, serviceCIDRs, joinSubnets []netip.Prefix, tunnelID int, encapIP string) (PodNetwork, error) {
	pn := PodNetwork{MACAddress: mac.String(), Role: RolePrimary, TunnelID: tunnelID, EncapIP: encapIP}
	v6 := false
	for _, ip := range ips {
		gw, ok := ovnk.AddrOfFamily(gateways, ip.Addr().Is6())
		if !ok {
			return pn, fmt.Errorf("no %s gateway for address %s", familyName(ip.Addr()), ip)
		}
		pn.IPAddresses = append(pn.IPAddresses, ip.String())
		for _, svc := range serviceCIDRs {
			if svc.Addr().Is6() == ip.Addr().Is6() {
				pn.Routes = append(pn.Routes, PodRoute{Dest: svc.String(), NextHop: gw.String()})
			}
		}
		if j, ok := ovnk.FamilyOf(joinSubnets, ip.Addr().Is6()); ok {
			pn.Routes = append(pn.Routes, PodRoute{Dest: j.String(), NextHop: gw.String()})
		}
		pn.GatewayIPs = append(pn.GatewayIPs, gw.String())
		v6 = v6 || ip.Addr().Is6()
	}
	if len(pn.IPAddresses) == 1 {
		pn.IPAddress, pn.GatewayIP = pn.IPAddresses[0], pn.GatewayIPs[0]
	}
	if v6 {
		pn.GatewayIPv6LLA = ovnk.LinkLocalFromMAC(GatewayRouterPortMAC(gateways)).String()
	}
	return pn, nil
}

// GatewayRouterPortMAC is the MAC of a Layer2 network's gateway router port
// (the transit router's rtos- port): derived from the IPv4 gateway if the
// network has one, else from the IPv6 gateway (upstream's nodeLRPMAC).
func GatewayRouterPortMAC(gateways []netip.Addr) net.HardwareAddr {
	if gw, ok := ovnk.AddrOfFamily(gateways, false); ok {
		return ovnk.MACFromIP(gw)
	}
	if len(gateways) == 0 {
		return nil
	}
	return ovnk.MACFromIP(gateways[0])
}

func familyName(a netip.Addr) string {
	if a.Is4() {
		return "IPv4"
	}
	return "IPv6"
}
