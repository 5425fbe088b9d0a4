// Package policy is the dataplane's controller of the network-policy,
// isolation and EgressIP defaults (package topology/policy): for each
// primary Layer2 or Layer3 network, read from its
// NetworkAttachmentDefinition and the zone's nodes, it applies the
// network's cluster port groups and ACLs (NetpolDefaults) and, with
// --enable-egress-ip, its EgressIP no-reroute policies, address set and QoS
// rules (EgressIPDefaults); and the zone's isolation port group
// (UDNIsolation, from the local nodes' default network subnets) and, with
// --enable-egress-ip, the zone's EgressIP address sets (EgressIPShared,
// from every node's k8s.ovn.org/host-cidrs and the UDN-enabled services'
// ClusterIPs). A network's rows go with its last NAD; the zone's stay.
// Every network's reconcile reaches the zone's rows, which are built and
// applied only when what their builders read changed since their last
// successful Apply (zoneRows).
//
// Package zone holds what it shares with the other dataplane controllers.
package policy
