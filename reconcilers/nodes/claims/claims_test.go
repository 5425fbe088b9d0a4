package claims

import (
	"net/netip"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udnkit/udnkit/ovnk"
)

func node(name string, ann map[string]string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann}}
}

// Two nodes that share a tunnel ID and a host subnet clash on both; the one
// that yields loses its tunnel IDs, its node ID when that clashes, and the
// clashing network's entry, and keeps the rest.
func TestClashAndWhatTheYoungerGivesUp(t *testing.T) {
	g := NewWithT(t)
	a := node("a", map[string]string{
		ovnk.AnnotationNodeID:                         "3",
		ovnk.AnnotationNodeTransitSwitchPortTunnelIDs: "[3,7]",
		ovnk.AnnotationNodeSubnets:                    `{"red":["10.1.0.0/24"],"blue":["10.2.0.0/24"]}`,
	})
	b := node("b", map[string]string{
		ovnk.AnnotationNodeID:                         "4",
		ovnk.AnnotationNodeTransitSwitchPortTunnelIDs: "[4,7]",
		ovnk.AnnotationNodeSubnets:                    `{"red":["10.1.0.0/24"],"blue":["10.2.1.0/24"]}`,
	})
	mine, other := Of(a), Of(b)
	g.Expect(mine.IDs).To(ConsistOf(3, 7))

	c := Between(mine, other)
	g.Expect(c.Empty()).To(BeFalse())
	g.Expect(c.IDs).To(Equal([]int{7}))
	g.Expect(c.Networks).To(Equal(map[string][]netip.Prefix{"red": {netip.MustParsePrefix("10.1.0.0/24")}}))
	g.Expect(c.String()).To(Equal("node/tunnel IDs [7], host subnets [10.1.0.0/24] of network red"))

	left := Without(a, mine, c)
	g.Expect(left).NotTo(HaveKey(ovnk.AnnotationNodeTransitSwitchPortTunnelIDs))
	g.Expect(left).To(HaveKeyWithValue(ovnk.AnnotationNodeID, "3"), "node ID 3 does not clash")
	g.Expect(left[ovnk.AnnotationNodeSubnets]).To(Equal(ovnk.EncodeNodeSubnets(map[string][]netip.Prefix{"blue": {netip.MustParsePrefix("10.2.0.0/24")}})))

	g.Expect(Between(Of(node("x", nil)), other).Empty()).To(BeTrue())
	g.Expect(Changed(a.Annotations, left)).To(BeTrue())
	g.Expect(Changed(a.Annotations, map[string]string{"other": "x", ovnk.AnnotationNodeID: "3",
		ovnk.AnnotationNodeTransitSwitchPortTunnelIDs: "[3,7]", ovnk.AnnotationNodeSubnets: a.Annotations[ovnk.AnnotationNodeSubnets]})).To(BeFalse())
}

// When another writer owns the node IDs, two nodes with one node ID clash on
// nothing (neither may drop it), a tunnel ID that is another node's node ID
// clashes on nothing either, and two nodes that share a tunnel ID clash on
// it alone: the one that yields keeps its node ID.
func TestTunnelsOfNeverClaimsTheNodeID(t *testing.T) {
	g := NewWithT(t)
	a := node("a", map[string]string{ovnk.AnnotationNodeID: "3", ovnk.AnnotationNodeTransitSwitchPortTunnelIDs: "[3,7,9]"})
	b := node("b", map[string]string{ovnk.AnnotationNodeID: "3"})
	c := node("c", map[string]string{ovnk.AnnotationNodeID: "9", ovnk.AnnotationNodeTransitSwitchPortTunnelIDs: "[9,7]"})
	g.Expect(TunnelsOf(a).IDs).To(ConsistOf(7, 9))
	g.Expect(Between(TunnelsOf(a), TunnelsOf(b)).Empty()).To(BeTrue())
	g.Expect(Between(Of(a), Of(b)).IDs).To(Equal([]int{3}), "Of still claims the node ID")

	clash := Between(TunnelsOf(c), TunnelsOf(a))
	g.Expect(clash.IDs).To(Equal([]int{7}))
	left := Without(c, TunnelsOf(c), clash)
	g.Expect(left).To(HaveKeyWithValue(ovnk.AnnotationNodeID, "9"))
	g.Expect(left).NotTo(HaveKey(ovnk.AnnotationNodeTransitSwitchPortTunnelIDs))
}
