// Package policy builds the network-policy, isolation and EgressIP default
// rows upstream's ovnkube-controller writes for user-defined networks,
// whatever policies or EgressIPs exist:
//
//   - NetpolDefaults (netpol.go): a network's cluster port group (its
//     management and pod ports, with the two hairpin ACLs), its cluster
//     router port group, and on each switch holding a management port the
//     ACL that lets the node reach its pods;
//   - EgressIPDefaults (egressip.go): on a network's cluster (Layer3) or
//     transit (Layer2) router the priority-102 no-reroute policies of pod
//     traffic to the join subnet, to nodes and to UDN-enabled default
//     services, the network's egressip-served-pods address sets, and on
//     each of its local switches the QoS rule that marks reply traffic;
//   - UDNIsolation (isolation.go): the zone's port group of the default
//     network's ports of Primary-UDN pods with the five ACLs that keep them
//     to kubelet probes from the management port;
//   - EgressIPShared and EgressIPDefaultNetworkSets (egressip.go): the
//     zone's address sets every network's policies name (the UDN-enabled
//     services' ClusterIPs; the cluster's node IPs and egress-service
//     pods, which OVN-Kubernetes' EgressIP also writes for the default
//     network);
//   - ACLLoggingMeter (meter.go): the acl-logging meter every ACL names.
//
// The rows carry upstream's own external_ids (owner controller, owner type,
// k8s.ovn.org/id, ...: objectIDs in ids.go), so both sides find each
// other's rows by them; udnkit's ownership keys are added by the planner.
// Zone-wide rows (UDNIsolation, EgressIPShared, ...) are owned by a piece of
// the pseudo-network ZoneNetwork, which no user-defined network can be
// named. Pure: plain inputs to a rows.Desired; invalid input yields an
// error naming the field.
package policy
