package v1

// Accessors that let webhooks, reconcilers and the dataplane treat a
// UserDefinedNetwork and a ClusterUserDefinedNetwork alike.

// Network returns the UDN's spec as the NetworkSpec a CUDN carries.
func (s UserDefinedNetworkSpec) Network() NetworkSpec {
	return NetworkSpec{Topology: s.Topology, Layer2: s.Layer2, Layer3: s.Layer3}
}

// Role is the network's role; Localnet networks are always Secondary.
func (n NetworkSpec) Role() NetworkRole {
	switch {
	case n.Layer2 != nil:
		return n.Layer2.Role
	case n.Layer3 != nil:
		return n.Layer3.Role
	case n.Localnet != nil:
		return n.Localnet.Role
	}
	return ""
}

// IsPrimary reports whether the network is its namespaces' primary network.
func (n NetworkSpec) IsPrimary() bool { return n.Role() == NetworkRolePrimary }

// SubnetCIDRs are the network's subnets as CIDR strings (for Layer3, the
// cluster subnets without their hostSubnet), in spec order.
func (n NetworkSpec) SubnetCIDRs() []string {
	var out []string
	switch {
	case n.Layer2 != nil:
		for _, c := range n.Layer2.Subnets {
			out = append(out, string(c))
		}
	case n.Layer3 != nil:
		for _, s := range n.Layer3.Subnets {
			out = append(out, string(s.CIDR))
		}
	case n.Localnet != nil:
		for _, c := range n.Localnet.Subnets {
			out = append(out, string(c))
		}
	}
	return out
}

// JoinSubnetCIDRs are the network's join subnets, if it sets them.
func (n NetworkSpec) JoinSubnetCIDRs() []string {
	var in DualStackCIDRs
	switch {
	case n.Layer2 != nil:
		in = n.Layer2.JoinSubnets
	case n.Layer3 != nil:
		in = n.Layer3.JoinSubnets
	}
	out := make([]string, 0, len(in))
	for _, c := range in {
		out = append(out, string(c))
	}
	return out
}
