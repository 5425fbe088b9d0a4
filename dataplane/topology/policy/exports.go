package policy

import "github.com/udnkit/udnkit/dataplane/nbdb"

// ObjectIDs are the external_ids and hashed name (of a port group or
// address set) of the upstream DbObjectIDs of controller, owner type and
// keys, in the type's key order: what the network-policy builder
// (package topology/networkpolicy) names its rows by.
func ObjectIDs(controller, ownerType string, keys ...[2]string) (externalIDs map[string]string, hashName string) {
	o := ids(controller, ownerType, keys...)
	return o.externalIDs(), o.hashName()
}

// DefaultTierACL is BuildACLWithDefaultTier's ACL without a name or
// logging, of the IDs ObjectIDs builds: to-lport when ingress, else
// from-lport applied after load balancing (PolicyTypeToAclPipeline).
func DefaultTierACL(controller, ownerType string, keys [][2]string, priority int, match string, action nbdb.ACLAction, ingress bool) nbdb.ACL {
	p := fromLportAfterLB
	if ingress {
		p = toLport
	}
	return acl(ids(controller, ownerType, keys...), priority, match, action, p, DefaultACLTier)
}
