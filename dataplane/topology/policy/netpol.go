package policy

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// The cluster port groups' object names (types.ClusterPortGroupNameBase,
// ClusterRtrPortGroupNameBase) and the hairpin ACLs' (allowHairpinningACLID).
const (
	clusterPortGroup    = "clusterPortGroup"
	clusterRtrPortGroup = "clusterRtrPortGroup"
	allowHairpinning    = "allow-hairpinning"
)

// ClusterPortGroup is the name of a network's cluster-wide port group
// (base_network_controller.go getClusterPortGroupName).
func ClusterPortGroup(network string) string {
	return ids(NetworkController(network), ownerCluster, kv(ovnk.ExternalIDObjectName, clusterPortGroup)).hashName()
}

// ClusterRouterPortGroup is the name of a network's cluster router port
// group (the multicast router ports' group).
func ClusterRouterPortGroup(network string) string {
	return ids(NetworkController(network), ownerCluster, kv(ovnk.ExternalIDObjectName, clusterRtrPortGroup)).hashName()
}

// NetpolDefaults is what upstream's network controller writes for a
// network's network policies before any exists:
//   - the cluster port group (setupClusterPortGroups) holding every
//     management port (syncNodeManagementPort) and pod port of the network
//     in the zone, with the ingress and egress ACLs that let service
//     hairpin traffic (from the hairpin masquerade IPs) through
//     (base_network_controller_policy.go addHairpinAllowACL);
//   - the empty cluster router port group;
//   - on each switch holding a management port, per management IP, the
//     ACL that lets the node reach its pods (addAllowACLFromNode);
//   - the acl-logging meter the ACLs name.
//
// The switches are referenced by name (their topology owns them).
func NetpolDefaults(net Network, c Cluster) (*rows.Desired, error) {
	if err := net.validate(); err != nil {
		return nil, err
	}
	hairpin, err := hairpinMatch(c)
	if err != nil {
		return nil, err
	}
	ctrl := NetworkController(net.Name)
	pgIDs := ids(ctrl, ownerCluster, kv(ovnk.ExternalIDObjectName, clusterPortGroup))
	rtrIDs := ids(ctrl, ownerCluster, kv(ovnk.ExternalIDObjectName, clusterRtrPortGroup))
	hairpinACL := func(dir string, p pipeline) nbdb.ACL {
		o := ids(ctrl, ownerNetpolDefault, kv(ovnk.ExternalIDObjectName, allowHairpinning), kv(ovnk.ExternalIDPolicyDirection, dir))
		return acl(o, DefaultAllowPriority, hairpin, nbdb.ACLActionAllowRelated, p, DefaultACLTier)
	}
	cluster := rows.PortGroup{
		Row:  nbdb.PortGroup{Name: pgIDs.hashName(), ExternalIDs: pgIDs.externalIDs()},
		ACLs: []nbdb.ACL{hairpinACL(dirIngress, toLport), hairpinACL(dirEgress, fromLportAfterLB)},
	}
	for _, n := range net.Nodes {
		cluster.Ports = append(cluster.Ports, n.ManagementPort)
	}
	slices.Sort(cluster.Ports)
	if dup := firstDuplicate(cluster.Ports); dup != "" {
		return nil, fmt.Errorf("network.nodes: management port %q appears twice", dup)
	}
	d := &rows.Desired{
		Owner: rows.Owner{Network: net.Name, Topology: net.Topology, Piece: base.PieceNetpolDefaults},
		PortGroups: []rows.PortGroup{cluster,
			{Row: nbdb.PortGroup{Name: rtrIDs.hashName(), ExternalIDs: rtrIDs.externalIDs()}}},
		Switches: nodeACLSwitches(ctrl, net.Nodes),
		Meters:   []rows.ZoneMeter{ACLLoggingMeter()},
	}
	return d, nil
}

// nodeACLSwitches are the switches of the nodes' management ports, in the
// order first named, each with an allow-from-node ACL per management IP;
// nodes that share a switch (a Layer2 network's) share its ACLs.
func nodeACLSwitches(ctrl string, nodes []Node) []rows.Switch {
	var out []rows.Switch
	at := map[string]int{}
	for _, n := range nodes {
		i, ok := at[n.Switch]
		if !ok {
			i = len(out)
			at[n.Switch] = i
			out = append(out, rows.Switch{Row: nbdb.LogicalSwitch{Name: n.Switch}, Ref: true})
		}
		for _, ip := range n.ManagementIPs {
			a := allowFromNode(ctrl, n.Switch, ip)
			if !slices.ContainsFunc(out[i].ACLs, func(b nbdb.ACL) bool { return b.Match == a.Match }) {
				out[i].ACLs = append(out[i].ACLs, a)
			}
		}
	}
	return out
}

// allowFromNode is addAllowACLFromNode's ACL: traffic from the management
// port's address to the switch's ports, keyed by the switch and address.
func allowFromNode(ctrl, sw string, ip netip.Addr) nbdb.ACL {
	o := ids(ctrl, ownerNetpolNode, kv(ovnk.ExternalIDObjectName, sw), kv(ovnk.ExternalIDIP, ip.String()))
	return acl(o, DefaultAllowPriority, fmt.Sprintf("%s.src==%s", base.IPFamily(ip), ip), nbdb.ACLActionAllowRelated, toLport, DefaultACLTier)
}

// hairpinMatch is addHairpinAllowACL's match: the source is the hairpin
// masquerade IP of the cluster's family, or either of both.
func hairpinMatch(c Cluster) (string, error) {
	var ms []string
	for _, v6 := range c.families() {
		ip, err := c.hairpinIP(v6)
		if err != nil {
			return "", err
		}
		ms = append(ms, fmt.Sprintf("%s.src == %s", base.FamilyOf(v6), ip))
	}
	switch len(ms) {
	case 0:
		return "", fmt.Errorf("cluster: neither IPv4 nor IPv6 mode")
	case 1:
		return ms[0], nil
	}
	return "(" + ms[0] + " || " + ms[1] + ")", nil
}

// firstDuplicate is the first repeated string of a sorted list ("" if none).
func firstDuplicate(sorted []string) string {
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			return sorted[i]
		}
	}
	return ""
}
