package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// The isolation port group's and ACLs' object names (udn_isolation.go):
// the group keeps its legacy name, which the ACL matches name.
const (
	secondaryPodsPortGroup = "SecondaryPods"
	allowHostARPACL        = "AllowHostARPPrimaryUDN"
	allowHostACL           = "AllowHostPrimaryUDN"
	denyPrimaryUDNACL      = "DenyPrimaryUDN"
)

// IsolationPortGroup is the name of the zone's port group of the default
// network's ports of Primary-UDN pods.
func IsolationPortGroup() string { return isolationIDs().hashName() }

func isolationIDs() objectIDs {
	return ids(DefaultController, ownerUDNIsolation, kv(ovnk.ExternalIDObjectName, secondaryPodsPortGroup))
}

// UDNIsolation is what upstream's default network controller writes in a
// zone for Primary user-defined networks (udn_isolation.go setupUDNACLs):
// the port group of the default network's ports of Primary-UDN pods
// (ports: their names) with, in the primary ACL tier, ACLs that drop all
// their default-network traffic but ARP/ND with the management port and
// what the management port (kubelet's probes) starts. nodes are the zone's
// nodes with their default-network management IPs (Switch and
// ManagementPort unused); upstream writes the last synced node's, which is
// the zone's one node in interconnect, and udnkit lists every local node's.
func UDNIsolation(nodes []Node, ports []string) (*rows.Desired, error) {
	if len(nodes) == 0 {
		return nil, fmt.Errorf("nodes: at least one local node with its default network management IPs is required")
	}
	if err := validateNodes(nodes, false); err != nil {
		return nil, err
	}
	ports = slices.Sorted(slices.Values(ports))
	for _, p := range ports {
		if p == "" {
			return nil, fmt.Errorf("ports: a port name is empty")
		}
	}
	if dup := firstDuplicate(ports); dup != "" {
		return nil, fmt.Errorf("ports: %q appears twice", dup)
	}
	pgIDs := isolationIDs()
	pg := pgIDs.hashName()
	aclIDs := func(name, dir string) objectIDs {
		return ids(DefaultController, ownerUDNIsolation, kv(ovnk.ExternalIDObjectName, name), kv(ovnk.ExternalIDPolicyDirection, dir))
	}
	var srcs []string
	for _, n := range nodes {
		for _, ip := range n.ManagementIPs {
			srcs = append(srcs, fmt.Sprintf("%s.src==%s", base.IPFamily(ip), ip))
		}
	}
	acls := []nbdb.ACL{
		acl(aclIDs(denyPrimaryUDNACL, dirEgress), PrimaryUDNDenyPriority, portGroupMatch(pg, "", dirEgress),
			nbdb.ACLActionDrop, fromLport, PrimaryACLTier),
		acl(aclIDs(allowHostARPACL, dirEgress), PrimaryUDNAllowPriority, portGroupMatch(pg, arpMatch(nodes, dirEgress), dirEgress),
			nbdb.ACLActionAllow, fromLport, PrimaryACLTier),
		acl(aclIDs(allowHostARPACL, dirIngress), PrimaryUDNAllowPriority, portGroupMatch(pg, arpMatch(nodes, dirIngress), dirIngress),
			nbdb.ACLActionAllow, toLport, PrimaryACLTier),
		acl(aclIDs(denyPrimaryUDNACL, dirIngress), PrimaryUDNDenyPriority, portGroupMatch(pg, "", dirIngress),
			nbdb.ACLActionDrop, toLport, PrimaryACLTier),
		acl(aclIDs(allowHostACL, dirIngress), PrimaryUDNAllowPriority, portGroupMatch(pg, "("+strings.Join(srcs, " || ")+")", dirIngress),
			nbdb.ACLActionAllowRelated, toLport, PrimaryACLTier),
	}
	return &rows.Desired{
		Owner: rows.Owner{Network: ZoneNetwork, Topology: base.TopologyZone, Piece: base.PieceUDNIsolation},
		PortGroups: []rows.PortGroup{{Row: nbdb.PortGroup{Name: pg, ExternalIDs: pgIDs.externalIDs()},
			Ports: ports, ACLs: acls}},
		Meters: []rows.ZoneMeter{ACLLoggingMeter()},
	}, nil
}

// arpMatch is setupUDNACLs' getARPMatch: ARP to (egress) or from
// (ingress) each IPv4 management IP, ND for each IPv6 one.
func arpMatch(nodes []Node, dir string) string {
	var ms []string
	for _, n := range nodes {
		for _, ip := range n.ManagementIPs {
			switch {
			case ip.Is6():
				ms = append(ms, "( nd && nd.target == "+ip.String()+" )")
			case dir == dirIngress:
				ms = append(ms, "( arp && arp.spa == "+ip.String()+" )")
			default:
				ms = append(ms, "( arp && arp.tpa == "+ip.String()+" )")
			}
		}
	}
	return "(" + strings.Join(ms, " || ") + ")"
}
