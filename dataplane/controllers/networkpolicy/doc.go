// Package networkpolicy is the dataplane controller of NetworkPolicies on
// Primary user-defined networks: for each Primary Layer2 or Layer3 network
// of udnkit's NADs, it reads the NetworkPolicies of the network's
// namespaces (those of its trusted NADs), the cluster's namespaces and the
// network's pods (their k8s.ovn.org/pod-networks entries for the network,
// and their ports when on one of the zone's nodes) and applies the
// network's policy port groups, default-deny port groups, ACLs and
// pod-selector address sets (package topology/networkpolicy) as one piece,
// once the network's topology is in the zone (zone.WaitForTopology).
// With --enable-multi-networkpolicy, each Secondary Layer2, Layer3 or
// Localnet network likewise gets the rows of the k8s.cni.cncf.io
// MultiNetworkPolicies whose policy-for names one of its NADs (read
// unstructured, as NetworkPolicies: ConvertMultiNetworkPolicy), with the
// pods of every namespace attached to it.
//
// A request is one NAD. A NetworkPolicy's or pod's event queues the NADs of
// its namespace; a namespace's label or acl-logging change queues every
// NAD (namespace selectors select across the cluster). The queue serves
// namespaces in turn (zone.ControllerOptions), and events of one namespace
// collapse into its NAD's key, so a flood of policies in one namespace does
// not hold up another namespace's network. Reconciles of one network take
// turns (networks). A namespace without a Primary network's NAD has no
// request: its policies write nothing. A network's rows go with its last
// NAD (sweep).
package networkpolicy
