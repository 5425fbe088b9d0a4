package reconcilers_test

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers"
)

// createNodes creates plain Node objects, deleted when the test ends.
func createNodes(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := k8s.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(ctx, node) })
	}
}

func nodeAnnotations(g Gomega, name string) map[string]string {
	var node corev1.Node
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, &node)).To(Succeed())
	return node.Annotations
}

func nodeID(g Gomega, name string) int {
	v, ok := nodeAnnotations(g, name)[ovnk.AnnotationNodeID]
	g.Expect(ok).To(BeTrue(), "node %s has no node ID yet", name)
	id, err := strconv.Atoi(v)
	g.Expect(err).NotTo(HaveOccurred())
	return id
}

func setNodeAnnotation(t *testing.T, name, key, value string) {
	t.Helper()
	updateObject(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, func(node *corev1.Node) {
		if node.Annotations == nil {
			node.Annotations = map[string]string{}
		}
		if value == "" {
			delete(node.Annotations, key)
		} else {
			node.Annotations[key] = value
		}
	})
}

func tunnelIDs(g Gomega, name string) []int {
	v, ok := nodeAnnotations(g, name)[ovnk.AnnotationNodeTransitSwitchPortTunnelIDs]
	if !ok {
		return nil
	}
	var ids []int
	g.Expect(json.Unmarshal([]byte(v), &ids)).To(Succeed())
	return ids
}

func TestNodeIDsAndMultiVTEPTunnelIDs(t *testing.T) {
	g := NewWithT(t)
	createNodes(t, "vtep-a", "vtep-b", "vtep-c")
	ids := map[int]string{}
	for _, n := range []string{"vtep-a", "vtep-b", "vtep-c"} {
		g.Eventually(func(g Gomega) { nodeID(g, n) }).WithTimeout(timeout).Should(Succeed())
		id := nodeID(g, n)
		g.Expect(id).To(BeNumerically(">=", ovnk.FirstNodeID))
		g.Expect(ids).NotTo(HaveKey(id), "node ID %d handed out twice", id)
		ids[id] = n
		g.Expect(tunnelIDs(g, n)).To(BeNil(), "single-VTEP nodes get no tunnel IDs")
	}

	// Three encap IPs: the node ID first, then two IDs from the node-ID pool.
	setNodeAnnotation(t, "vtep-a", ovnk.AnnotationNodeEncapIPs, `["10.0.0.2","10.0.0.3","10.0.0.4"]`)
	idA := nodeID(g, "vtep-a")
	g.Eventually(func(g Gomega) []int { return tunnelIDs(g, "vtep-a") }).WithTimeout(timeout).Should(HaveLen(3))
	tun := tunnelIDs(g, "vtep-a")
	g.Expect(tun[0]).To(Equal(idA))
	for _, id := range tun[1:] {
		g.Expect(ids).NotTo(HaveKey(id), "tunnel ID %d collides with a node ID", id)
	}
	g.Expect(tun[1]).NotTo(Equal(tun[2]))

	// A node created now never gets one of those IDs.
	createNodes(t, "vtep-d")
	g.Eventually(func(g Gomega) { nodeID(g, "vtep-d") }).WithTimeout(timeout).Should(Succeed())
	g.Expect(tun).NotTo(ContainElement(nodeID(g, "vtep-d")))

	// Fewer encap IPs release the tail; one encap IP removes the annotation.
	setNodeAnnotation(t, "vtep-a", ovnk.AnnotationNodeEncapIPs, `["10.0.0.2","10.0.0.3"]`)
	g.Eventually(func(g Gomega) []int { return tunnelIDs(g, "vtep-a") }).WithTimeout(timeout).Should(Equal(tun[:2]))
	setNodeAnnotation(t, "vtep-a", ovnk.AnnotationNodeEncapIPs, `["10.0.0.2"]`)
	g.Eventually(func(g Gomega) map[string]string { return nodeAnnotations(g, "vtep-a") }).WithTimeout(timeout).
		ShouldNot(HaveKey(ovnk.AnnotationNodeTransitSwitchPortTunnelIDs))
	g.Expect(nodeID(g, "vtep-a")).To(Equal(idA), "the node ID never changes")

	// More than eight encap IPs are refused with an event; nothing is written.
	var nine []string
	for i := range 9 {
		nine = append(nine, fmt.Sprintf("10.0.1.%d", i+1))
	}
	b, _ := json.Marshal(nine)
	setNodeAnnotation(t, "vtep-b", ovnk.AnnotationNodeEncapIPs, string(b))
	g.Eventually(func(g Gomega) []string {
		var evs eventsv1.EventList
		g.Expect(k8s.List(ctx, &evs)).To(Succeed())
		var notes []string
		for _, e := range evs.Items {
			if e.Regarding.Name == "vtep-b" && e.Reason == "TunnelIDAllocationFailed" {
				notes = append(notes, e.Note)
			}
		}
		return notes
	}).WithTimeout(timeout).Should(ContainElement(ContainSubstring("lists 9 encap IPs; at most 8 are supported")))
	g.Expect(tunnelIDs(g, "vtep-b")).To(BeNil())
}

func hostSubnets(g Gomega, node, network string) []string {
	v, ok := nodeAnnotations(g, node)[ovnk.AnnotationNodeSubnets]
	if !ok {
		return nil
	}
	var m map[string][]string
	g.Expect(json.Unmarshal([]byte(v), &m)).To(Succeed())
	return m[network]
}

func hostSubnetCondition(g Gomega, udn *udnv1.UserDefinedNetwork) *metav1.Condition {
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(udn), udn)).To(Succeed())
	c := meta.FindStatusCondition(udn.Status.Conditions, reconcilers.ConditionHostSubnetsAllocated)
	g.Expect(c).NotTo(BeNil())
	return c
}

func TestLayer3HostSubnetsExhaustionAndAppend(t *testing.T) {
	g := NewWithT(t)
	nodes := []string{"l3-a", "l3-b", "l3-c"}
	createNodes(t, nodes...)
	// Another component's entry must survive.
	setNodeAnnotation(t, "l3-a", ovnk.AnnotationNodeSubnets, `{"default":["10.244.0.0/24"]}`)

	ns := newNamespace(t, "hosts", nil)
	network := ns + "_net"
	udn := makeUDN(ns, "net", l3Spec(udnv1.Layer3Subnet{CIDR: "10.60.0.0/23", HostSubnet: 24}))
	g.Expect(k8s.Create(ctx, udn)).To(Succeed())

	// Two host subnets for three nodes: two nodes get one, the third none,
	// and the UDN says which node is left out.
	g.Eventually(func(g Gomega) {
		c := hostSubnetCondition(g, udn)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(reconcilers.ReasonHostSubnetsExhausted))
		g.Expect(c.Message).To(ContainSubstring("every IPv4 host subnet of 10.60.0.0/23 (hostSubnet 24) is in use"))
	}).WithTimeout(timeout).Should(Succeed())
	assigned := map[string]string{}
	var without []string
	g.Eventually(func(g Gomega) {
		assigned, without = map[string]string{}, nil
		for _, n := range nodes {
			if s := hostSubnets(g, n, network); len(s) > 0 {
				g.Expect(s).To(HaveLen(1))
				assigned[n] = s[0]
			} else {
				without = append(without, n)
			}
		}
		g.Expect(assigned).To(HaveLen(2))
	}).WithTimeout(timeout).Should(Succeed())
	g.Expect(without).To(HaveLen(1))
	g.Expect([]string{assigned[nodes[0]], assigned[nodes[1]], assigned[nodes[2]]}).To(ContainElements("10.60.0.0/24", "10.60.1.0/24"))
	g.Expect(hostSubnetCondition(g, udn).Message).To(ContainSubstring("[" + without[0] + "]"))
	// ... and a Warning event on the UDN names the node.
	g.Eventually(func(g Gomega) []string {
		var evs eventsv1.EventList
		g.Expect(k8s.List(ctx, &evs, client.InNamespace(ns))).To(Succeed())
		var notes []string
		for _, e := range evs.Items {
			if e.Regarding.UID == udn.UID && e.Reason == "HostSubnetAllocationFailed" && e.Type == "Warning" {
				notes = append(notes, e.Note)
			}
		}
		return notes
	}).WithTimeout(timeout).Should(ContainElement(ContainSubstring("node " + without[0] + ": every IPv4 host subnet")))
	g.Expect(nodeAnnotations(g, "l3-a")[ovnk.AnnotationNodeSubnets]).To(ContainSubstring(`"default":["10.244.0.0/24"]`))

	// Appending a subnet (with an IPv6 one) serves the third node and keeps
	// every existing assignment.
	updateObject(t, udn, func(u *udnv1.UserDefinedNetwork) {
		u.Spec.Layer3.Subnets = append(u.Spec.Layer3.Subnets,
			udnv1.Layer3Subnet{CIDR: "10.61.0.0/23", HostSubnet: 24}, udnv1.Layer3Subnet{CIDR: "fd00:61::/48", HostSubnet: 64})
	})
	g.Eventually(func(g Gomega) {
		for _, n := range nodes {
			s := hostSubnets(g, n, network)
			g.Expect(s).To(HaveLen(2), "node %s: one host subnet per family", n)
			if old, ok := assigned[n]; ok {
				g.Expect(s[0]).To(Equal(old), "node %s was reassigned", n)
			} else {
				g.Expect(s[0]).To(Equal("10.61.0.0/24"))
			}
			p := netip.MustParsePrefix(s[1])
			g.Expect(p.Bits()).To(Equal(64))
			g.Expect(netip.MustParsePrefix("fd00:61::/48").Contains(p.Addr())).To(BeTrue())
		}
		c := hostSubnetCondition(g, udn)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(timeout).Should(Succeed())
	v6 := map[string]bool{}
	for _, n := range nodes {
		v6[hostSubnets(g, n, network)[1]] = true
	}
	g.Expect(v6).To(HaveLen(3), "IPv6 host subnets are unique")
	// The NAD's condition is untouched by the host subnet condition.
	expectCondition(t, udn, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	g.Expect(k8s.Delete(ctx, udn)).To(Succeed())
	expectGone(t, udn)
	// The deleted network's entries go; other components' entries stay.
	g.Eventually(func(g Gomega) {
		for _, n := range nodes {
			g.Expect(hostSubnets(g, n, network)).To(BeNil())
		}
		g.Expect(nodeAnnotations(g, "l3-a")[ovnk.AnnotationNodeSubnets]).To(ContainSubstring(`"default":["10.244.0.0/24"]`))
	}).WithTimeout(timeout).Should(Succeed())

	// A malformed annotation is left as it is.
	setNodeAnnotation(t, "l3-b", ovnk.AnnotationNodeSubnets, `not json`)
	udn2 := makeUDN(ns, "net2", l3Spec(udnv1.Layer3Subnet{CIDR: "10.62.0.0/16", HostSubnet: 24}))
	g.Expect(k8s.Create(ctx, udn2)).To(Succeed())
	g.Eventually(func(g Gomega) []string { return hostSubnets(g, "l3-c", ns+"_net2") }).WithTimeout(timeout).Should(HaveLen(1))
	g.Consistently(func(g Gomega) string { return nodeAnnotations(g, "l3-b")[ovnk.AnnotationNodeSubnets] }).
		WithTimeout(time.Second).Should(Equal("not json"))
	g.Expect(k8s.Delete(ctx, udn2)).To(Succeed())
	expectGone(t, udn2)
}

func TestNodeIDsSurviveRestart(t *testing.T) {
	g := NewWithT(t)
	createNodes(t, "keep-a", "keep-b")
	g.Eventually(func(g Gomega) { nodeID(g, "keep-a"); nodeID(g, "keep-b") }).WithTimeout(timeout).Should(Succeed())
	setNodeAnnotation(t, "keep-b", ovnk.AnnotationNodeEncapIPs, `["10.0.0.2","10.0.0.3"]`)
	g.Eventually(func(g Gomega) []int { return tunnelIDs(g, "keep-b") }).WithTimeout(timeout).Should(HaveLen(2))
	held := map[int]string{nodeID(g, "keep-a"): "keep-a"}
	for _, id := range tunnelIDs(g, "keep-b") {
		held[id] = "keep-b"
	}

	// After a restart, new nodes get none of the IDs held above.
	restartManager(t, reconcilers.DefaultConfig())
	createNodes(t, "keep-c", "keep-d", "keep-e")
	for _, n := range []string{"keep-c", "keep-d", "keep-e"} {
		g.Eventually(func(g Gomega) { nodeID(g, n) }).WithTimeout(timeout).Should(Succeed())
		g.Expect(held).NotTo(HaveKey(nodeID(g, n)), "node %s got an ID already in use", n)
		held[nodeID(g, n)] = n
	}
	g.Expect(nodeID(g, "keep-a")).To(BeKeyOf(held))

}

func TestDeletedNodeFreesItsHostSubnetForAWaitingNode(t *testing.T) {
	g := NewWithT(t)
	createNodes(t, "free-a", "free-b")
	ns := newNamespace(t, "free", nil)
	network := ns + "_net"
	udn := makeUDN(ns, "net", l3Spec(udnv1.Layer3Subnet{CIDR: "10.63.0.0/24", HostSubnet: 25}))
	g.Expect(k8s.Create(ctx, udn)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, udn) })
	g.Eventually(func(g Gomega) {
		g.Expect(hostSubnets(g, "free-a", network)).To(HaveLen(1))
		g.Expect(hostSubnets(g, "free-b", network)).To(HaveLen(1))
	}).WithTimeout(timeout).Should(Succeed())
	freed := hostSubnets(g, "free-a", network)[0]

	createNodes(t, "free-c")
	g.Eventually(func(g Gomega) {
		c := hostSubnetCondition(g, udn)
		g.Expect(c.Reason).To(Equal(reconcilers.ReasonHostSubnetsExhausted))
		g.Expect(c.Message).To(ContainSubstring("[free-c]"))
	}).WithTimeout(timeout).Should(Succeed())
	g.Expect(hostSubnets(g, "free-c", network)).To(BeNil())

	g.Expect(k8s.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "free-a"}})).To(Succeed())
	g.Eventually(func(g Gomega) []string { return hostSubnets(g, "free-c", network) }).WithTimeout(timeout).Should(Equal([]string{freed}))
	g.Eventually(func(g Gomega) metav1.ConditionStatus { return hostSubnetCondition(g, udn).Status }).WithTimeout(timeout).Should(Equal(metav1.ConditionTrue))
}

// A node ID that is malformed, out of range, or another (older) node's is
// rewritten with an Event; the older node keeps its ID.
func TestBadOrDuplicateNodeIDIsRewritten(t *testing.T) {
	g := NewWithT(t)
	createNodes(t, "dup-old")
	g.Eventually(func(g Gomega) { nodeID(g, "dup-old") }).WithTimeout(timeout).Should(Succeed())
	old := nodeID(g, "dup-old")
	time.Sleep(1100 * time.Millisecond) // creationTimestamp has second precision: dup-new is younger
	createNodes(t, "dup-new")
	g.Eventually(func(g Gomega) { nodeID(g, "dup-new") }).WithTimeout(timeout).Should(Succeed())

	for _, bad := range []string{strconv.Itoa(old), "99999999", "1", "node-7"} {
		setNodeAnnotation(t, "dup-new", ovnk.AnnotationNodeID, bad)
		g.Eventually(func(g Gomega) {
			id := nodeID(g, "dup-new")
			g.Expect(id).NotTo(Equal(old))
			g.Expect(id).To(BeNumerically(">=", ovnk.FirstNodeID))
			g.Expect(id).To(BeNumerically("<=", ovnk.MaxNodeID))
		}).WithTimeout(timeout).Should(Succeed(), "node-id %q was not rewritten", bad)
		g.Expect(nodeID(g, "dup-old")).To(Equal(old), "the older node keeps its ID")
	}
	g.Eventually(func(g Gomega) []string {
		var evs eventsv1.EventList
		g.Expect(k8s.List(ctx, &evs)).To(Succeed())
		var notes []string
		for _, e := range evs.Items {
			if e.Regarding.Name == "dup-new" && e.Reason == "InvalidNodeID" {
				notes = append(notes, e.Note)
			}
		}
		return notes
	}).WithTimeout(timeout).Should(ContainElements(
		ContainSubstring("is already held by dup-old"),
		ContainSubstring(`k8s.ovn.org/node-id="99999999" is not a node ID (an integer in [2, 32767])`),
		ContainSubstring(`k8s.ovn.org/node-id="node-7" is not a node ID`)))
}

// A Layer3 subnet appended over a range in use after admission is held back
// (OKEP-5377): the NAD keeps its old subnets, and no node gets a host subnet
// of it until the conflict is gone.
func TestHeldBackLayer3SubnetGetsNoHostSubnets(t *testing.T) {
	g := NewWithT(t)
	createNodes(t, "held-a", "held-b", "held-c")
	ns := newNamespace(t, "held", nil)
	network := ns + "_green"
	green := makeUDN(ns, "green", l3Spec(udnv1.Layer3Subnet{CIDR: "10.230.0.0/24", HostSubnet: 25}))
	g.Expect(k8s.Create(ctx, green)).To(Succeed())
	// Two host subnets (/25 of a /24) for three nodes: one of them waits.
	var waiting string
	g.Eventually(func(g Gomega) {
		waiting = ""
		got := 0
		for _, n := range []string{"held-a", "held-b", "held-c"} {
			if len(hostSubnets(g, n, network)) == 1 {
				got++
			} else {
				waiting = n
			}
		}
		g.Expect(got).To(Equal(2))
	}).WithTimeout(timeout).Should(Succeed())

	backend := makeUDN(ns, "backend", l2Spec(udnv1.NetworkRoleSecondary, "10.231.0.0/16"))
	g.Expect(k8s.Create(ctx, backend)).To(Succeed())
	expectCondition(t, backend, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	updateObject(t, green, func(u *udnv1.UserDefinedNetwork) {
		u.Spec.Layer3.Subnets = append(u.Spec.Layer3.Subnets, udnv1.Layer3Subnet{CIDR: "10.231.0.0/16", HostSubnet: 25})
	})
	expectCondition(t, green, metav1.ConditionFalse, udnv1.ReasonSubnetConflict)
	g.Consistently(func(g Gomega) []string { return hostSubnets(g, waiting, network) }).
		WithTimeout(2*time.Second).WithPolling(100*time.Millisecond).Should(BeEmpty(), "a node got a host subnet of the held-back subnet")

	g.Expect(k8s.Delete(ctx, backend)).To(Succeed())
	g.Eventually(func(g Gomega) []string { return hostSubnets(g, waiting, network) }).WithTimeout(timeout).
		Should(ConsistOf(HavePrefix("10.231.")))
}

// TestRebuildReadsEveryNodeOldestFirst: a restarted manager rebuilds node
// IDs and host subnets from every node, read a page at a time (2 in these
// tests), oldest first (of two nodes claiming one value the older keeps it).
func TestRebuildReadsEveryNodeOldestFirst(t *testing.T) {
	g := NewWithT(t)
	createNodes(t, "page-e", "page-d", "page-c")
	// Creation timestamps are whole seconds.
	time.Sleep(1100 * time.Millisecond)
	createNodes(t, "page-b", "page-a")

	got, err := reconcilers.NodesOldestFirst(ctx, k8s)
	g.Expect(err).NotTo(HaveOccurred())
	var all corev1.NodeList
	g.Expect(k8s.List(ctx, &all)).To(Succeed())
	g.Expect(len(all.Items)).To(BeNumerically(">", 4), "the nodes span several pages")
	var names []string
	for _, n := range all.Items {
		names = append(names, n.Name)
	}
	g.Expect(got).To(ConsistOf(names))
	var ours []string
	for _, n := range got {
		if strings.HasPrefix(n, "page-") {
			ours = append(ours, n)
		}
	}
	g.Expect(ours).To(Equal([]string{"page-c", "page-d", "page-e", "page-a", "page-b"}))
}
