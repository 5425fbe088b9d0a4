package services

import (
	"context"
	"net/netip"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/udnkit/udnkit/dataplane/topology/base"
	svctopo "github.com/udnkit/udnkit/dataplane/topology/services"
	"github.com/udnkit/udnkit/ovnk"
)

func node(name string, annotations map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}}
}

const gatewayConfig = `{"default": {"mode": "shared", "bridge-id": "breth0", "interface-id": "breth0_n", "mac-address": "0a:58:c0:00:02:02",` +
	` "ip-addresses": ["192.0.2.2/24", "2001:db8::2/64"], "next-hops": ["192.0.2.1", "2001:db8::1"], "node-port-enable": "true", "vlan-id": "0"}}`

// The zone's nodes as upstream's nodeInfoForNetwork reads them: a Layer3
// network's only with host subnets on it, on their node switch; the
// gateway router and node ports from the l3-gateway-config (none without
// one); the host addresses from host-cidrs; a node of another zone left
// out.
func TestNodes(t *testing.T) {
	c := fake.NewClientBuilder().WithObjects(
		node("node-a", map[string]string{ovnk.AnnotationNodeSubnets: `{"ns_green":["10.200.1.0/24"]}`,
			ovnk.AnnotationHostCIDRs: `["192.0.2.2/24","2001:db8::2/64"]`, ovnk.AnnotationL3GatewayConfig: gatewayConfig}),
		node("node-b", map[string]string{ovnk.AnnotationNodeSubnets: `{"ns_green":["10.200.2.0/24"]}`}),
		node("node-c", map[string]string{ovnk.AnnotationNodeSubnets: `{"default":["10.244.0.0/24"]}`}),
		node("node-d", map[string]string{ovnk.AnnotationNodeSubnets: `{"ns_green":["10.200.4.0/24"]}`}),
	).Build()
	r := &Reconciler{Client: c, Local: func(n *corev1.Node) bool { return n.Name != "node-d" }}
	got, err := r.nodes(context.Background(), svctopo.Network{Name: "ns_green", Topology: base.TopologyLayer3})
	if err != nil {
		t.Fatal(err)
	}
	want := []svctopo.Node{
		{Name: "node-a", Switch: "ns_green_node-a", GatewayRouter: "GR_ns_green_node-a", NodePortEnabled: true,
			HostAddresses:    []netip.Addr{netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("2001:db8::2")},
			GatewayAddresses: []netip.Addr{netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("2001:db8::2")}},
		{Name: "node-b", Switch: "ns_green_node-b"},
	}
	if !slices.EqualFunc(got, want, func(a, b svctopo.Node) bool {
		return a.Name == b.Name && a.Switch == b.Switch && a.GatewayRouter == b.GatewayRouter && a.NodePortEnabled == b.NodePortEnabled &&
			slices.Equal(a.HostAddresses, b.HostAddresses) && slices.Equal(a.GatewayAddresses, b.GatewayAddresses)
	}) {
		t.Errorf("nodes %+v, want %+v", got, want)
	}
	// A Layer2 network: every zone node, on the network's one switch.
	got, err = r.nodes(context.Background(), svctopo.Network{Name: "ns_blue", Topology: base.TopologyLayer2})
	if err != nil || len(got) != 3 || got[2].Switch != "ns_blue_ovn_layer2_switch" {
		t.Errorf("Layer2 nodes %+v, %v: want node-a, node-b and node-c on ns_blue_ovn_layer2_switch", got, err)
	}
}
