// Package networkpolicy builds the rows upstream's per-network policy
// handler (pkg/ovn/base_network_controller_policy.go, gress_policy.go and
// the pod-selector address sets of pkg/ovn/addresssetmanager) writes for
// the NetworkPolicies of a Primary user-defined network's namespaces (or
// the MultiNetworkPolicies of a Secondary network, multi.go), in one zone:
//
//   - per policy, its port group (the zone's ports of the pods its
//     podSelector selects) with one allow ACL per rule and protocol for the
//     rule's selector peers (or for everything when the rule has no peer)
//     and one for its ipBlocks, of ingress and egress rules alike;
//   - per namespace with a policy, the ingress and egress default-deny
//     port groups (the ports of pods an Ingress, resp. Egress, policy
//     selects) each with a drop ACL and an ARP/ND allow ACL;
//   - per selector peer, the pod-selector address sets (one per IP family
//     of the network) holding the addresses on the network of the pods it
//     selects, across the cluster.
//
// Names, external_ids, tiers, priorities and logging are upstream's (the
// DbObjectIDs of package topology/policy). Build is pure: plain inputs to a
// rows.Desired of the network's Piece; a policy whose selector cannot be
// parsed fails the call, naming it.
package networkpolicy
