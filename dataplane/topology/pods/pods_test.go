package pods

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/dataplane/topology/migration"
	"github.com/udnkit/udnkit/ovnk"
)

func pod(name, node string, local bool, tunnel int, ips ...string) Pod {
	p := Pod{NAD: "ns1/net", Namespace: "ns1", Name: name, UID: "uid-" + name, Node: node, Chassis: "ch-" + node, Local: local,
		MAC: net.HardwareAddr{0x0a, 0x58, 0x0a, 0x64, 0, byte(len(name))}, TunnelID: tunnel}
	for _, ip := range ips {
		p.IPs = append(p.IPs, netip.MustParsePrefix(ip))
	}
	return p
}

// Only Layer2 holds ports of other zones' pods (remote ports for east-west
// traffic over the transit switch), but for a multi-VTEP node's (the
// multi-VTEP piece's); Layer3 and Localnet pods are wired in their own
// zone only. Every plan passes the planner's Validate.
func TestPortsPerTopology(t *testing.T) {
	multi := pod("ccc", "node3", false, 12, "10.0.2.5/24")
	multi.MultiVTEP = true
	pods := []Pod{pod("a", "node1", true, 10, "10.0.0.5/24"), pod("bb", "node2", false, 11, "10.0.1.5/24"), multi}
	for topo, want := range map[string][]string{
		base.TopologyLayer2:   {"net_ovn_layer2_switch: ns1.net_ns1_a ns1.net_ns1_bb(remote)"},
		base.TopologyLayer3:   {"net_node1: ns1.net_ns1_a"},
		ovnk.TopologyLocalnet: {"net_ovn_localnet_switch: ns1.net_ns1_a"},
	} {
		d, err := Ports(Network{Name: "net", Topology: topo}, pods)
		if err != nil {
			t.Fatalf("%s: %v", topo, err)
		}
		if err := d.Validate(); err != nil {
			t.Errorf("%s: %v", topo, err)
		}
		var got []string
		for _, s := range d.Switches {
			if !s.Ref {
				t.Errorf("%s: switch %s is not a reference: another piece owns it", topo, s.Row.Name)
			}
			line := s.Row.Name + ":"
			for _, p := range s.Ports {
				line += " " + p.Name
				if p.Type != "" {
					line += "(" + p.Type + ")"
				}
			}
			got = append(got, line)
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s: switches %q, want %q", topo, got, want)
		}
	}
}

func TestPortsReject(t *testing.T) {
	l2 := Network{Name: "net", Topology: base.TopologyLayer2}
	noChassis := pod("a", "node1", true, 10)
	noChassis.Chassis = ""
	noUID := pod("a", "node1", true, 10)
	noUID.UID = ""
	noMAC := pod("a", "node1", true, 10)
	noMAC.MAC = nil
	for name, c := range map[string]struct {
		n    Network
		p    Pod
		want string
	}{
		"no network name":       {Network{Topology: base.TopologyLayer2}, pod("a", "node1", true, 10), "network.name"},
		"unknown topology":      {Network{Name: "net", Topology: "layer4"}, pod("a", "node1", true, 10), "network.topology"},
		"layer2 without tunnel": {l2, pod("a", "node1", true, 0), "tunnel_id"},
		"no chassis":            {l2, noChassis, "chassis"},
		"no UID":                {l2, noUID, "UID"},
		"no MAC":                {l2, noMAC, "EUI-48"},
	} {
		_, err := Ports(c.n, []Pod{c.p})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %q", name, err, c.want)
		}
	}
}

// A network without IPAM: the port's addresses are the MAC alone.
func TestPortWithoutIPs(t *testing.T) {
	lsp, err := Port(Network{Name: "net", Topology: ovnk.TopologyLocalnet}, pod("a", "node1", true, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(lsp.Addresses) != 1 || lsp.Addresses[0] != "0a:58:0a:64:00:01" || lsp.PortSecurity[0] != lsp.Addresses[0] {
		t.Errorf("addresses %q port_security %q, want the MAC alone", lsp.Addresses, lsp.PortSecurity)
	}
}

func TestLocalnetSwitchReject(t *testing.T) {
	for name, c := range map[string]struct {
		n    LocalnetNetwork
		want string
	}{
		"no name":     {LocalnetNetwork{Role: "secondary"}, "network.name"},
		"bad role":    {LocalnetNetwork{Name: "n", Role: "tertiary"}, "network.role"},
		"vlan 4095":   {LocalnetNetwork{Name: "n", Role: "secondary", VLAN: 4095}, "network.vlan"},
		"zero subnet": {LocalnetNetwork{Name: "n", Role: "secondary", Subnets: []netip.Prefix{{}}}, "network.subnets[0]"},
	} {
		_, err := LocalnetSwitch(c.n)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %q", name, err, c.want)
		}
	}
	d, err := LocalnetSwitch(LocalnetNetwork{Name: "n", Role: "secondary"})
	if err != nil {
		t.Fatal(err)
	}
	lp := d.Switches[0].Ports[0]
	if lp.TagRequest != nil || lp.Options["network_name"] != "n" {
		t.Errorf("untagged localnet port without physicalNetworkName: tag_request %v, options %v; want none and network_name=n", lp.TagRequest, lp.Options)
	}
}

// A VM's two pods during a live migration share one DHCP_Options row per
// family; a pod of no VM gets none.
func TestAddVMDHCP(t *testing.T) {
	n := Network{Name: "net", Topology: base.TopologyLayer2}
	src := pod("src", "node1", true, 10, "10.0.0.5/24", "fd00::5/64")
	dst := pod("dst", "node2", false, 11, "10.0.0.5/24", "fd00::5/64")
	src.VM, dst.VM = "vm1", "vm1"
	plain := pod("plain", "node1", true, 12, "10.0.0.6/24")
	all := []Pod{src, dst, plain}
	d, err := Ports(n, all)
	if err != nil {
		t.Fatal(err)
	}
	cfg := migration.UpstreamVMDHCP(1400, nil)
	vmRows := func(p Pod) []nbdb.DHCPOptions {
		return cfg.Rows(migration.VM{Namespace: p.Namespace, Name: p.VM, IPs: p.IPs, Gateways: p.Gateways})
	}
	if err := AddVMDHCP(d, n, vmRows, all); err != nil {
		t.Fatal(err)
	}
	if len(d.DHCPOptions) != 2 {
		t.Fatalf("%d DHCP_Options rows, want 2 (one per family, shared by the VM's pods)", len(d.DHCPOptions))
	}
	refs := d.Switches[0].PortDHCP
	want := "ns1/vm1|10.0.0.0/24"
	if refs[src.PortName()].V4 != want || refs[dst.PortName()].V4 != want || refs[src.PortName()].V6 != "ns1/vm1|fd00::/64" {
		t.Errorf("port DHCP references %v, want both VM ports on %s and its IPv6 row", refs, want)
	}
	if _, ok := refs[plain.PortName()]; ok {
		t.Errorf("a pod of no VM got DHCP options")
	}
	if err := AddVMDHCP(d, Network{Name: "net", Topology: base.TopologyLayer3}, vmRows, all); err == nil {
		t.Errorf("Layer3 VM DHCP accepted; upstream writes it on Layer2 only")
	}
}

func TestSecondaryLayer2SwitchReject(t *testing.T) {
	for name, c := range map[string]struct {
		n    SecondaryLayer2Network
		want string
	}{
		"no name":            {SecondaryLayer2Network{NetworkID: 3}, "network.name"},
		"network ID too big": {SecondaryLayer2Network{Name: "n", NetworkID: ovnk.MaxNetworkID + 1}, "network.networkID"},
		"zero subnet":        {SecondaryLayer2Network{Name: "n", NetworkID: 3, Subnets: []netip.Prefix{{}}}, "network.subnets[0]"},
	} {
		_, err := SecondaryLayer2Switch(c.n)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %q", name, err, c.want)
		}
	}
}

// A pod attached twice through one NAD has two ports, one per
// k8s.ovn.org/pod-networks key: "ns1/net" names "ns1.net_ns1_a" and
// "ns1/net/1" names "ns1.net.1_ns1_a" (upstream's
// GetUserDefinedNetworkLogicalPortName over GetUserDefinedNetworkPrefix,
// which turns "/" and "-" into ".", pkg/util/util.go and
// pkg/util/multi_network.go), each with its key as k8s.ovn.org/nad
// (addLogicalPortToNetwork, pkg/ovn/base_network_controller_pods.go) and
// its own addresses and tunnel key.
func TestPortsOfANADNamedTwice(t *testing.T) {
	first := pod("a", "node1", true, 10, "10.0.0.5/24")
	second := pod("a", "node1", true, 11, "10.0.0.6/24")
	second.NAD, second.MAC = "ns1/net/1", net.HardwareAddr{0x0a, 0x58, 0x0a, 0, 0, 6}
	for _, topo := range []string{base.TopologyLayer2, base.TopologyLayer3, ovnk.TopologyLocalnet} {
		d, err := Ports(Network{Name: "net", Topology: topo}, []Pod{second, first})
		if err != nil {
			t.Fatalf("%s: %v", topo, err)
		}
		if err := d.Validate(); err != nil {
			t.Errorf("%s: %v", topo, err)
		}
		if len(d.Switches) != 1 || len(d.Switches[0].Ports) != 2 {
			t.Fatalf("%s: %+v, want one switch with two ports", topo, d.Switches)
		}
		for i, want := range []struct{ name, nad, addr string }{
			{"ns1.net.1_ns1_a", "ns1/net/1", "0a:58:0a:00:00:06 10.0.0.6"}, // sorted by name
			{"ns1.net_ns1_a", "ns1/net", "0a:58:0a:64:00:01 10.0.0.5"},
		} {
			p := d.Switches[0].Ports[i]
			if p.Name != want.name || p.ExternalIDs[ovnk.ExternalIDNAD] != want.nad || p.Addresses[0] != want.addr {
				t.Errorf("%s: port %d = %s nad %s addresses %v, want %s nad %s addresses %s", topo, i, p.Name, p.ExternalIDs[ovnk.ExternalIDNAD], p.Addresses, want.name, want.nad, want.addr)
			}
		}
	}
}
