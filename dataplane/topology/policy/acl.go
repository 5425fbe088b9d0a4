package policy

import (
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/topology/base"
)

// ACL priorities and tiers (pkg/types/const.go).
const (
	// DefaultAllowPriority and DefaultDenyPriority are the network-policy
	// defaults' priorities; PrimaryUDNAllowPriority and PrimaryUDNDenyPriority
	// the UDN isolation's (the same numbers, in another tier).
	DefaultAllowPriority    = 1001
	DefaultDenyPriority     = 1000
	PrimaryUDNAllowPriority = 1001
	PrimaryUDNDenyPriority  = 1000
	// DefaultACLTier holds network policy; PrimaryACLTier, evaluated
	// first, the UDN isolation.
	DefaultACLTier = 2
	PrimaryACLTier = 0
)

// pipeline is where an ACL applies (libovsdb/util/acl.go ACLPipelineType).
type pipeline int

const (
	// toLport: direction to-lport (LportIngress).
	toLport pipeline = iota
	// fromLport: direction from-lport, before load balancing (LportEgress).
	fromLport
	// fromLportAfterLB: direction from-lport with options
	// apply-after-lb=true (LportEgressAfterLB).
	fromLportAfterLB
)

// acl is an ACL as upstream's BuildACL writes one without a name (the
// kinds of this package have none: GetACLName) and without logging: the
// acl-logging meter, the IDs' external_ids, the pipeline's direction and
// options.
func acl(o objectIDs, priority int, match string, action nbdb.ACLAction, p pipeline, tier int) nbdb.ACL {
	a := nbdb.ACL{
		Action: action, Direction: nbdb.ACLDirectionToLport, Match: match, Priority: priority, Tier: tier,
		Meter: base.Ptr(ACLLoggingMeterName), ExternalIDs: o.externalIDs(),
	}
	switch p {
	case fromLport:
		a.Direction = nbdb.ACLDirectionFromLport
	case fromLportAfterLB:
		a.Direction = nbdb.ACLDirectionFromLport
		a.Options = map[string]string{"apply-after-lb": "true"}
	}
	return a
}

// ACL directions (libovsdb/util/acl.go ACLDirection), the value of an
// ACL's external_ids direction.
const (
	dirIngress = "Ingress"
	dirEgress  = "Egress"
)

// portGroupMatch is GetACLMatch: the group's ports as the ACL's outport
// (Ingress) or inport (Egress), and match when not empty.
func portGroupMatch(group, match, dir string) string {
	m := "outport == @" + group
	if dir == dirEgress {
		m = "inport == @" + group
	}
	if match != "" {
		m += " && " + match
	}
	return m
}
