package multivtep

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/udnkit/udnkit/ovnk"
)

var (
	pfx  = netip.MustParsePrefix
	addr = netip.MustParseAddr
)

// chassisOf is a node's chassis name in the tests' networks.
func chassisOf(node string) string { return "5e1f0c1a-" + node }

// OKEP-5535 Layer2: only pods on remote multi-VTEP nodes get a remote port,
// named as OVN-Kubernetes names pod ports; bad input names the field.
func TestLayer2MultiVTEPPorts(t *testing.T) {
	nodes := []VTEPNode{
		{Name: "node-a", Local: true, EncapIPs: []netip.Addr{addr("10.0.1.2"), addr("10.0.1.3")}},
		{Name: "node-b", Chassis: chassisOf("node-b"), EncapIPs: []netip.Addr{addr("10.0.0.2"), addr("10.0.0.3")}},
		{Name: "node-c", Chassis: chassisOf("node-c"), EncapIPs: []netip.Addr{addr("10.0.2.2")}},
	}
	pod := func(name, node, ip, encap string) Layer2PodPort {
		return Layer2PodPort{NAD: "ns1/tenant-blue", MAC: ovnk.MACFromIP(addr(ip)).String(),
			VTEPPod: VTEPPod{Namespace: "ns1", Name: name, Node: node, IPs: []netip.Prefix{pfx(ip + "/24")}, EncapIP: addr(encap)}}
	}
	d, encaps, err := Layer2MultiVTEPPorts("ns1_tenant-blue", nodes, []Layer2PodPort{
		pod("local", "node-a", "203.203.0.4", "10.0.1.3"),
		pod("remote", "node-b", "203.203.0.5", "10.0.0.3"),
		pod("single", "node-c", "203.203.0.6", "10.0.2.2"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Switches) != 1 || d.Switches[0].Row.Name != "ns1_tenant.blue_ovn_layer2_switch" || !d.Switches[0].Ref || len(d.Switches[0].Ports) != 1 {
		t.Fatalf("switches = %+v, want one port on the referenced layer2 switch", d.Switches)
	}
	p := d.Switches[0].Ports[0]
	if p.Name != "ns1.tenant.blue_ns1_remote" || p.Type != "remote" || p.Addresses[0] != "0a:58:cb:cb:00:05 203.203.0.5" || p.Options["requested-chassis"] != chassisOf("node-b") {
		t.Errorf("remote port = %+v", p)
	}
	if want := (PortEncap{Chassis: chassisOf("node-b"), EncapIP: "10.0.0.3"}); len(encaps) != 1 || encaps[p.Name] != want {
		t.Errorf("encaps = %v, want %s -> %v", encaps, p.Name, want)
	}
	// Without pods the piece needs no switch: cleanup works before the topology exists.
	if d, _, err := Layer2MultiVTEPPorts("ns1_tenant-blue", nodes, nil); err != nil || len(d.Switches) != 0 {
		t.Errorf("no pods: switches = %v, err = %v", d.Switches, err)
	}
	noMAC := pod("p", "node-b", "203.203.0.7", "10.0.0.2")
	noMAC.MAC = ""
	for _, c := range []struct {
		pod  Layer2PodPort
		want string
	}{
		{pod("p", "node-9", "203.203.0.7", "10.0.0.2"), `pods[0] (ns1/p).node: node "node-9" is not known`},
		{pod("p", "node-b", "203.203.0.7", "10.0.9.9"), "pods[0] (ns1/p).encapIP: 10.0.9.9 is not one of node node-b's encap IPs"},
		{noMAC, `pods[0] (ns1/p): a remote pod port needs the pod's MAC and IPs, got mac ""`},
	} {
		if _, _, err := Layer2MultiVTEPPorts("ns1_tenant-blue", nodes, []Layer2PodPort{c.pod}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err = %v, want %q", err, c.want)
		}
	}
}
