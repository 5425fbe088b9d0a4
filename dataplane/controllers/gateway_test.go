package controllers

import (
	"strings"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/ovnk"
)

// node1Gateway is the reference cluster's node-a l3-gateway-config, for node1.
const node1Gateway = `{"default": {"mode": "shared", "bridge-id": "breth0", "interface-id": "breth0_node1", "mac-address": "0a:58:c0:00:02:02", "ip-addresses": ["192.0.2.2/24", "2001:db8::2/64"], "next-hops": ["192.0.2.1", "2001:db8::1"], "node-port-enable": "true", "vlan-id": "0"}}`

// The Layer2 controller writes a local node's gateway external side and
// management port from its l3-gateway-config (read through the
// apiserver), heals them when they are deleted, drops them when the
// annotation turns malformed (the node stays in the network) and removes
// them with the node.
func TestLayer2GatewayExternalSide(t *testing.T) {
	s := newStack(t)
	o := s.dualStackOpts("node1")
	if _, err := Setup(s.ctx, s.mgr, o); err != nil {
		t.Fatal(err)
	}
	s.start()
	node := func(name, id, gateway string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{ovnk.AnnotationNodeID: id,
			ovnk.AnnotationLayer2TopologyVersion: "2.0"}}}
		if gateway != "" {
			n.Annotations[ovnk.AnnotationL3GatewayConfig] = gateway
		}
		return n
	}
	s.create(node("node1", "2", node1Gateway), node("node2", "3", node1Gateway), namespace("ns1"))
	s.createNAD(&nadv1.NetworkAttachmentDefinition{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "tenant-blue",
			Labels:      map[string]string{ovnk.LabelUserDefinedNetwork: ""},
			Annotations: map[string]string{ovnk.AnnotationNetworkID: "1", ovnk.AnnotationTunnelKeys: "[16711685,16715780]"}},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: l2Config},
	})
	const (
		gr   = "GR_ns1_tenant.blue_node1"
		ext  = "ext_ns1_tenant.blue_node1"
		rtoe = "rtoe-" + gr
		mgmt = "k8s-ns1_tenant.blue_node1"
	)
	nbctl := s.nbctl
	external := func() bool {
		return strings.Contains(nbctl("--bare", "--columns=name", "list", "Logical_Switch"), ext) &&
			strings.Contains(nbctl("--bare", "--columns=name", "list", "Logical_Router_Port"), rtoe) &&
			strings.Contains(nbctl("--bare", "--columns=name", "list", "Logical_Switch_Port"), mgmt)
	}
	s.eventually("node1's external side and management port", external)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "Logical_Router_Port", rtoe, "networks"}, `["169.254.0.11/32", "192.0.2.2/24", "2001:db8::2/64", "fd69::b/128"]`},
		{[]string{"get", "Logical_Router_Port", rtoe, "mac"}, `"0a:58:c0:00:02:02"`},
		{[]string{"get", "Logical_Router", gr, "external_ids:physical_ips"}, `"192.0.2.2,2001:db8::2,169.254.0.11,fd69::b"`},
		{[]string{"get", "Logical_Switch_Port", "breth0_ns1_tenant.blue_node1", "options"}, `{network_name=physnet}`},
		{[]string{"get", "Logical_Switch_Port", "etor-" + gr, "options"}, `{router-port=` + rtoe + `}`},
		{[]string{"get", "Logical_Switch_Port", mgmt, "addresses"}, `["0a:58:cb:cb:00:02 203.203.0.2 2010:100:200::2"]`},
	} {
		if got := nbctl(c.args...); got != c.want {
			t.Errorf("%v = %s, want %s", c.args, got, c.want)
		}
	}
	routes := normalized(nbctl("lr-route-list", gr))
	for _, want := range []string{"0.0.0.0/0 192.0.2.1 dst-ip " + rtoe, "::/0 2001:db8::1 dst-ip " + rtoe,
		"169.254.0.0/17 169.254.0.4 dst-ip " + rtoe, "fd69::/112 fd69::4 dst-ip " + rtoe} {
		if !strings.Contains(routes, want) {
			t.Errorf("GR routes lack %q:\n%s", want, routes)
		}
	}
	nats := normalized(nbctl("--bare", "--columns=logical_ip,external_ip,external_port_range", "find", "NAT", "type=snat"))
	for _, want := range []string{"100.65.0.2 169.254.0.11 32768-60999", "203.203.0.0/24 169.254.0.11 32768-60999", "2010:100:200::/60 fd69::b 32768-60999"} {
		if !strings.Contains(strings.ReplaceAll(nats, "\n", " "), want) {
			t.Errorf("SNATs lack %q:\n%s", want, nats)
		}
	}
	macs := func() string {
		return normalized(nbctl("--bare", "--columns=ip,mac", "find", "Static_MAC_Binding", "logical_port="+rtoe))
	}
	for _, want := range []string{"169.254.0.4 0a:58:a9:fe:00:04", "169.254.0.2 0a:58:a9:fe:00:02", "fd69::4 0a:58:1b:ac:71:41", "fd69::2 0a:58:e0:ff:1d:9b"} {
		if !strings.Contains(strings.ReplaceAll(macs(), "\n", " "), want) {
			t.Errorf("static MAC bindings of %s lack %q:\n%s", rtoe, want, macs())
		}
	}
	if got := nbctl("--bare", "--columns=name", "find", "Logical_Switch", "name=ext_ns1_tenant.blue_node2"); got != "" {
		t.Errorf("remote node2's external switch was programmed in this zone")
	}

	// Deleted by hand, the external side comes back.
	nbctl("ls-del", ext, "--", "lrp-del", rtoe, "--", "lsp-del", mgmt)
	s.eventually("the external side healed", external)

	// A malformed annotation: node1 stays in the network, without them.
	var n1 corev1.Node
	if err := s.c.Get(s.ctx, client.ObjectKey{Name: "node1"}, &n1); err != nil {
		t.Fatal(err)
	}
	n1.Annotations[ovnk.AnnotationL3GatewayConfig] = `{"default":{"mode":"shared","mac-address":"zz"}}`
	if err := s.c.Update(s.ctx, &n1); err != nil {
		t.Fatal(err)
	}
	s.eventually("no external side with a malformed config", func() bool {
		return !external() && strings.Contains(nbctl("--bare", "--columns=name", "list", "Logical_Router"), gr)
	})

	// Fixed, now on VLAN 7, then the node goes: its GR and external side
	// go with it.
	if err := s.c.Get(s.ctx, client.ObjectKey{Name: "node1"}, &n1); err != nil {
		t.Fatal(err)
	}
	n1.Annotations[ovnk.AnnotationL3GatewayConfig] = strings.Replace(node1Gateway, `"vlan-id": "0"`, `"vlan-id": "7"`, 1)
	if err := s.c.Update(s.ctx, &n1); err != nil {
		t.Fatal(err)
	}
	s.eventually("the external side back, its localnet port tagged 7", func() bool {
		return external() && nbctl("--bare", "--columns=tag_request", "find", "Logical_Switch_Port", "name=breth0_ns1_tenant.blue_node1") == "7"
	})
	if err := s.c.Delete(s.ctx, &n1); err != nil {
		t.Fatal(err)
	}
	s.eventually("node1's rows removed with it", func() bool {
		return !external() && !strings.Contains(nbctl("--bare", "--columns=name", "list", "Logical_Router"), gr) && macs() == ""
	})
}
