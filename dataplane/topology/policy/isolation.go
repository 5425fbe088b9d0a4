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
	// openPortACLPrefix, with a member's "<namespace>/<pod>", names that
	// pod's open-port ACLs.
	openPortACLPrefix = "OpenPort-"
)

// IsolationMember is one member of the isolation port group: Port, the
// default network's port of Pod ("<namespace>/<name>"), and the ports
// the pod opens there (its ovnk.AnnotationOpenDefaultPorts; none: closed).
type IsolationMember struct {
	Port      string
	Pod       string
	OpenPorts []ovnk.OpenPort
}

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
// A member with open ports adds its pair of open-port ACLs (openPortACLs).
func UDNIsolation(nodes []Node, members []IsolationMember) (*rows.Desired, error) {
	if len(nodes) == 0 {
		return nil, fmt.Errorf("nodes: at least one local node with its default network management IPs is required")
	}
	if err := validateNodes(nodes, false); err != nil {
		return nil, err
	}
	members = slices.SortedFunc(slices.Values(members), func(a, b IsolationMember) int { return strings.Compare(a.Port, b.Port) })
	ports := make([]string, len(members))
	for i, m := range members {
		if m.Port == "" {
			return nil, fmt.Errorf("ports: a port name is empty")
		}
		ports[i] = m.Port
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
	for _, m := range members {
		open, err := openPortACLs(m, aclIDs)
		if err != nil {
			return nil, err
		}
		acls = append(acls, open...)
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

// openPortACLs are setUDNPodOpenPortsOps' ACLs of a member with open
// ports (none without): in the isolation tier at the allow priority,
// ingress to its port allow-related for ARP, ND and each open port
// (getPortsMatches: "<protocol>.dst == <port>", or icmp, which OVN expands
// to icmp4 || icmp6), in the annotation's order; egress from it allowed
// for ARP and ND. Their object name is openPortACLPrefix and the pod.
func openPortACLs(m IsolationMember, aclIDs func(name, dir string) objectIDs) ([]nbdb.ACL, error) {
	if len(m.OpenPorts) == 0 {
		return nil, nil
	}
	if m.Pod == "" {
		return nil, fmt.Errorf("port %s: open ports without the pod's name", m.Port)
	}
	protos := make([]string, len(m.OpenPorts))
	for i, p := range m.OpenPorts {
		if err := p.Validate(); err != nil {
			return nil, fmt.Errorf("pod %s: open port %d: %w", m.Pod, i, err)
		}
		if p.Protocol == "icmp" {
			protos[i] = "icmp"
			continue
		}
		protos[i] = fmt.Sprintf("%s.dst == %d", p.Protocol, *p.Port)
	}
	ingress := fmt.Sprintf(`outport == "%s" && (arp || nd || (%s))`, m.Port, strings.Join(protos, " || "))
	egress := fmt.Sprintf(`inport == "%s" && (arp || nd)`, m.Port)
	name := openPortACLPrefix + m.Pod
	return []nbdb.ACL{
		acl(aclIDs(name, dirIngress), PrimaryUDNAllowPriority, ingress, nbdb.ACLActionAllowRelated, toLport, PrimaryACLTier),
		acl(aclIDs(name, dirEgress), PrimaryUDNAllowPriority, egress, nbdb.ACLActionAllow, fromLport, PrimaryACLTier),
	}, nil
}
