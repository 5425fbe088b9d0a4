package ovnk

// This file holds the pure arithmetic of udnkit's cluster-wide identifiers:
// network IDs, OVN interconnect tunnel keys, node IDs, the transit subnet of
// a Primary Layer2 network (OKEP-5094 "Transit subnet conflict", option 4)
// and each node's transit peer subnets. It has no Kubernetes dependency, so
// the reconcilers and the dataplane share one definition of every number.

import (
	"fmt"
	"math/big"
	"net/netip"
	"slices"
)

const (
	// MaxNetworkID is the largest network ID OVN-Kubernetes supports.
	MaxNetworkID = 4095

	// FirstInterconnectKey is the first tunnel key of the range OVN keeps for
	// interconnect (transit) datapaths: [2^24 − 2^16, 2^24 − 1]. northd
	// allocates below it.
	FirstInterconnectKey = 1<<24 - 1<<16
	// LastInterconnectKey is the last tunnel key OVN allows.
	LastInterconnectKey = 1<<24 - 1
	// BaseTransitSwitchTunnelKey is upstream's base of the per-network transit
	// switch keys (BaseTransitSwitchTunnelKey = 16711683: a network's legacy
	// key is base + network ID; see its TunnelKeysAllocator).
	BaseTransitSwitchTunnelKey = 16711683
	// FirstAllocatedTunnelKey is the first centrally allocated key: the 4096
	// keys from BaseTransitSwitchTunnelKey stay reserved for the legacy
	// per-network transit switch keys (OKEP-5094 option 3), as upstream's
	// allocator keeps them (its rangeStart = 16711683 + 4096).
	FirstAllocatedTunnelKey = BaseTransitSwitchTunnelKey + MaxNetworkID + 1

	// FirstNodeID is the first node ID handed out: 0 means "no ID" and 1 is
	// kept for the transit switch's router port, as OVN-Kubernetes does.
	FirstNodeID = 2
	// MaxNodeID is the largest node ID: OVN port tunnel keys with
	// interconnect have 15 bits, and 2·nodeID must fit a /16 transit subnet.
	MaxNodeID = 1<<15 - 1
	// MaxClusterManagerNodeID is the largest node ID OVN-Kubernetes'
	// cluster manager hands out (its maxNodeIDs): where it allocates the node
	// IDs, udnkit's multi-VTEP tunnel IDs come from above it.
	MaxClusterManagerNodeID = 5000
	// MaxTunnelIDsPerNode bounds k8s.ovn.org/node-transit-switch-port-tunnel-ids.
	MaxTunnelIDsPerNode = 8
)

// Default transit subnets of Primary Layer2 networks (OKEP-5094).
var (
	DefaultTransitSubnetV4 = netip.MustParsePrefix("100.88.0.0/16")
	DefaultTransitSubnetV6 = netip.MustParsePrefix("fd97::/64")
)

// LegacyTransitSwitchKey is the tunnel key of a network's transit switch (the
// Layer3 transit switch, or the Layer2 switch of networks without centrally
// allocated keys), derived from its network ID.
func LegacyTransitSwitchKey(networkID int) (int, error) {
	if networkID < 0 || networkID > MaxNetworkID {
		return 0, fmt.Errorf("network ID %d is outside [0, %d]", networkID, MaxNetworkID)
	}
	return BaseTransitSwitchTunnelKey + networkID, nil
}

// TransitPeerSubnets are a node's point-to-point subnets inside a network's
// transit subnet: offset 2·nodeID, /31 for IPv4 and /127 for IPv6. The even
// address belongs to the transit router's port and the odd one to the
// gateway router's port, so transitRouter and gatewayRouter are the same
// prefix with different addresses (e.g. 100.88.0.4/31 and 100.88.0.5/31 for
// node ID 2 in 100.88.0.0/16).
func TransitPeerSubnets(transitSubnet netip.Prefix, nodeID int) (transitRouter, gatewayRouter netip.Prefix, err error) {
	if !transitSubnet.IsValid() {
		return netip.Prefix{}, netip.Prefix{}, fmt.Errorf("transit subnet %v is not a valid prefix", transitSubnet)
	}
	if nodeID < 0 {
		return netip.Prefix{}, netip.Prefix{}, fmt.Errorf("node ID %d is negative", nodeID)
	}
	transitSubnet = transitSubnet.Masked()
	bits := transitSubnet.Addr().BitLen()
	if transitSubnet.Bits() > bits-1 {
		return netip.Prefix{}, netip.Prefix{}, fmt.Errorf("transit subnet %v has no room for a /%d", transitSubnet, bits-1)
	}
	offset := new(big.Int).Lsh(big.NewInt(int64(nodeID)), 1)
	size := new(big.Int).Lsh(big.NewInt(1), uint(bits-transitSubnet.Bits()))
	if offset.Cmp(new(big.Int).Sub(size, big.NewInt(1))) >= 0 {
		return netip.Prefix{}, netip.Prefix{}, fmt.Errorf("node ID %d does not fit transit subnet %v (offset %v of %v addresses)", nodeID, transitSubnet, offset, size)
	}
	even := AddOffset(transitSubnet.Addr(), offset)
	odd := even.Next()
	return netip.PrefixFrom(even, bits-1), netip.PrefixFrom(odd, bits-1), nil
}

// ChooseTransitSubnet implements OKEP-5094 "Transit subnet conflict" option 4
// for one IP family: it starts at def and steps to the next subnet of the
// same size until none of the network's subnets (used) overlap it.
func ChooseTransitSubnet(def netip.Prefix, used []netip.Prefix) (netip.Prefix, error) {
	cur := def.Masked()
	step := PrefixSize(cur)
	limit := new(big.Int).Lsh(big.NewInt(1), uint(cur.Addr().BitLen()))
	start := new(big.Int).SetBytes(cur.Addr().AsSlice())
	for n := new(big.Int).Set(start); n.Cmp(limit) < 0; {
		a, _ := netip.AddrFromSlice(n.FillBytes(make([]byte, cur.Addr().BitLen()/8)))
		cand := netip.PrefixFrom(a, cur.Bits())
		i := slices.IndexFunc(used, cand.Overlaps)
		if i < 0 {
			return cand, nil
		}
		// Jump past the used prefix, not one transit-sized step: a /127
		// stepping through an admitted fd00::/8 would never end. A used
		// prefix larger than the candidate ends on a step boundary.
		u := used[i].Masked()
		end := new(big.Int).Add(new(big.Int).SetBytes(u.Addr().AsSlice()), PrefixSize(u))
		n.Add(n, step)
		if end.Cmp(n) > 0 {
			n.Set(end)
		}
	}
	return netip.Prefix{}, fmt.Errorf("no /%d transit subnet at or above %v avoids the network's subnets", cur.Bits(), def)
}

// TransitSubnets picks a transit subnet for each IP family the network's
// subnets use, in the order of the subnets, starting from the defaults (DefaultTransitSubnetV4
// and DefaultTransitSubnetV6 when nil) and avoiding every prefix in avoid
// (the network's subnets and join subnets).
func TransitSubnets(defaults, subnets, avoid []netip.Prefix) ([]netip.Prefix, error) {
	def4, def6 := DefaultTransitSubnetV4, DefaultTransitSubnetV6
	for _, d := range defaults {
		if d.Addr().Is4() {
			def4 = d
		} else {
			def6 = d
		}
	}
	// One per family, in the order of the network's subnets: upstream's
	// SetTransitSubnets walks netconf.Subnets, and its NetConf comparison is
	// order-sensitive.
	var out []netip.Prefix
	done := map[bool]bool{}
	for _, sub := range subnets {
		v4 := sub.Addr().Is4()
		if done[v4] {
			continue
		}
		done[v4] = true
		def := def6
		if v4 {
			def = def4
		}
		p, err := ChooseTransitSubnet(def, avoid)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}
