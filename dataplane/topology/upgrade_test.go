package topology

import (
	"fmt"
	"maps"
	"net/netip"
	"testing"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// legacyPlan is the reference network with --adopt-legacy-layer2 (adopt)
// in a zone of two local nodes: node1 with the reference l3-gateway-config
// (udnkit writes its external side), node2 without one (OVN-Kubernetes
// does).
func legacyPlan(t *testing.T, adopt bool) *rows.Desired {
	t.Helper()
	net, nodes := legacyNetwork(adopt)
	return mustLayer2(t, net, nodes)
}

func legacyNetwork(adopt bool) (Layer2Network, []Layer2Node) {
	net := parityNetwork()
	net.GatewayMasqueradeIPs = []netip.Addr{addr("169.254.0.11"), addr("fd69::b")}
	net.MasqueradeSubnets = []netip.Prefix{pfx("169.254.0.0/17"), pfx("fd69::/112")}
	net.AdoptLegacy = adopt
	nodes := parityNodes(false)
	nodes[0].Gateway = referenceGateway("node1")
	nodes[1].Local = true
	return net, nodes
}

// TestLayer2LegacyAdoptsGatewayRows: with --adopt-legacy-layer2 the rows
// OVN-Kubernetes' old topology labels with the network and topology only
// (upstream's gateway.go gatewayInit, addExternalSwitch,
// updateGWRouterNAT and GetNetworkScopedClusterSubnetSNATMatch;
// base_network_controller.go syncNodeManagementPort, which writes the
// management port with no external_ids) are adopted exactly when udnkit
// now writes them: node1's gateway router, external side, SNATs to the GR
// masquerade IPs and management port; node2's, another bridge's localnet
// port, other NATs and every unlabelled row but the management port stay
// OVN-Kubernetes'.
func TestLayer2LegacyAdoptsGatewayRows(t *testing.T) {
	owner := legacyPlan(t, true).Owner
	legacy := map[string]string{ovnk.ExternalIDNetwork: "tenant_blue", ovnk.ExternalIDTopology: base.TopologyLayer2}
	lr := func(name string) *nbdb.LogicalRouter { return &nbdb.LogicalRouter{Name: name} }
	ls := func(name string) *nbdb.LogicalSwitch { return &nbdb.LogicalSwitch{Name: name} }
	lrp := func(name string) *nbdb.LogicalRouterPort { return &nbdb.LogicalRouterPort{Name: name} }
	lsp := func(name string) *nbdb.LogicalSwitchPort { return &nbdb.LogicalSwitchPort{Name: name} }
	route := func(prefix, hop, port string) *nbdb.LogicalRouterStaticRoute {
		r := &nbdb.LogicalRouterStaticRoute{IPPrefix: prefix, Nexthop: hop}
		if port != "" {
			r.OutputPort = base.Ptr(port)
		}
		return r
	}
	snat := func(logical, external, match string) *nbdb.NAT {
		return &nbdb.NAT{Type: nbdb.NATTypeSNAT, LogicalIP: logical, ExternalIP: external, Match: match}
	}
	const rtoe2 = "rtoe-" + pGR2
	out1, out2 := `outport == "`+pRTOE1+`"`, `outport == "`+rtoe2+`"`
	for _, c := range []struct {
		row       any
		unlabeled bool
		want      bool
	}{
		// The old topology's own rows, adopted to be removed.
		{lr(pTR), false, true},
		{ls(pSW), false, true},
		{lrp("rtos-" + pSW), false, true},
		{lsp("stor-" + pSW), false, true},
		{route("10.100.0.0/16", "10.100.0.2", ""), false, true},
		{snat("10.100.0.0/16", "169.254.0.12", ""), false, true},
		{&nbdb.LogicalRouterPolicy{Priority: 1004}, false, true},
		// node1's gateway rows, adopted and converged.
		{lr(pGR1), false, true},
		{lrp(pRTOE1), false, true},
		{ls(pEXT1), false, true},
		{lsp(pETOR1), false, true},
		{lsp(pLN1), false, true},
		{lsp(pMGMT1), true, true},
		{route("0.0.0.0/0", "192.0.2.1", pRTOE1), false, true},
		{route("169.254.0.0/17", "169.254.0.4", pRTOE1), false, true},
		{route("::/0", "2001:db8::1", pRTOE1), false, true},
		{snat("100.65.0.2", "169.254.0.11", ""), false, true},
		{snat("fd99::2", "fd69::b", ""), false, true},
		{snat("10.100.0.0/16", "169.254.0.11", out1), false, true},
		{snat("fd00:100::/64", "fd69::b", out1+" && ip6.dst == $a1"), false, true},
		// node2's gateway: OVN-Kubernetes writes it (no l3-gateway-config).
		{lr(pGR2), false, false},
		{lrp(rtoe2), false, false},
		{ls("ext_tenant_blue_node2"), false, false},
		{lsp("etor-" + pGR2), false, false},
		{lsp("breth0_tenant_blue_node2"), false, false},
		{lsp("k8s-tenant_blue_node2"), true, false},
		{route("0.0.0.0/0", "192.0.2.1", rtoe2), false, false},
		{snat("100.65.0.3", "169.254.0.11", ""), false, false},
		{snat("10.100.0.0/16", "169.254.0.11", out2), false, false},
		// Other rows of the network.
		{lsp("breth1_tenant_blue_node1"), false, false},
		{lsp("ns1_pod-a"), false, false},
		{snat("10.100.0.0/16", "169.254.0.11", ""), false, false},
		{snat("10.100.0.5", "172.18.0.100", ""), false, false},
		{&nbdb.NAT{Type: nbdb.NATTypeDNATAndSNAT, LogicalIP: "100.65.0.2", ExternalIP: "169.254.0.11"}, false, false},
		{route("10.96.0.0/16", "172.18.0.1", "rtotr-"+pGR1+"-x"), false, false},
		// Unlabelled rows other than the management port.
		{lr(pGR1), true, false},
		{ls(pEXT1), true, false},
		{lrp(pRTOE1), true, false},
		{lsp(pETOR1), true, false},
		{lsp("stor-" + pSW), true, false},
		{route("0.0.0.0/0", "192.0.2.1", pRTOE1), true, false},
		{snat("100.65.0.2", "169.254.0.11", ""), true, false},
		{&nbdb.LogicalRouterPolicy{Priority: 1004}, true, false},
	} {
		ids := maps.Clone(legacy)
		if c.unlabeled {
			ids = nil
		}
		setIDs(c.row, ids)
		what := fmt.Sprintf("%T %+v (unlabelled %v)", c.row, c.row, c.unlabeled)
		if got := owner.Owns(ids, c.row); got != c.want {
			t.Errorf("adopted %v, want %v: %s", got, c.want, what)
		}
		if c.unlabeled && owner.Settled(ids) {
			t.Errorf("an unlabelled row's ownership is remembered: %s", what)
		}
		// Another network's row of the same name, and without the flag, nothing.
		if other := maps.Clone(legacy); !c.unlabeled {
			other[ovnk.ExternalIDNetwork] = "tenant_red"
			setIDs(c.row, other)
			if owner.Owns(other, c.row) {
				t.Errorf("another network's row adopted: %s", what)
			}
			setIDs(c.row, ids)
		}
		if off := legacyPlan(t, false).Owner; off.Owns(ids, c.row) {
			t.Errorf("adopted without --adopt-legacy-layer2: %s", what)
		}
	}
	// A nil Legacy adopts every labelled row, never an unlabelled one.
	all := rows.Owner{Network: "tenant_blue", Topology: base.TopologyLayer2, Piece: base.PieceTransitRouter, AdoptLegacy: true}
	if all.Owns(nil, lsp(pMGMT1)) || !all.Owns(legacy, lsp("ns1_pod-a")) {
		t.Error("a nil Legacy: an unlabelled row adopted or a labelled one not")
	}
}

// TestLayer2LegacyCollect: removing a network no NAD describes adopts only
// its old transit router, switch and GR-to-switch rows: no gateway's.
func TestLayer2LegacyCollect(t *testing.T) {
	legacy := Layer2Legacy(Layer2Network{})
	for _, c := range []struct {
		row  any
		want bool
	}{
		{&nbdb.LogicalRouter{Name: pTR, ExternalIDs: map[string]string{"k": "v"}}, true},
		{&nbdb.LogicalRouter{Name: pGR1, ExternalIDs: map[string]string{"k": "v"}}, false},
		{&nbdb.LogicalSwitch{Name: pEXT1, ExternalIDs: map[string]string{"k": "v"}}, false},
		{&nbdb.LogicalRouterPort{Name: pRTOE1, ExternalIDs: map[string]string{"k": "v"}}, false},
		{&nbdb.LogicalSwitchPort{Name: pMGMT1}, false},
	} {
		if got := legacy(c.row); got != c.want {
			t.Errorf("%T %+v: adopted %v, want %v", c.row, c.row, got, c.want)
		}
	}
}

// TestLayer2LegacyGatewaysFollowTheConfig: the gateways Layer2Legacy is
// given are the local nodes with a gateway config, with their bridge and
// join IPs.
func TestLayer2LegacyGatewaysFollowTheConfig(t *testing.T) {
	owner := legacyPlan(t, true).Owner
	ids := map[string]string{ovnk.ExternalIDNetwork: "tenant_blue", ovnk.ExternalIDTopology: base.TopologyLayer2}
	if !owner.Owns(nil, &nbdb.LogicalSwitchPort{Name: pMGMT1}) {
		t.Fatal("node1's management port is not adopted")
	}
	net, nodes := legacyNetwork(true)
	nodes[0].Gateway.BridgeID = "breth1"
	nodes[0].JoinIPs = []netip.Prefix{pfx("100.65.0.9/16"), pfx("fd99::9/64")}
	owner = mustLayer2(t, net, nodes).Owner
	for row, want := range map[any]bool{
		&nbdb.LogicalSwitchPort{Name: "breth1_tenant_blue_node1", ExternalIDs: ids}:                              true,
		&nbdb.LogicalSwitchPort{Name: pLN1, ExternalIDs: ids}:                                                    false,
		&nbdb.NAT{Type: nbdb.NATTypeSNAT, LogicalIP: "100.65.0.9", ExternalIP: "169.254.0.11", ExternalIDs: ids}: true,
		&nbdb.NAT{Type: nbdb.NATTypeSNAT, LogicalIP: "100.65.0.2", ExternalIP: "169.254.0.11", ExternalIDs: ids}: false,
	} {
		if got := owner.Owns(ids, row); got != want {
			t.Errorf("%+v: adopted %v, want %v", row, got, want)
		}
	}
	nodes[0].Gateway = nil
	owner = mustLayer2(t, net, nodes).Owner
	if owner.Owns(nil, &nbdb.LogicalSwitchPort{Name: pMGMT1}) || owner.Owns(ids, &nbdb.LogicalRouter{Name: pGR1, ExternalIDs: ids}) {
		t.Error("a node without a gateway config: its management port or GR adopted")
	}
}

// setIDs sets a row's external_ids.
func setIDs(row any, ids map[string]string) {
	switch r := row.(type) {
	case *nbdb.LogicalRouter:
		r.ExternalIDs = ids
	case *nbdb.LogicalSwitch:
		r.ExternalIDs = ids
	case *nbdb.LogicalRouterPort:
		r.ExternalIDs = ids
	case *nbdb.LogicalSwitchPort:
		r.ExternalIDs = ids
	case *nbdb.LogicalRouterStaticRoute:
		r.ExternalIDs = ids
	case *nbdb.NAT:
		r.ExternalIDs = ids
	case *nbdb.LogicalRouterPolicy:
		r.ExternalIDs = ids
	}
}
