package policy

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/dataplane/topology/policy"
	"github.com/udnkit/udnkit/ovnk"
)

func nodeWith(name string, annotations map[string]string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}}
}

func nad(config string, annotations map[string]string) *nadv1.NetworkAttachmentDefinition {
	return &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "n", Annotations: annotations},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: config}}
}

const l3Config = `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns_green","topology":"layer3","role":"primary",
 "subnets":"10.200.0.0/16/24,2001:db8:200::/48/64"}`

// A Layer3 network's local nodes are those with their host subnets on it,
// each with the second address of each as its management IP, on its node
// switch; a node of another zone is left out.
func TestLayer3Network(t *testing.T) {
	r := &Reconciler{Local: func(n *corev1.Node) bool { return n.Name != "node-c" }}
	nodes := []corev1.Node{
		nodeWith("node-b", map[string]string{ovnk.AnnotationNodeSubnets: `{"ns_green":["10.200.2.0/24","2001:db8:200:3::/64"]}`}),
		nodeWith("node-a", map[string]string{ovnk.AnnotationNodeSubnets: `{"default":"10.244.1.0/24"}`}),
		nodeWith("node-c", map[string]string{ovnk.AnnotationNodeSubnets: `{"ns_green":["10.200.3.0/24"]}`}),
	}
	net, ok, err := r.network(context.Background(), nad(l3Config, nil), nodes)
	if err != nil || !ok {
		t.Fatalf("network: %v %v", ok, err)
	}
	if net.Name != "ns_green" || net.Topology != base.TopologyLayer3 || len(net.Nodes) != 1 {
		t.Fatalf("network %+v: want ns_green's layer3 network with node-b only", net)
	}
	n := net.Nodes[0]
	if n.Name != "node-b" || n.Switch != "ns_green_node-b" || n.ManagementPort != "k8s-ns_green_node-b" ||
		!slices.Equal(n.ManagementIPs, []netip.Addr{netip.MustParseAddr("10.200.2.2"), netip.MustParseAddr("2001:db8:200:3::2")}) {
		t.Errorf("node %+v", n)
	}
	if _, _, err := r.network(context.Background(), nad(l3Config, nil),
		[]corev1.Node{nodeWith("node-b", map[string]string{ovnk.AnnotationNodeSubnets: `{"ns_green":"x"}`})}); err == nil {
		t.Error("a malformed node-subnets: no error")
	}
	if _, ok, err := r.network(context.Background(), nad(`{"name":"s","topology":"layer3","role":"secondary","subnets":"10.1.0.0/16/24"}`, nil), nodes); ok || err != nil {
		t.Errorf("secondary network: ok %v err %v, want skipped", ok, err)
	}
}

// The zone's isolation piece lists the local nodes' default network
// management IPs; without any default subnet it holds nothing.
func TestIsolationNodes(t *testing.T) {
	r := &Reconciler{}
	d, err := r.isolation(context.Background(), []corev1.Node{
		nodeWith("node-a", map[string]string{ovnk.AnnotationNodeSubnets: `{"default":["10.244.2.0/24","fd00:10:244:3::/64"]}`}),
		nodeWith("node-b", nil)})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.PortGroups) != 1 || !strings.HasSuffix(d.PortGroups[0].ACLs[4].Match, "(ip4.src==10.244.2.2 || ip6.src==fd00:10:244:3::2)") {
		t.Errorf("isolation %+v", d.PortGroups)
	}
	d, err = r.isolation(context.Background(), []corev1.Node{nodeWith("node-b", nil)})
	if err != nil || len(d.PortGroups) != 0 || d.Owner.Piece != base.PieceUDNIsolation {
		t.Errorf("isolation without default subnets: %+v, %v; want the piece empty", d, err)
	}
}

// The zone's EgressIP sets hold every node's host addresses; a malformed
// k8s.ovn.org/host-cidrs is an error.
func TestEgressIPSets(t *testing.T) {
	r := &Reconciler{Cluster: ovnk.ClusterConfig{ClusterSubnets: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}}}
	hostIPs, err := nodeIPs([]corev1.Node{
		nodeWith("node-a", map[string]string{ovnk.AnnotationHostCIDRs: `["192.0.2.2/24","2001:db8::2/64"]`}),
		nodeWith("node-b", map[string]string{ovnk.AnnotationHostCIDRs: `["192.0.2.3/24"]`})})
	if err != nil {
		t.Fatal(err)
	}
	defaults, err := policy.EgressIPDefaultNetworkSets(r.cluster(), hostIPs)
	if err != nil {
		t.Fatal(err)
	}
	if len(defaults.AddressSets) != 2 || !slices.Equal(defaults.AddressSets[0].Addresses, []string{"192.0.2.2", "192.0.2.3"}) {
		t.Errorf("default-network sets of an IPv4 cluster %+v", defaults.AddressSets)
	}
	if _, err := nodeIPs([]corev1.Node{nodeWith("node-a", map[string]string{ovnk.AnnotationHostCIDRs: `192.0.2.2`})}); err == nil {
		t.Error("a malformed host-cidrs: no error")
	}
}
