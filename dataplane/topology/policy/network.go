package policy

import (
	"fmt"
	"net/netip"

	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// ZoneNetwork is the network name of the zone's own rows (rows.Owner):
// no user-defined network is so named (theirs hold "_").
const ZoneNetwork = "zone"

// Cluster are the cluster facts the defaults read.
type Cluster struct {
	// IPv4 and IPv6 are the cluster's IP modes (ovnk.ClusterConfig.IPModes,
	// upstream's config.IPv4Mode and IPv6Mode): the families of the hairpin
	// ACLs, the EgressIP address sets and QoS rules, whatever the network's.
	IPv4, IPv6 bool
	// MasqueradeSubnets hold, at offset 5, the OVN service hairpin
	// masquerade IP of each family (169.254.0.5, fd69::5).
	MasqueradeSubnets []netip.Prefix
	// JoinSubnets are the default network's join subnets, the destination
	// of the Pod-To-Join no-reroute policies (upstream's
	// config.Gateway.V4JoinSubnet and V6JoinSubnet, for every network).
	JoinSubnets []netip.Prefix
}

// families are the cluster's IP modes, IPv4 first.
func (c Cluster) families() []bool {
	var out []bool
	if c.IPv4 {
		out = append(out, false)
	}
	if c.IPv6 {
		out = append(out, true)
	}
	return out
}

// Network is one user-defined network in the zone.
type Network struct {
	// Name is the OVN network name (tenant-blue_blue).
	Name string
	// Topology is base.TopologyLayer2 or base.TopologyLayer3.
	Topology string
	// Subnets are the network's cluster subnets (CIDRs, not host subnets).
	Subnets []netip.Prefix
	// Nodes are the zone's local nodes.
	Nodes []Node
}

// Node is one of the zone's nodes as a network sees it.
type Node struct {
	Name string
	// Switch is the switch that holds the node's management port: a Layer2
	// network's switch, a Layer3 network's node switch.
	Switch string
	// ManagementPort is the port's name (k8s-<network prefix><node>).
	ManagementPort string
	// ManagementIPs are the port's addresses (one per family of the node's
	// subnets on the network).
	ManagementIPs []netip.Addr
}

// validate refuses a network its rows cannot be built for.
func (net Network) validate() error {
	if net.Name == "" {
		return fmt.Errorf("network.name: must not be empty")
	}
	if net.Name == ZoneNetwork {
		return fmt.Errorf("network.name: %q is the zone's own rows' name", ZoneNetwork)
	}
	if net.Topology != base.TopologyLayer2 && net.Topology != base.TopologyLayer3 {
		return fmt.Errorf("network.topology: %q is neither %q nor %q", net.Topology, base.TopologyLayer2, base.TopologyLayer3)
	}
	if len(net.Subnets) == 0 {
		return fmt.Errorf("network.subnets: at least one is required")
	}
	for i, s := range net.Subnets {
		if !s.IsValid() {
			return fmt.Errorf("network.subnets[%d]: not a valid CIDR", i)
		}
	}
	return validateNodes(net.Nodes, true)
}

// validateNodes refuses nodes without a name, twice the same node, and
// (withSwitch) one without its switch or management port; every node
// needs a valid management IP, at most one per family.
func validateNodes(nodes []Node, withSwitch bool) error {
	seen := map[string]bool{}
	for i, n := range nodes {
		if n.Name == "" {
			return fmt.Errorf("nodes[%d].name: must not be empty", i)
		}
		if seen[n.Name] {
			return fmt.Errorf("nodes[%d].name: %q appears twice", i, n.Name)
		}
		seen[n.Name] = true
		if withSwitch && (n.Switch == "" || n.ManagementPort == "") {
			return fmt.Errorf("nodes[%d] (%s): switch and managementPort must not be empty", i, n.Name)
		}
		if len(n.ManagementIPs) == 0 {
			return fmt.Errorf("nodes[%d] (%s).managementIPs: at least one is required", i, n.Name)
		}
		fam := map[bool]bool{}
		for j, ip := range n.ManagementIPs {
			if !ip.IsValid() {
				return fmt.Errorf("nodes[%d] (%s).managementIPs[%d]: not a valid IP", i, n.Name, j)
			}
			if fam[ip.Is6()] {
				return fmt.Errorf("nodes[%d] (%s).managementIPs[%d]: a second %s address", i, n.Name, j, base.IPFamily(ip))
			}
			fam[ip.Is6()] = true
		}
	}
	return nil
}

// hairpinIP is the OVN service hairpin masquerade IP of a family: the
// fifth address of the cluster's masquerade subnet (config/utils.go
// allocateV4MasqueradeIPs, allocateV6MasqueradeIPs).
func (c Cluster) hairpinIP(v6 bool) (netip.Addr, error) {
	s, ok := ovnk.FamilyOf(c.MasqueradeSubnets, v6)
	if !ok {
		return netip.Addr{}, fmt.Errorf("cluster.masqueradeSubnets: no %s subnet, which the cluster's IP modes need", base.FamilyOf(v6))
	}
	return ovnk.AddrAt(s, 5)
}
