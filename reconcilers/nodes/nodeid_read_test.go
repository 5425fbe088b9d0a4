package nodes_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers"
	"github.com/udnkit/udnkit/reconcilers/internal/rtest"
	nodectrl "github.com/udnkit/udnkit/reconcilers/nodes"
)

// readNodeIDs runs the suite's manager with --node-id-source=read until the
// test ends (registered first, so it is restored after the test's nodes
// and networks are deleted), and creates a Primary Layer3 UDN of cidr; it
// returns the UDN and its network name.
func readNodeIDs(t *testing.T, cidr udnv1.CIDR) (*udnv1.UserDefinedNetwork, string) {
	t.Helper()
	cfg := reconcilers.DefaultConfig()
	cfg.NodeIDSource = nodectrl.NodeIDsRead
	suite.RestartManager(t, cfg)
	t.Cleanup(func() { suite.RestartManager(t, reconcilers.DefaultConfig()) })
	ns := suite.NewNamespace(t, "readid", nil)
	udn := testobj.MakeUDN(ns, "net").Spec(testobj.Layer3(udnv1.NetworkRolePrimary, cidr)).Obj()
	if err := suite.K8s.Create(suite.Ctx, udn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = suite.K8s.Delete(suite.Ctx, udn) })
	return udn, ns + "_net"
}

// clusterManagerWrites gives node the node ID id as OVN-Kubernetes' cluster
// manager does (clustermanager/node_allocation_controller.go): node-id and
// node-transit-switch-port-ifaddr in one write.
func clusterManagerWrites(t *testing.T, node string, id int) {
	t.Helper()
	rtest.UpdateObject(t, suite, testobj.MakeNode(node).Obj(), func(n *corev1.Node) {
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[ovnk.AnnotationNodeID] = strconv.Itoa(id)
		n.Annotations[ovnk.AnnotationNodeTransitSwitchPortIfAddr] = fmt.Sprintf(`{"ipv4":"100.88.0.%d/16"}`, id)
	})
}

// With --node-id-source=read the node controller writes no node ID: a node
// gets no host subnet until OVN-Kubernetes' cluster manager has written its
// node-id and node-transit-switch-port-ifaddr, and each Layer3 network's
// HostSubnetsAllocated condition and an Event say what it waits for. Then
// it proceeds, and the node ID is never rewritten.
func TestReadNodeIDsWaitForTheClusterManager(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	udn, network := readNodeIDs(t, "10.70.0.0/16")
	suite.CreateNodes(t, "rd-a", "rd-b")

	g.Eventually(func(g Gomega) {
		c := suite.HostSubnetCondition(g, udn)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(udnv1.ReasonWaitingForNodeIDs))
		g.Expect(c.Message).To(ContainSubstring("[rd-a, rd-b]; node rd-a: no k8s.ovn.org/node-id yet"))
	}).WithTimeout(timeout).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return nodeEventNotes(g, "rd-a", nodectrl.EventWaitingForNodeID) }).
		WithTimeout(timeout).Should(ContainElement(ContainSubstring("waiting for OVN-Kubernetes' cluster manager")))
	g.Consistently(func(g Gomega) map[string]string { return suite.NodeAnnotations(g, "rd-a") }).WithTimeout(2*time.Second).
		Should(And(Not(HaveKey(ovnk.AnnotationNodeID)), Not(HaveKey(ovnk.AnnotationNodeSubnets))), "the node controller wrote for a node without an ID")

	// A node-id without node-transit-switch-port-ifaddr is not the cluster
	// manager's yet (it rewrites both of a node that lacks either).
	suite.SetNodeAnnotation(t, "rd-a", ovnk.AnnotationNodeID, "12")
	g.Eventually(func(g Gomega) string { return suite.HostSubnetCondition(g, udn).Message }).WithTimeout(timeout).
		Should(ContainSubstring("node rd-a: k8s.ovn.org/node-id 12 but no k8s.ovn.org/node-transit-switch-port-ifaddr yet"))
	g.Consistently(func(g Gomega) []string { return suite.HostSubnets(g, "rd-a", network) }).WithTimeout(time.Second).Should(BeEmpty())

	clusterManagerWrites(t, "rd-a", 12)
	g.Eventually(func(g Gomega) []string { return suite.HostSubnets(g, "rd-a", network) }).WithTimeout(timeout).Should(HaveLen(1))
	g.Expect(suite.HostSubnets(g, "rd-b", network)).To(BeEmpty())
	g.Eventually(func(g Gomega) string { return suite.HostSubnetCondition(g, udn).Message }).WithTimeout(timeout).
		Should(ContainSubstring("[rd-b]; node rd-b: no k8s.ovn.org/node-id yet"))

	clusterManagerWrites(t, "rd-b", 13)
	g.Eventually(func(g Gomega) {
		g.Expect(suite.HostSubnets(g, "rd-b", network)).To(HaveLen(1))
		c := suite.HostSubnetCondition(g, udn)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
	}).WithTimeout(timeout).Should(Succeed())
	g.Consistently(func(g Gomega) []int { return []int{suite.NodeID(g, "rd-a"), suite.NodeID(g, "rd-b")} }).
		WithTimeout(time.Second).Should(Equal([]int{12, 13}))
}

// With --node-id-source=read a node's multi-VTEP tunnel IDs start from the
// node ID the cluster manager wrote and follow it when it changes; the
// others are above every node ID the cluster manager hands out (5000, its
// maxNodeIDs in go-controller/pkg/clustermanager/node_allocation_controller.go).
// A node ID written by hand that this process had handed out as another
// node's tunnel ID is that node's, and the other node gets a new tunnel ID;
// a node ID another node records too is not used until the cluster manager
// gives one of them another.
func TestReadNodeIDsAreFollowed(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	udn, network := readNodeIDs(t, "10.71.0.0/16")
	suite.CreateNodes(t, "fw-a", "fw-b")
	clusterManagerWrites(t, "fw-a", 20)
	clusterManagerWrites(t, "fw-b", 21)
	suite.SetNodeAnnotation(t, "fw-a", ovnk.AnnotationNodeEncapIPs, `["10.0.0.2","10.0.0.3"]`)
	g.Eventually(func(g Gomega) []int { return suite.TunnelIDs(g, "fw-a") }).WithTimeout(timeout).Should(HaveLen(2))
	g.Expect(suite.TunnelIDs(g, "fw-a")[0]).To(Equal(20))
	g.Expect(suite.TunnelIDs(g, "fw-a")[1]).To(BeNumerically(">", 5000))
	g.Expect(ovnk.MaxClusterManagerNodeID).To(Equal(5000))

	// The cluster manager gives fw-a another ID: its tunnel IDs follow.
	tunnel := suite.TunnelIDs(g, "fw-a")[1]
	clusterManagerWrites(t, "fw-a", 30)
	g.Eventually(func(g Gomega) []int { return suite.TunnelIDs(g, "fw-a") }).WithTimeout(timeout).Should(Equal([]int{30, tunnel}))

	// A new node gets fw-a's tunnel ID as its node ID (by hand; the cluster
	// manager stays below it): it is ready, and fw-a gets another tunnel ID.
	suite.CreateNodes(t, "fw-c")
	clusterManagerWrites(t, "fw-c", tunnel)
	g.Eventually(func(g Gomega) []string { return suite.HostSubnets(g, "fw-c", network) }).WithTimeout(timeout).Should(HaveLen(1))
	g.Eventually(func(g Gomega) {
		ids := suite.TunnelIDs(g, "fw-a")
		g.Expect(ids).To(HaveLen(2))
		g.Expect(ids[0]).To(Equal(30))
		g.Expect(ids[1]).NotTo(BeElementOf(20, 21, 30, tunnel))
		g.Expect(ids[1]).To(BeNumerically(">", 5000))
	}).WithTimeout(timeout).Should(Succeed())
	g.Expect(suite.NodeID(g, "fw-c")).To(Equal(tunnel), "the node controller rewrote the cluster manager's node ID")

	// Two nodes with one node ID: the one that is not known by it waits,
	// with a Warning, until the cluster manager gives it another.
	suite.CreateNodes(t, "fw-d")
	clusterManagerWrites(t, "fw-d", 21)
	g.Eventually(func(g Gomega) []string { return nodeEventNotes(g, "fw-d", nodectrl.EventInvalidNodeID) }).
		WithTimeout(timeout).Should(ContainElement(ContainSubstring("k8s.ovn.org/node-id 21 is node fw-b's too")))
	g.Eventually(func(g Gomega) string { return suite.HostSubnetCondition(g, udn).Message }).WithTimeout(timeout).
		Should(ContainSubstring("[fw-d]; node fw-d: k8s.ovn.org/node-id 21 is node fw-b's too"))
	g.Expect(suite.HostSubnets(g, "fw-d", network)).To(BeEmpty())
	clusterManagerWrites(t, "fw-d", 40)
	g.Eventually(func(g Gomega) {
		g.Expect(suite.HostSubnets(g, "fw-d", network)).To(HaveLen(1))
		g.Expect(suite.HostSubnetCondition(g, udn).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(timeout).Should(Succeed())
	g.Expect([]int{suite.NodeID(g, "fw-a"), suite.NodeID(g, "fw-b"), suite.NodeID(g, "fw-d")}).To(Equal([]int{30, 21, 40}))
}
