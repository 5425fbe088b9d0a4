package zone

import (
	"net/netip"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/udnkit/udnkit/ovnk"
)

// NodeSubnets remembers each node's decoded k8s.ovn.org/node-subnets for as
// long as the annotation's value stays the same. The annotation holds an
// entry for every Layer3 network, and a Layer3 network's reconcile reads
// every node's entry for its network: decoding the whole annotation each
// time made a zone's work grow with the square of the networks (networks ×
// nodes × entries). With it, each node's annotation is decoded once per
// value. The zero value is ready; it is safe for concurrent use.
type NodeSubnets struct {
	mu     sync.Mutex
	byNode map[string]decodedSubnets
}

// decodedSubnets is one node's annotation value (has: present at all) and
// its decoding.
type decodedSubnets struct {
	value   string
	has     bool
	subnets map[string][]netip.Prefix
}

// Of returns the node's host subnets of network, as NodeSubnetsFromNode
// does (a copy the caller may keep); a malformed annotation is an error
// each time it is read.
func (m *NodeSubnets) Of(node *corev1.Node, network string) ([]netip.Prefix, error) {
	value, has := node.Annotations[ovnk.AnnotationNodeSubnets]
	m.mu.Lock()
	d, ok := m.byNode[node.Name]
	m.mu.Unlock()
	// The informer's objects share the annotation's bytes between reads,
	// so an unchanged value compares by its pointer.
	if !ok || d.has != has || d.value != value {
		all, err := ovnk.DecodeNodeSubnets(node)
		if err != nil {
			return nil, err
		}
		d = decodedSubnets{value: value, has: has, subnets: all}
		m.mu.Lock()
		if m.byNode == nil {
			m.byNode = map[string]decodedSubnets{}
		}
		m.byNode[node.Name] = d
		m.mu.Unlock()
	}
	return slices.Clone(d.subnets[network]), nil
}

// Retain forgets the nodes that are not in nodes (every node, as listed):
// a deleted node's decoding is not kept.
func (m *NodeSubnets) Retain(nodes []corev1.Node) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.byNode) <= len(nodes) {
		// Every remembered node may still be listed; a deleted one
		// goes once a new node's entry makes the count exceed it.
		return
	}
	listed := make(map[string]struct{}, len(nodes))
	for i := range nodes {
		listed[nodes[i].Name] = struct{}{}
	}
	for name := range m.byNode {
		if _, ok := listed[name]; !ok {
			delete(m.byNode, name)
		}
	}
}
