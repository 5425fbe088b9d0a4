package topology

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/ovnk"
)

// gatewayInput is node1's external side on tenant_blue, as the gateway
// parity case has it.
func gatewayInput() GatewayExternal {
	return GatewayExternal{
		Network: "tenant_blue", Node: "node1", Gateway: *referenceGateway("node1"),
		MasqueradeIPs:     []netip.Addr{addr("169.254.0.11"), addr("fd69::b")},
		MasqueradeSubnets: []netip.Prefix{pfx("169.254.0.0/17"), pfx("fd69::/112")},
		JoinIPs:           []netip.Addr{addr("100.65.0.2"), addr("fd99::2")},
		SNATSubnets:       []netip.Prefix{pfx("10.100.0.0/16"), pfx("fd00:100::/64")},
		ExternalPortRange: ovnk.DefaultExternalPortRange,
	}
}

func TestAddGatewayExternalRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*GatewayExternal, *rows.Router)
		want string
	}{
		{"another router", func(_ *GatewayExternal, r *rows.Router) { r.Row.Name = "GR_other_node1" }, "the router must be GR_tenant_blue_node1"},
		{"no node", func(g *GatewayExternal, _ *rows.Router) { g.Node = "" }, "network and node must be named"},
		{"disabled", func(g *GatewayExternal, _ *rows.Router) { g.Gateway.Mode = ovnk.GatewayModeDisabled }, `mode "" has no gateway to program`},
		{"no MAC", func(g *GatewayExternal, _ *rows.Router) { g.Gateway.MAC = nil }, "mac-address: the external interface needs a MAC"},
		{"no address", func(g *GatewayExternal, _ *rows.Router) { g.Gateway.IPAddresses = nil }, "ip-addresses: the external interface needs an address"},
		{"no bridge", func(g *GatewayExternal, _ *rows.Router) { g.Gateway.BridgeID = "" }, "bridge-id: the localnet port is named after the bridge"},
		{"VLAN", func(g *GatewayExternal, _ *rows.Router) { g.Gateway.VLANID = 5000 }, "vlan-id: 5000 is outside [0, 4095]"},
		{"port range", func(g *GatewayExternal, _ *rows.Router) { g.ExternalPortRange = "" }, `external port range "": must be <min port>-<max port>`},
		{"no IPv6 masquerade IP", func(g *GatewayExternal, _ *rows.Router) { g.MasqueradeIPs = g.MasqueradeIPs[:1] },
			"join IP fd99::2 has no ip6 masquerade IP to SNAT to"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := gatewayInput()
			gr := rows.Router{Row: nbdb.LogicalRouter{Name: "GR_tenant_blue_node1"}}
			tc.edit(&g, &gr)
			before := fmt.Sprintf("%+v", gr)
			sws, err := AddGatewayExternal(&gr, nil, g)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if len(sws) != 0 || fmt.Sprintf("%+v", gr) != before {
				t.Errorf("a refused external side changed the rows: %d switches, router %+v", len(sws), gr)
			}
		})
	}
}

func TestAddGatewayExternalVLAN(t *testing.T) {
	g := gatewayInput()
	g.Gateway.VLANID, g.PhysicalNetwork = 42, "uplink"
	gr := rows.Router{Row: nbdb.LogicalRouter{Name: "GR_tenant_blue_node1"}}
	sws, err := AddGatewayExternal(&gr, nil, g)
	if err != nil {
		t.Fatal(err)
	}
	ln := sws[0].Ports[0]
	if ln.Name != "breth0_tenant_blue_node1" || ln.TagRequest == nil || *ln.TagRequest != 42 || ln.Options["network_name"] != "uplink" {
		t.Errorf("localnet port %+v", ln)
	}
}

// TestGatewayStaticMACBindings: gateway/gateway.go CreateDummyGWMacBindings
// for a Primary network: the dummy next hops, then the host masquerade
// IPs, on the rtoe- port, each MAC from its IP, overriding learnt ones.
func TestGatewayStaticMACBindings(t *testing.T) {
	got, err := GatewayStaticMACBindings("tenant_blue", "node1", []netip.Prefix{pfx("169.254.0.0/17"), pfx("fd69::/112")})
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, b := range got {
		s = append(s, fmt.Sprintf("%s %s %s %v", b.LogicalPort, b.IP, b.MAC, b.OverrideDynamicMAC))
	}
	want := []string{
		"rtoe-GR_tenant_blue_node1 169.254.0.4 0a:58:a9:fe:00:04 true",
		"rtoe-GR_tenant_blue_node1 fd69::4 0a:58:1b:ac:71:41 true",
		"rtoe-GR_tenant_blue_node1 169.254.0.2 0a:58:a9:fe:00:02 true",
		"rtoe-GR_tenant_blue_node1 fd69::2 0a:58:e0:ff:1d:9b true",
	}
	if strings.Join(s, "\n") != strings.Join(want, "\n") {
		t.Errorf("bindings:\n%s\nwant\n%s", strings.Join(s, "\n"), strings.Join(want, "\n"))
	}
	if _, err := GatewayStaticMACBindings("tenant_blue", "node1", []netip.Prefix{pfx("169.254.0.0/31")}); err == nil {
		t.Error("a masquerade subnet without a fourth address was accepted")
	}
}

func TestManagementPortRejects(t *testing.T) {
	if _, err := ManagementPort("tenant_blue", "node1", nil); err == nil || !strings.Contains(err.Error(), "needs an address per subnet") {
		t.Errorf("no address: %v", err)
	}
	if _, err := ManagementPort("tenant_blue", "node1", []netip.Addr{addr("10.100.0.2"), {}}); err == nil {
		t.Error("an invalid second address was accepted")
	}
}

// TestLayer2NodeGateway: a local node without a gateway config gets no
// external side nor management port; one with a malformed (disabled)
// config refuses the plan, naming the node.
func TestLayer2NodeGateway(t *testing.T) {
	d := parityPlan(t, false)
	for _, s := range d.Switches {
		if strings.HasPrefix(s.Row.Name, "ext_") {
			t.Errorf("a node without l3-gateway-config got %s", s.Row.Name)
		}
		for _, p := range s.Ports {
			if strings.HasPrefix(p.Name, "k8s-") {
				t.Errorf("a node without l3-gateway-config got management port %s", p.Name)
			}
		}
	}
	nodes := parityNodes(false)
	nodes[0].Gateway = &ovnk.L3GatewayConfig{Mode: ovnk.GatewayModeDisabled}
	if _, err := Layer2Topology(parityNetwork(), nodes); err == nil || !strings.Contains(err.Error(), "node node1 k8s.ovn.org/l3-gateway-config: mode") {
		t.Errorf("disabled gateway: %v", err)
	}
}

// TestLayer2LocalGatewayMode: in local gateway mode the pods' source routes
// lead to the management port (base_network_controller.go:
// syncNodeManagementPort), the transit router commits all traffic
// (topology/topologyfactory.go: newClusterRouter) and no UDN-enabled
// service is routed (controller/services/services_controller.go routes
// them in shared mode only).
func TestLayer2LocalGatewayMode(t *testing.T) {
	net := parityNetwork()
	net.GatewayMode = ovnk.GatewayModeLocal
	d := mustLayer2(t, net, parityNodes(false))
	tr := d.Routers[0]
	if tr.Row.Options["ct-commit-all"] != "true" {
		t.Errorf("transit router options %v", tr.Row.Options)
	}
	hops := map[string]string{}
	for _, r := range tr.Routes {
		if r.Policy != nil && *r.Policy == nbdb.LogicalRouterStaticRoutePolicySrcIP {
			hops[r.IPPrefix] = r.Nexthop
		}
		if _, ok := r.ExternalIDs[ovnk.ExternalIDUDNEnabledService]; ok {
			t.Errorf("local gateway mode routes service IP %s", r.IPPrefix)
		}
	}
	if hops["10.100.0.0/16"] != "10.100.0.2" || hops["fd00:100::/64"] != "fd00:100::2" {
		t.Errorf("src-ip routes %v, want the management IPs", hops)
	}
	if shared := mustLayer2(t, parityNetwork(), parityNodes(false)); shared.Routers[0].Row.Options["ct-commit-all"] != "" {
		t.Error("shared gateway mode sets ct-commit-all")
	}
	for _, bad := range []struct {
		edit func(*Layer2Network)
		want string
	}{
		{func(n *Layer2Network) { n.GatewayMode = "bridged" }, `network.gatewayMode: gateway mode "bridged"`},
		{func(n *Layer2Network) { n.ExternalPortRange = "9-1" }, "network.externalPortRange"},
		{func(n *Layer2Network) {
			n.GatewayMasqueradeIPs = []netip.Addr{addr("169.254.0.11")}
			n.MasqueradeSubnets = []netip.Prefix{pfx("fd69::/112")}
		}, "network.gatewayMasqueradeIPs[0]: 169.254.0.11 is not inside a masquerade subnet"},
	} {
		n := parityNetwork()
		bad.edit(&n)
		if _, err := Layer2Topology(n, parityNodes(false)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("err = %v, want %q", err, bad.want)
		}
	}
}
