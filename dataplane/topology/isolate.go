package topology

import (
	"fmt"

	"github.com/udnkit/udnkit/ovnk"
)

// Reasons a node is left out of a network's rows (SkippedNode.Reason).
const (
	SkipDuplicateNodeID = "DuplicateNodeID"
	SkipNodeOutOfRange  = "NodeOutOfRange"
	// SkipNoChassis: the node has no k8s.ovn.org/node-chassis-id yet (its
	// ovnkube-node has not registered its chassis); it joins once it has.
	SkipNoChassis = "NoChassisID"
)

// SkippedNode is a node a network's rows leave out, and why.
type SkippedNode struct {
	Name   string
	Reason string
	Err    error
}

// Layer2UsableNodes splits nodes into those Layer2Topology can program for
// net and those it cannot, so that one bad node never stops the network's
// other nodes (nor, through an error, every network): a node whose ID an
// earlier node of the list already has (callers list nodes oldest first, so
// the younger duplicate is the one dropped), and a node whose ID or
// addresses do not fit the network's join or transit subnets, and a node
// whose OVN chassis is not known yet. A network
// that is itself invalid keeps every node: Layer2Topology reports it.
func Layer2UsableNodes(net Layer2Network, nodes []Layer2Node) (kept []Layer2Node, skipped []SkippedNode) {
	if net.validate() != nil {
		return nodes, nil
	}
	names := ovnk.NamesFor(net.Name)
	transits := net.transits()
	seen := map[int]string{}
	for _, n := range nodes {
		if n.Chassis == "" {
			skipped = append(skipped, SkippedNode{n.Name, SkipNoChassis,
				fmt.Errorf("node %s has no %s yet; left out of network %s until it has", n.Name, ovnk.AnnotationNodeChassisID, net.Name)})
			continue
		}
		if other, dup := seen[n.ID]; dup {
			skipped = append(skipped, SkippedNode{n.Name, SkipDuplicateNodeID,
				fmt.Errorf("node %s: node ID %d is also older node %s's; left out of network %s", n.Name, n.ID, other, net.Name)})
			continue
		}
		if _, err := net.resolve(names, transits, n); err != nil {
			skipped = append(skipped, SkippedNode{n.Name, SkipNodeOutOfRange, fmt.Errorf("node %s: %w; left out of network %s", n.Name, err, net.Name)})
			continue
		}
		seen[n.ID] = n.Name
		kept = append(kept, n)
	}
	return kept, skipped
}
