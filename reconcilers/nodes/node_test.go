package nodes_test

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers"
	"github.com/udnkit/udnkit/reconcilers/internal/rtest"
	nodectrl "github.com/udnkit/udnkit/reconcilers/nodes"
)

// nodeEventNotes are the notes of the Events with reason about node name.
func nodeEventNotes(g Gomega, name, reason string) []string {
	var evs eventsv1.EventList
	g.Expect(suite.K8s.List(suite.Ctx, &evs)).To(Succeed())
	var notes []string
	for _, e := range evs.Items {
		if e.Regarding.Name == name && e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

func TestNodeIDsAndMultiVTEPTunnelIDs(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	suite.CreateNodes(t, "vtep-a", "vtep-b", "vtep-c")
	ids := map[int]string{}
	for _, n := range []string{"vtep-a", "vtep-b", "vtep-c"} {
		g.Eventually(func(g Gomega) { suite.NodeID(g, n) }).WithTimeout(timeout).Should(Succeed())
		id := suite.NodeID(g, n)
		g.Expect(id).To(BeNumerically(">=", ovnk.FirstNodeID))
		g.Expect(ids).NotTo(HaveKey(id), "node ID %d handed out twice", id)
		ids[id] = n
		g.Expect(suite.TunnelIDs(g, n)).To(BeNil(), "single-VTEP nodes get no tunnel IDs")
	}

	// Three encap IPs: the node ID first, then two IDs from the node-ID pool.
	suite.SetNodeAnnotation(t, "vtep-a", ovnk.AnnotationNodeEncapIPs, `["10.0.0.2","10.0.0.3","10.0.0.4"]`)
	idA := suite.NodeID(g, "vtep-a")
	g.Eventually(func(g Gomega) []int { return suite.TunnelIDs(g, "vtep-a") }).WithTimeout(timeout).Should(HaveLen(3))
	tun := suite.TunnelIDs(g, "vtep-a")
	g.Expect(tun[0]).To(Equal(idA))
	for _, id := range tun[1:] {
		g.Expect(ids).NotTo(HaveKey(id), "tunnel ID %d collides with a node ID", id)
	}
	g.Expect(tun[1]).NotTo(Equal(tun[2]))

	// A node created now never gets one of those IDs.
	suite.CreateNodes(t, "vtep-d")
	g.Eventually(func(g Gomega) { suite.NodeID(g, "vtep-d") }).WithTimeout(timeout).Should(Succeed())
	g.Expect(tun).NotTo(ContainElement(suite.NodeID(g, "vtep-d")))

	// Fewer encap IPs release the tail; one encap IP removes the annotation.
	suite.SetNodeAnnotation(t, "vtep-a", ovnk.AnnotationNodeEncapIPs, `["10.0.0.2","10.0.0.3"]`)
	g.Eventually(func(g Gomega) []int { return suite.TunnelIDs(g, "vtep-a") }).WithTimeout(timeout).Should(Equal(tun[:2]))
	suite.SetNodeAnnotation(t, "vtep-a", ovnk.AnnotationNodeEncapIPs, `["10.0.0.2"]`)
	g.Eventually(func(g Gomega) map[string]string { return suite.NodeAnnotations(g, "vtep-a") }).WithTimeout(timeout).
		ShouldNot(HaveKey(ovnk.AnnotationNodeTransitSwitchPortTunnelIDs))
	g.Expect(suite.NodeID(g, "vtep-a")).To(Equal(idA), "the node ID never changes")

	// More than eight encap IPs are refused with an event; nothing is written.
	var nine []string
	for i := range 9 {
		nine = append(nine, fmt.Sprintf("10.0.1.%d", i+1))
	}
	b, _ := json.Marshal(nine)
	suite.SetNodeAnnotation(t, "vtep-b", ovnk.AnnotationNodeEncapIPs, string(b))
	g.Eventually(func(g Gomega) []string { return nodeEventNotes(g, "vtep-b", nodectrl.EventTunnelIDAllocationFailed) }).WithTimeout(timeout).Should(ContainElement(ContainSubstring("lists 9 encap IPs; at most 8 are supported")))
	g.Expect(suite.TunnelIDs(g, "vtep-b")).To(BeNil())
}

func TestLayer3HostSubnetsExhaustionAndAppend(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	nodes := []string{"l3-a", "l3-b", "l3-c"}
	suite.CreateNodes(t, nodes...)
	// Another component's entry must survive.
	suite.SetNodeAnnotation(t, "l3-a", ovnk.AnnotationNodeSubnets, `{"default":["10.244.0.0/24"]}`)

	ns := suite.NewNamespace(t, "hosts", nil)
	network := ns + "_net"
	udn := testobj.MakeUDN(ns, "net").Spec(testobj.Layer3(udnv1.NetworkRolePrimary, "10.60.0.0/23")).Obj()
	g.Expect(suite.K8s.Create(suite.Ctx, udn)).To(Succeed())

	// Two host subnets for three nodes: two nodes get one, the third none,
	// and the UDN says which node is left out. Which node gets which host
	// subnet is not specified, here as upstream: when a network starts,
	// upstream's cluster manager lists the existing nodes from the informer's
	// lister (NodeController.bootstrapNetwork in
	// pkg/controllers/node/node_controller.go: nodeLister.List, whose order
	// is the cache's map order) and queues one reconcile per node on a
	// workqueue with 15 workers (NewController's Threadiness: 15, same file;
	// pkg/controller/controller.go startWorkers), and each node's
	// ReconcileNode (pkg/clustermanager/network_cluster_controller.go) takes
	// the next free subnet from the allocator (pkg/clustermanager/node/
	// node_allocator.go). So node-a/b/c getting the 1st/2nd/3rd host subnet
	// in a live run is one outcome among six, not an order to copy.
	g.Eventually(func(g Gomega) {
		c := suite.HostSubnetCondition(g, udn)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(udnv1.ReasonHostSubnetsExhausted))
		g.Expect(c.Message).To(ContainSubstring("every IPv4 host subnet of 10.60.0.0/23 (hostSubnet 24) is in use"))
	}).WithTimeout(timeout).Should(Succeed())
	assigned := map[string]string{}
	var without []string
	g.Eventually(func(g Gomega) {
		assigned, without = map[string]string{}, nil
		for _, n := range nodes {
			if s := suite.HostSubnets(g, n, network); len(s) > 0 {
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
	g.Expect(suite.HostSubnetCondition(g, udn).Message).To(ContainSubstring("[" + without[0] + "]"))
	// ... and a Warning event on the UDN names the node.
	g.Eventually(func(g Gomega) []string {
		var evs eventsv1.EventList
		g.Expect(suite.K8s.List(suite.Ctx, &evs, client.InNamespace(ns))).To(Succeed())
		var notes []string
		for _, e := range evs.Items {
			if e.Regarding.UID == udn.UID && e.Reason == nodectrl.EventHostSubnetAllocationFailed && e.Type == "Warning" {
				notes = append(notes, e.Note)
			}
		}
		return notes
	}).WithTimeout(timeout).Should(ContainElement(ContainSubstring("node " + without[0] + ": every IPv4 host subnet")))
	g.Expect(suite.NodeAnnotations(g, "l3-a")[ovnk.AnnotationNodeSubnets]).To(ContainSubstring(`"default":["10.244.0.0/24"]`))

	// Appending a subnet (with an IPv6 one) serves the third node and keeps
	// every existing assignment.
	rtest.UpdateObject(t, suite, udn, func(u *udnv1.UserDefinedNetwork) {
		u.Spec.Layer3.Subnets = append(u.Spec.Layer3.Subnets,
			udnv1.Layer3Subnet{CIDR: "10.61.0.0/23", HostSubnet: 24}, udnv1.Layer3Subnet{CIDR: "fd00:61::/48", HostSubnet: 64})
	})
	g.Eventually(func(g Gomega) {
		for _, n := range nodes {
			s := suite.HostSubnets(g, n, network)
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
		c := suite.HostSubnetCondition(g, udn)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(timeout).Should(Succeed())
	v6 := map[string]bool{}
	for _, n := range nodes {
		v6[suite.HostSubnets(g, n, network)[1]] = true
	}
	g.Expect(v6).To(HaveLen(3), "IPv6 host subnets are unique")
	// The NAD's condition is untouched by the host subnet condition.
	suite.ExpectCondition(t, udn, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	g.Expect(suite.K8s.Delete(suite.Ctx, udn)).To(Succeed())
	suite.ExpectGone(t, udn)
	// The deleted network's entries go; other components' entries stay.
	g.Eventually(func(g Gomega) {
		for _, n := range nodes {
			g.Expect(suite.HostSubnets(g, n, network)).To(BeNil())
		}
		g.Expect(suite.NodeAnnotations(g, "l3-a")[ovnk.AnnotationNodeSubnets]).To(ContainSubstring(`"default":["10.244.0.0/24"]`))
	}).WithTimeout(timeout).Should(Succeed())

	// A malformed annotation is left as it is.
	suite.SetNodeAnnotation(t, "l3-b", ovnk.AnnotationNodeSubnets, `not json`)
	udn2 := testobj.MakeUDN(ns, "net2").Spec(testobj.Layer3(udnv1.NetworkRolePrimary, "10.62.0.0/16")).Obj()
	g.Expect(suite.K8s.Create(suite.Ctx, udn2)).To(Succeed())
	g.Eventually(func(g Gomega) []string { return suite.HostSubnets(g, "l3-c", ns+"_net2") }).WithTimeout(timeout).Should(HaveLen(1))
	g.Consistently(func(g Gomega) string { return suite.NodeAnnotations(g, "l3-b")[ovnk.AnnotationNodeSubnets] }).
		WithTimeout(time.Second).Should(Equal("not json"))
	g.Expect(suite.K8s.Delete(suite.Ctx, udn2)).To(Succeed())
	suite.ExpectGone(t, udn2)
}

func TestNodeIDsSurviveRestart(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	suite.CreateNodes(t, "keep-a", "keep-b")
	g.Eventually(func(g Gomega) { suite.NodeID(g, "keep-a"); suite.NodeID(g, "keep-b") }).WithTimeout(timeout).Should(Succeed())
	suite.SetNodeAnnotation(t, "keep-b", ovnk.AnnotationNodeEncapIPs, `["10.0.0.2","10.0.0.3"]`)
	g.Eventually(func(g Gomega) []int { return suite.TunnelIDs(g, "keep-b") }).WithTimeout(timeout).Should(HaveLen(2))
	held := map[int]string{suite.NodeID(g, "keep-a"): "keep-a"}
	for _, id := range suite.TunnelIDs(g, "keep-b") {
		held[id] = "keep-b"
	}

	// After a restart, new nodes get none of the IDs held above.
	suite.RestartManager(t, reconcilers.DefaultConfig())
	suite.CreateNodes(t, "keep-c", "keep-d", "keep-e")
	for _, n := range []string{"keep-c", "keep-d", "keep-e"} {
		g.Eventually(func(g Gomega) { suite.NodeID(g, n) }).WithTimeout(timeout).Should(Succeed())
		g.Expect(held).NotTo(HaveKey(suite.NodeID(g, n)), "node %s got an ID already in use", n)
		held[suite.NodeID(g, n)] = n
	}
	g.Expect(suite.NodeID(g, "keep-a")).To(BeKeyOf(held))

}

func TestDeletedNodeFreesItsHostSubnetForAWaitingNode(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	suite.CreateNodes(t, "free-a", "free-b")
	ns := suite.NewNamespace(t, "free", nil)
	network := ns + "_net"
	udn := testobj.MakeUDN(ns, "net").Spec(testobj.Layer3Hosts(udnv1.NetworkRolePrimary, 25, "10.63.0.0/24")).Obj()
	g.Expect(suite.K8s.Create(suite.Ctx, udn)).To(Succeed())
	t.Cleanup(func() { _ = suite.K8s.Delete(suite.Ctx, udn) })
	g.Eventually(func(g Gomega) {
		g.Expect(suite.HostSubnets(g, "free-a", network)).To(HaveLen(1))
		g.Expect(suite.HostSubnets(g, "free-b", network)).To(HaveLen(1))
	}).WithTimeout(timeout).Should(Succeed())
	freed := suite.HostSubnets(g, "free-a", network)[0]

	suite.CreateNodes(t, "free-c")
	g.Eventually(func(g Gomega) {
		c := suite.HostSubnetCondition(g, udn)
		g.Expect(c.Reason).To(Equal(udnv1.ReasonHostSubnetsExhausted))
		g.Expect(c.Message).To(ContainSubstring("[free-c]"))
	}).WithTimeout(timeout).Should(Succeed())
	g.Expect(suite.HostSubnets(g, "free-c", network)).To(BeNil())

	g.Expect(suite.K8s.Delete(suite.Ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "free-a"}})).To(Succeed())
	g.Eventually(func(g Gomega) []string { return suite.HostSubnets(g, "free-c", network) }).WithTimeout(timeout).Should(Equal([]string{freed}))
	g.Eventually(func(g Gomega) metav1.ConditionStatus { return suite.HostSubnetCondition(g, udn).Status }).WithTimeout(timeout).Should(Equal(metav1.ConditionTrue))
}

// A node ID that is malformed, out of range, or another (older) node's is
// rewritten with an Event; the older node keeps its ID.
func TestBadOrDuplicateNodeIDIsRewritten(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	suite.CreateNodes(t, "dup-old")
	g.Eventually(func(g Gomega) { suite.NodeID(g, "dup-old") }).WithTimeout(timeout).Should(Succeed())
	old := suite.NodeID(g, "dup-old")
	time.Sleep(1100 * time.Millisecond) // creationTimestamp has second precision: dup-new is younger
	suite.CreateNodes(t, "dup-new")
	g.Eventually(func(g Gomega) { suite.NodeID(g, "dup-new") }).WithTimeout(timeout).Should(Succeed())

	for _, bad := range []string{strconv.Itoa(old), "99999999", "1", "node-7"} {
		suite.SetNodeAnnotation(t, "dup-new", ovnk.AnnotationNodeID, bad)
		g.Eventually(func(g Gomega) {
			id := suite.NodeID(g, "dup-new")
			g.Expect(id).NotTo(Equal(old))
			g.Expect(id).To(BeNumerically(">=", ovnk.FirstNodeID))
			g.Expect(id).To(BeNumerically("<=", ovnk.MaxNodeID))
		}).WithTimeout(timeout).Should(Succeed(), "node-id %q was not rewritten", bad)
		g.Expect(suite.NodeID(g, "dup-old")).To(Equal(old), "the older node keeps its ID")
	}
	g.Eventually(func(g Gomega) []string { return nodeEventNotes(g, "dup-new", nodectrl.EventInvalidNodeID) }).WithTimeout(timeout).Should(ContainElements(
		ContainSubstring("is already held by dup-old"),
		ContainSubstring(`k8s.ovn.org/node-id="99999999" is not a node ID (an integer in [2, 32767])`),
		ContainSubstring(`k8s.ovn.org/node-id="node-7" is not a node ID`)))
}

// A Layer3 subnet appended over a range in use after admission is held back
// (OKEP-5377): the NAD keeps its old subnets, and no node gets a host subnet
// of it until the conflict is gone.
func TestHeldBackLayer3SubnetGetsNoHostSubnets(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	suite.CreateNodes(t, "held-a", "held-b", "held-c")
	ns := suite.NewNamespace(t, "held", nil)
	network := ns + "_green"
	green := testobj.MakeUDN(ns, "green").Spec(testobj.Layer3Hosts(udnv1.NetworkRolePrimary, 25, "10.230.0.0/24")).Obj()
	g.Expect(suite.K8s.Create(suite.Ctx, green)).To(Succeed())
	// Only a subnet its NAD does not have yet is appended: a network whose
	// first NAD is still to be written gets one from its whole spec. Host
	// subnets come from the spec until a NAD exists, so they do not show
	// that green's NAD is there.
	suite.ExpectCondition(t, green, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	// Two host subnets (/25 of a /24) for three nodes: one of them waits.
	var waiting string
	g.Eventually(func(g Gomega) {
		waiting = ""
		got := 0
		for _, n := range []string{"held-a", "held-b", "held-c"} {
			if len(suite.HostSubnets(g, n, network)) == 1 {
				got++
			} else {
				waiting = n
			}
		}
		g.Expect(got).To(Equal(2))
	}).WithTimeout(timeout).Should(Succeed())

	backend := testobj.MakeUDN(ns, "backend").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.231.0.0/16")).Obj()
	g.Expect(suite.K8s.Create(suite.Ctx, backend)).To(Succeed())
	suite.ExpectCondition(t, backend, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	rtest.UpdateObject(t, suite, green, func(u *udnv1.UserDefinedNetwork) {
		u.Spec.Layer3.Subnets = append(u.Spec.Layer3.Subnets, udnv1.Layer3Subnet{CIDR: "10.231.0.0/16", HostSubnet: 25})
	})
	suite.ExpectCondition(t, green, metav1.ConditionFalse, udnv1.ReasonSubnetConflict)
	g.Consistently(func(g Gomega) []string { return suite.HostSubnets(g, waiting, network) }).
		WithTimeout(2*time.Second).WithPolling(100*time.Millisecond).Should(BeEmpty(), "a node got a host subnet of the held-back subnet")

	g.Expect(suite.K8s.Delete(suite.Ctx, backend)).To(Succeed())
	g.Eventually(func(g Gomega) []string { return suite.HostSubnets(g, waiting, network) }).WithTimeout(timeout).
		Should(ConsistOf(HavePrefix("10.231.")))
}

// TestRebuildReadsEveryNodeOldestFirst: a restarted manager rebuilds node
// IDs and host subnets from every node, read a page at a time (2 in these
// tests), oldest first and, among nodes created in the same second (creation
// timestamps have whole seconds), by name: of two nodes claiming one value
// the older keeps it. The order is checked against the nodes' own
// timestamps, so it holds however the creations fall across a second.
func TestRebuildReadsEveryNodeOldestFirst(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	suite.CreateNodes(t, "page-e", "page-d", "page-c", "page-b", "page-a")

	got, err := nodectrl.NodesOldestFirst(suite.Ctx, suite.K8s, rtest.NodeListPage)
	g.Expect(err).NotTo(HaveOccurred())
	var all corev1.NodeList
	g.Expect(suite.K8s.List(suite.Ctx, &all)).To(Succeed())
	g.Expect(len(all.Items)).To(BeNumerically(">", 2*rtest.NodeListPage), "the nodes span several pages")
	created := map[string]metav1.Time{}
	for _, n := range all.Items {
		created[n.Name] = n.CreationTimestamp
	}
	g.Expect(got).To(HaveLen(len(all.Items)))
	for i, n := range got {
		g.Expect(created).To(HaveKey(n), "node %s listed but not there", n)
		if i == 0 {
			continue
		}
		prev, this := created[got[i-1]], created[n]
		g.Expect(prev.After(this.Time)).To(BeFalse(), "%s (%s) before older %s (%s)", got[i-1], prev, n, this)
		if prev.Equal(&this) {
			g.Expect(got[i-1] < n).To(BeTrue(), "%s before %s, created in the same second", got[i-1], n)
		}
	}
}
