// Package claims reads what a node's annotations hold that must be unique
// among nodes (node and tunnel IDs, each network's host subnets), finds what
// two nodes both claim, and computes the annotations of the node that yields.
// The node controller checks each write against every other node with it.
package claims

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udnkit/udnkit/ovnk"
)

// Claims is what a node's annotations hold that must be unique among
// nodes: node and tunnel IDs (one ID space) and each network's host subnets.
type Claims struct {
	Meta    *metav1.PartialObjectMetadata
	IDs     []int
	Subnets map[string][]netip.Prefix
}

// Of reads p's claims; a malformed annotation claims nothing.
func Of(p *metav1.PartialObjectMetadata) Claims {
	n := &corev1.Node{ObjectMeta: p.ObjectMeta}
	c := Claims{Meta: p}
	if id, ok, err := ovnk.DecodeNodeID(n); err == nil && ok {
		c.IDs = append(c.IDs, id)
	}
	if ids, err := ovnk.DecodeNodeTunnelIDs(n); err == nil {
		for _, id := range ids {
			if !slices.Contains(c.IDs, id) {
				c.IDs = append(c.IDs, id)
			}
		}
	}
	c.Subnets, _ = ovnk.DecodeNodeSubnets(n)
	return c
}

// TunnelsOf is Of without p's node ID: what p claims when another writer
// (OVN-Kubernetes' cluster manager) owns the node IDs, so that a clash
// never makes a node yield its node ID.
func TunnelsOf(p *metav1.PartialObjectMetadata) Claims {
	c := Of(p)
	if id, ok, err := ovnk.DecodeNodeID(&corev1.Node{ObjectMeta: p.ObjectMeta}); err == nil && ok {
		c.IDs = slices.DeleteFunc(c.IDs, func(i int) bool { return i == id })
	}
	return c
}

// Clash is what two nodes both claim.
type Clash struct {
	IDs      []int
	Networks map[string][]netip.Prefix // network → the other node's prefixes that overlap
}

// Empty says that nothing clashes.
func (c Clash) Empty() bool { return len(c.IDs) == 0 && len(c.Networks) == 0 }

func (c Clash) String() string {
	var parts []string
	if len(c.IDs) > 0 {
		parts = append(parts, fmt.Sprintf("node/tunnel IDs %v", c.IDs))
	}
	names := make([]string, 0, len(c.Networks))
	for n := range c.Networks {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("host subnets %v of network %s", c.Networks[n], n))
	}
	return strings.Join(parts, ", ")
}

// Between is what mine claims that other claims too (other's overlapping
// host subnets).
func Between(mine, other Claims) Clash {
	c := Clash{Networks: map[string][]netip.Prefix{}}
	for _, id := range mine.IDs {
		if slices.Contains(other.IDs, id) {
			c.IDs = append(c.IDs, id)
		}
	}
	for net, ps := range mine.Subnets {
		for _, q := range other.Subnets[net] {
			for _, p := range ps {
				if p.Overlaps(q) {
					c.Networks[net] = append(c.Networks[net], q)
					break
				}
			}
		}
	}
	return c
}

// Without returns the annotations of a node that yields c: the clashing
// node ID goes with the tunnel IDs (their first entry is the node ID); the
// networks' host subnet entries go; what remains is allocated again.
func Without(node *metav1.PartialObjectMetadata, mine Claims, c Clash) map[string]string {
	out := map[string]string{}
	for k, v := range node.Annotations {
		out[k] = v
	}
	if len(c.IDs) > 0 {
		delete(out, ovnk.AnnotationNodeTransitSwitchPortTunnelIDs)
		if id, ok, err := ovnk.DecodeNodeID(&corev1.Node{ObjectMeta: node.ObjectMeta}); err == nil && ok && slices.Contains(c.IDs, id) {
			delete(out, ovnk.AnnotationNodeID)
		}
	}
	if len(c.Networks) > 0 {
		subnets := map[string][]netip.Prefix{}
		for k, v := range mine.Subnets {
			if _, gone := c.Networks[k]; !gone {
				subnets[k] = v
			}
		}
		if len(subnets) == 0 {
			delete(out, ovnk.AnnotationNodeSubnets)
		} else {
			out[ovnk.AnnotationNodeSubnets] = ovnk.EncodeNodeSubnets(subnets)
		}
	}
	return out
}

// Changed says whether a write from old to want changes what a node claims.
func Changed(old, want map[string]string) bool {
	for _, k := range []string{ovnk.AnnotationNodeID, ovnk.AnnotationNodeTransitSwitchPortTunnelIDs, ovnk.AnnotationNodeSubnets} {
		if old[k] != want[k] {
			return true
		}
	}
	return false
}
