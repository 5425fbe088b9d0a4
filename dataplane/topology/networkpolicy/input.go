package networkpolicy

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// Piece is the topology piece of a network's network-policy rows.
const Piece = "network-policy"

// Network is a user-defined network with its policies, as the zone sees it.
type Network struct {
	// Name is the OVN network name (tenant-blue_blue).
	Name string
	// Topology is base.TopologyLayer2 or base.TopologyLayer3.
	Topology string
	// IPv4 and IPv6 are the network's IP families (its subnets', upstream's
	// NetInfo.IPMode): the address sets and selector matches of each. A
	// Secondary network without subnets (no IPAM) has neither: its
	// policies may only have ipBlock peers.
	IPv4, IPv6 bool
	// Policies are the NetworkPolicies of the namespaces whose Primary
	// network this is, or the MultiNetworkPolicies for a Secondary network
	// (ConvertMultiNetworkPolicy).
	Policies []networkingv1.NetworkPolicy
	// Namespaces are the cluster's namespaces, which namespace selectors
	// select from, with the logging of the policies' namespaces. Build
	// reads only those NamespacesRead names: the others may be left out.
	Namespaces []Namespace
	// Pods are the pods with addresses on the network, across the cluster.
	Pods []Pod
}

// Namespace is a namespace's labels and network-policy ACL logging.
type Namespace struct {
	Name    string
	Labels  map[string]string
	Logging ovnk.ACLLogging
}

// Pod is one interface of a pod on the network: its k8s.ovn.org/pod-networks
// entry of one key. A pod attached to a Secondary network more than once
// (a NAD named twice, "ns/name" and "ns/name/1", or two NADs of the
// network) is one Pod per key, each selected with the pod's labels.
type Pod struct {
	Namespace, Name string
	Labels          map[string]string
	// IPs are the interface's addresses (its entry's).
	IPs []netip.Addr
	// Port is the interface's logical switch port when the pod is on one of
	// the zone's nodes ("" otherwise): policy port groups hold it.
	Port string
}

// NamespacesRead names, sorted, the namespaces whose labels or logging
// Build reads: each policy's (its ACLs' and default-deny groups' logging)
// and, when a peer of some policy has a namespace selector, each pod's
// (the selector matches a pod through its namespace's labels). A network
// without policies reads none.
func (n Network) NamespacesRead() []string {
	names := map[string]bool{}
	selects := false
	for i := range n.Policies {
		np := &n.Policies[i]
		names[np.Namespace] = true
		selects = selects || SelectsNamespaces(np)
	}
	if selects {
		for _, p := range n.Pods {
			names[p.Namespace] = true
		}
	}
	return slices.Sorted(maps.Keys(names))
}

// SelectsNamespaces says whether a peer of a policy's rules has a
// namespace selector: then the policy's rows read the labels of its
// network's pods' namespaces.
func SelectsNamespaces(np *networkingv1.NetworkPolicy) bool {
	for _, r := range np.Spec.Ingress {
		for _, peer := range r.From {
			if peer.NamespaceSelector != nil {
				return true
			}
		}
	}
	for _, r := range np.Spec.Egress {
		for _, peer := range r.To {
			if peer.NamespaceSelector != nil {
				return true
			}
		}
	}
	return false
}

func (n Network) validate() error {
	if n.Name == "" {
		return fmt.Errorf("network.name: must not be empty")
	}
	switch n.Topology {
	case base.TopologyLayer2, base.TopologyLayer3, ovnk.TopologyLocalnet:
		return nil
	}
	return fmt.Errorf("network.topology: %q is not %q, %q or %q", n.Topology, base.TopologyLayer2, base.TopologyLayer3, ovnk.TopologyLocalnet)
}
