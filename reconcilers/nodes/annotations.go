package nodes

import (
	"encoding/json"
	"net/netip"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/udnkit/udnkit/ovnk"
)

// nodeSubnets is a node's k8s.ovn.org/node-subnets value as decoded.
type nodeSubnets struct {
	value   string
	subnets map[string][]netip.Prefix // nil when kept or not needed
	// canonical: value is what EncodeNodeSubnets writes for subnets (as
	// JSON); otherwise it is rewritten so.
	canonical bool
	// complete: the node holds a host subnet of every network of the
	// networks numbered complete and value records them (0: not known).
	complete int64
}

// seenSubnets is each node's k8s.ovn.org/node-subnets as last decoded or
// written, without its entries (they would double the annotations'
// memory).
type seenSubnets struct {
	mu sync.Mutex // guards m
	m  map[string]nodeSubnets
}

// lookup returns what is known of node's value v; ok is false when the
// last value seen was another.
func (s *seenSubnets) lookup(node, v string) (seen nodeSubnets, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen, ok = s.m[node]
	if ok = ok && seen.value == v; ok {
		seen.value = v // the informer's copy: this process keeps no other
		s.m[node] = seen
	}
	return seen, ok
}

// remember records node's value as decoded or written.
func (s *seenSubnets) remember(node string, ns nodeSubnets) {
	ns.subnets = nil
	s.mu.Lock()
	s.m[node] = ns
	s.mu.Unlock()
}

func (s *seenSubnets) forget(node string) {
	s.mu.Lock()
	delete(s.m, node)
	s.mu.Unlock()
}

// decodeSubnets decodes node's k8s.ovn.org/node-subnets. A value known to be
// complete for the networks numbered seq is not decoded at all.
func (r *reconciler) decodeSubnets(node *corev1.Node, seq int64) (nodeSubnets, error) {
	v, ok := node.Annotations[ovnk.AnnotationNodeSubnets]
	if !ok {
		return nodeSubnets{canonical: true}, nil
	}
	seen, hit := r.seen.lookup(node.Name, v)
	if hit && seen.complete == seq {
		return seen, nil
	}
	subnets, err := ovnk.DecodeNodeSubnets(node)
	if err != nil {
		return nodeSubnets{}, err
	}
	if hit {
		seen.subnets = subnets
		return seen, nil
	}
	seen = nodeSubnets{value: v, subnets: subnets, canonical: ovnk.IsCanonicalNodeSubnets(v, subnets)}
	r.seen.remember(node.Name, seen)
	return seen, nil
}

// annotationsPatch is the JSON merge patch from node's annotations to want,
// under the node's resourceVersion (as client.MergeFromWithOptimisticLock
// makes it, without encoding the whole node twice to diff it).
func annotationsPatch(node *corev1.Node, want map[string]string) []byte {
	diff := map[string]any{}
	for k, v := range want {
		if old, ok := node.Annotations[k]; !ok || old != v {
			diff[k] = v
		}
	}
	for k := range node.Annotations {
		if _, ok := want[k]; !ok {
			diff[k] = nil
		}
	}
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": diff, "resourceVersion": node.ResourceVersion}})
	return b
}
