package zone

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
)

// subnetsNode is a node whose k8s.ovn.org/node-subnets gives each network
// of nets its own /24.
func subnetsNode(name string, nets ...string) *corev1.Node {
	m := map[string][]netip.Prefix{}
	for i, n := range nets {
		m[n] = []netip.Prefix{netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i / 256), byte(i % 256), 0}), 24)}
	}
	return testobj.MakeNode(name).Annotation(ovnk.AnnotationNodeSubnets, ovnk.EncodeNodeSubnets(m)).Obj()
}

// TestNodeSubnetsFollowsTheAnnotation reads nodes' host subnets through
// the memo as their annotation is written, rewritten, broken, fixed and
// removed: every answer is NodeSubnetsFromNode's for the node as it is.
func TestNodeSubnetsFollowsTheAnnotation(t *testing.T) {
	var m NodeSubnets
	check := func(step string, node *corev1.Node, network string) {
		t.Helper()
		want, wantErr := NodeSubnetsFromNode(node, network)
		got, err := m.Of(node, network)
		if (err != nil) != (wantErr != nil) || !slices.Equal(got, want) {
			t.Fatalf("%s: Of(%s, %s) = %v, %v; NodeSubnetsFromNode says %v, %v", step, node.Name, network, got, err, want, wantErr)
		}
	}
	a := subnetsNode("node-a", "blue", "green")
	check("first read", a, "green")
	check("another network of the same value", a, "blue")
	check("a network the node has no entry for", a, "red")

	a = subnetsNode("node-a", "green", "red") // every entry moves to another subnet
	check("rewritten", a, "green")
	check("rewritten, new network", a, "red")
	check("rewritten, network gone", a, "blue")
	b := subnetsNode("node-b", "blue")
	check("a second node", b, "blue")

	broken := testobj.MakeNode("node-a").Annotation(ovnk.AnnotationNodeSubnets, `{"green":`).Obj()
	if _, err := m.Of(broken, "green"); err == nil {
		t.Fatal("malformed annotation: Of returned no error")
	}
	if _, err := m.Of(broken, "green"); err == nil {
		t.Fatal("malformed annotation read again: Of returned no error (the failure was remembered as an answer)")
	}
	check("fixed", a, "green")

	empty := testobj.MakeNode("node-a").Annotation(ovnk.AnnotationNodeSubnets, "").Obj()
	if _, err := m.Of(empty, "green"); err == nil {
		t.Fatal(`annotation present but "": Of returned no error, as if it were absent`)
	}
	check("annotation removed", testobj.MakeNode("node-a").Obj(), "green")
	check("absent after empty", testobj.MakeNode("node-a").Obj(), "green")
}

// TestNodeSubnetsAnswersAreCopies: a caller changing what Of returned does
// not change the next answer.
func TestNodeSubnetsAnswersAreCopies(t *testing.T) {
	var m NodeSubnets
	node := subnetsNode("node-a", "green")
	got, err := m.Of(node, "green")
	if err != nil || len(got) != 1 {
		t.Fatalf("Of = %v, %v", got, err)
	}
	got[0] = netip.MustParsePrefix("192.0.2.0/24")
	again, _ := m.Of(node, "green")
	if want := netip.MustParsePrefix("10.0.0.0/24"); len(again) != 1 || again[0] != want {
		t.Fatalf("after the caller changed its answer, Of = %v, want [%s]", again, want)
	}
}

// TestNodeSubnetsRetainForgetsDeletedNodes: once the listed nodes are
// fewer than those remembered, the unlisted ones are forgotten, and a
// listed one is kept.
func TestNodeSubnetsRetainForgetsDeletedNodes(t *testing.T) {
	var m NodeSubnets
	a, b := subnetsNode("node-a", "green"), subnetsNode("node-b", "green")
	for _, n := range []*corev1.Node{a, b} {
		if _, err := m.Of(n, "green"); err != nil {
			t.Fatal(err)
		}
	}
	m.Retain([]corev1.Node{*a})
	if _, ok := m.byNode["node-b"]; ok {
		t.Fatal("node-b, no longer listed, is still remembered")
	}
	if _, ok := m.byNode["node-a"]; !ok {
		t.Fatal("node-a, listed, was forgotten")
	}
}

// BenchmarkLayer3NodeSubnets is what a zone's Layer3 reconciles read of
// the nodes to program every network once: each network reads its entry
// of every node's k8s.ovn.org/node-subnets (which holds every network's),
// at 64 and 128 networks of 50 nodes. decode decodes the annotation at
// each read (NodeSubnetsFromNode); memo reads through NodeSubnets. The
// growth per doubling is the 256 figure over the 128 one.
func BenchmarkLayer3NodeSubnets(b *testing.B) {
	for _, networks := range []int{64, 128} {
		nets := make([]string, networks)
		for i := range nets {
			nets[i] = "cluster_udn_net." + strconv.Itoa(i)
		}
		nodes := make([]*corev1.Node, 50)
		for i := range nodes {
			nodes[i] = subnetsNode(fmt.Sprintf("node-%04d", i), nets...)
		}
		read := map[string]func(*NodeSubnets, *corev1.Node, string) ([]netip.Prefix, error){
			"decode": func(_ *NodeSubnets, n *corev1.Node, net string) ([]netip.Prefix, error) {
				return NodeSubnetsFromNode(n, net)
			},
			"memo": (*NodeSubnets).Of,
		}
		for _, how := range []string{"decode", "memo"} {
			b.Run(fmt.Sprintf("%s/networks=%d", how, networks), func(b *testing.B) {
				var m NodeSubnets
				for b.Loop() {
					for _, net := range nets {
						for _, n := range nodes {
							if s, err := read[how](&m, n, net); err != nil || len(s) != 1 {
								b.Fatalf("%s of %s: %v, %v", net, n.Name, s, err)
							}
						}
					}
				}
			})
		}
	}
}
