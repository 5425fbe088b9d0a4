package topology

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/ovnk"
)

// A single-stack IPv4 Primary Layer2 network on a dual-stack cluster.
// Upstream gives every gateway router a join IP of each family the cluster
// runs (generator/udn/join_ips.go: GetGWRouterIPs, by config.IPv4Mode and
// IPv6Mode, which config.go: completeConfig derives from the cluster and
// service subnets) while the network's transit subnets, and so its
// transit addresses and the routes through them, have the network's
// families only (util/multi_network.go: SetTransitSubnets, one per
// subnet). The rows that see both families are the GR's and the old
// topology's; the rest are the dual-stack plan's IPv4 rows.

// singleStackPlan is parityPlan's network with its IPv4 subnet only, on a
// dual-stack cluster: the NAD's join subnets and the management port's
// masquerade IPs have both families, as the dataplane controller fills
// them from the cluster configuration.
func singleStackPlan(t *testing.T, upgrade bool) *rows.Desired {
	t.Helper()
	net := parityNetwork()
	net.Subnets = []netip.Prefix{pfx("10.100.0.0/16")}
	net.ClusterIPv4, net.ClusterIPv6 = true, true
	return mustLayer2(t, net, parityNodes(upgrade))
}

var singleStackParity = []parity{
	{"Logical_Switch", pSW, "other_config",
		"interconn-ts=" + pSW + ",mcast_flood_unregistered=true,mcast_querier=false,mcast_snoop=true,requested-tnl-key=16711685,subnet=10.100.0.0/16",
		"base_secondary_layer2_network_controller.go: initializeLogicalSwitch (no IPv6 subnet: no ipv6_prefix); zone_interconnect/zone_ic_handler.go: addTransitSwitchConfig"},
	{"Logical_Router_Port", "rtotr-" + pGR1, "networks", "100.65.0.2/16,100.88.0.5/31,fd99::2/64",
		"gateway.go: createGWRouterPort (gwRouterJoinCIDRs: generator/udn/join_ips.go: GetGWRouterIPs, both cluster families; transit_router.go: getTransitRouterInfo gatewayRouterNets, the network's family)"},
	{"Logical_Router_Port", "rtotr-" + pGR1, "mac", "0a:58:64:41:00:02",
		"gateway.go: createGWRouterPort (IPAddrToHWAddr of gwRouterJoinCIDRs[0], the IPv4 join IP)"},
	{"Logical_Router", pGR1, "options:lb_force_snat_ip", "100.65.0.2 fd99::2",
		"gateway.go: createGWRouter (every GetGWRouterIPs address, the cluster's families)"},
	{"Logical_Router_Port", "trtor-" + pGR1, "networks", "100.88.0.4/31",
		"gateway.go: createGWRouterPeerRouterPort; transit_router.go: getTransitRouterInfo (netInfo.TransitSubnets: one per network subnet)"},
	{"Logical_Router_Port", "trtor-" + pGR3, "networks", "100.88.0.8/31",
		"layer2_user_defined_network_controller.go: addRouterSetupForRemoteNodeGR (transitRouterNets)"},
	{"Logical_Router_Static_Route", pTR + " 100.65.0.2", "nexthop", "100.88.0.5",
		"gateway.go: updateClusterRouterStaticRoutes (a join IP of a family without a transit nexthop gets no route)"},
	{"Logical_Router_Static_Route", pTR + " 100.65.0.4", "nexthop", "100.88.0.9",
		"layer2_user_defined_network_controller.go: addTransitRouterRoutes (one route per transit nexthop, the network's families)"},
	{"NAT", pSNAT4, "external_ip", "169.254.0.12",
		"base_network_controller_user_defined.go: buildUDNEgressSNAT (one SNAT per local pod subnet)"},
}

// singleStackSteadyParity is the trtos- port, which the upgrade changes.
var singleStackSteadyParity = []parity{
	{"Logical_Router_Port", pRTOS, "networks", "10.100.0.1/16",
		"base_network_controller.go: syncNodeClusterRouterPort (the network's subnets)"},
}

var singleStackUpgradeParity = []parity{
	{"Logical_Switch_Port", pSTOR2, "addresses", "0a:58:64:41:00:03 100.65.0.3/16 fd99::3/64",
		"layer2_user_defined_network_controller.go: addSwitchPortForRemoteNodeGR (every GetGWRouterIPs address)"},
	{"Logical_Router_Static_Route", pTR + " fd99::3", "nexthop", "fd99::3",
		"layer2_user_defined_network_controller.go: addRouterSetupForRemoteNodeGR (addTransitRouterRoutes with the join IPs as nexthops: both families)"},
	{"Logical_Router_Static_Route", pTR + " fd99::3", "external_ids:k8s.ovn.org/node", "node2",
		"layer2_user_defined_network_controller.go: addTransitRouterRoutes"},
	{"Logical_Router_Port", pRTOS + "-upgrade", "networks", "100.65.255.254/16,fd99::ffff:ffff:ffff:fffe/64",
		"layer2_user_defined_network_controller.go: ensureUpgradeTopology (getLastJoinIPs: generator/udn/join_ips.go: GetLastIPsFromJoinSubnet, the cluster's families)"},
	{"Logical_Router_Port", pRTOS, "networks", "10.100.0.1/16,169.254.0.12/17,fd69::c/112",
		"layer2_user_defined_network_controller.go: ensureUpgradeTopology (generator/udn/masquerade_ips.go: GetUDNMgmtPortMasqueradeIPs, the cluster's families)"},
}

// dualStackOnly are the dual-stack plan's entries whose rows or values
// the single-stack network does not share: its IPv6 subnet's rows and the
// rows the tables above hold.
var dualStackOnly = []struct{ row, column string }{
	{pRTOS, "networks"}, {pRTOS, "ipv6_ra_configs"}, {pSW, "other_config"},
	{"trtor-" + pGR1, "networks"}, {"trtor-" + pGR3, "networks"},
	{"rtotr-" + pGR1, "networks"}, {pGR1, "options"},
	{pTR + " fd99::4", "nexthop"}, {pTR + " fd99::4", "policy"},
	{pTR + " fd00:100::/64", "nexthop"}, {pGR1 + " fd00:100::/64", "output_port"},
	{pSNAT6, "external_ip"}, {pSNAT6, "match"},
	{pNodeIP6, "nexthops"}, {pPodPod6, "match"},
}

// sharedWithDualStack are the entries of tables that hold for the
// single-stack network too.
func sharedWithDualStack(tables ...[]parity) []parity {
	var out []parity
	for _, table := range tables {
		for _, p := range table {
			if !slices.Contains(dualStackOnly, struct{ row, column string }{p.row, p.column}) {
				out = append(out, p)
			}
		}
	}
	return out
}

var _ = addParityCase(parityCase{
	name: "layer2 single-stack on a dual-stack cluster", plan: func(t *testing.T) *rows.Desired { return singleStackPlan(t, false) },
	same:    append(append(sharedWithDualStack(layer2Parity, layer2RoutingParity), singleStackParity...), singleStackSteadyParity...),
	only:    layer2OnlyUdnkit,
	differs: layer2Differs,
})

var _ = addParityCase(parityCase{
	name: "layer2 single-stack on a dual-stack cluster, upgrade", plan: func(t *testing.T) *rows.Desired { return singleStackPlan(t, true) },
	same: append(append(sharedWithDualStack(layer2SteadyRows(pGR1, "trtor-"+pGR1, "trtor-"+pGR3, "rtotr-"+pGR1, pSW), zoneCoppParity(),
		layer2UpgradeParity, layer2RoutingParity, layer2UpgradeRowsParity), singleStackParity...), singleStackUpgradeParity...),
	only:    layer2OnlyUdnkit,
	differs: layer2Differs,
})

// TestJoinIPsFollowTheClusterFamilies: the join IPs' families are the
// cluster's and the network's, never just the join subnets' (the NAD names
// both by default), and a family the network does not have gets no transit
// address, route or SNAT.
func TestJoinIPsFollowTheClusterFamilies(t *testing.T) {
	for _, tc := range []struct {
		name       string
		subnets    []netip.Prefix
		v4, v6     bool
		rtotr, lb  string
		dummies    string
		noRouteFor string
	}{
		{"IPv4 network, IPv4 cluster", []netip.Prefix{pfx("10.100.0.0/16")}, true, false,
			"100.65.0.2/16,100.88.0.5/31", "100.65.0.2", "100.65.255.254/16", "fd99::2"},
		{"IPv4 network, dual-stack cluster", []netip.Prefix{pfx("10.100.0.0/16")}, true, true,
			"100.65.0.2/16,100.88.0.5/31,fd99::2/64", "100.65.0.2 fd99::2", "100.65.255.254/16,fd99::ffff:ffff:ffff:fffe/64", "fd99::2"},
		{"IPv6 network, dual-stack cluster", []netip.Prefix{pfx("fd00:100::/64")}, true, true,
			"100.65.0.2/16,fd97::5/127,fd99::2/64", "100.65.0.2 fd99::2", "100.65.255.254/16,fd99::ffff:ffff:ffff:fffe/64", "100.65.0.2"},
		{"IPv6 network, no cluster families given", []netip.Prefix{pfx("fd00:100::/64")}, false, false,
			"fd97::5/127,fd99::2/64", "fd99::2", "fd99::ffff:ffff:ffff:fffe/64", "100.65.0.2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			net := parityNetwork()
			net.Subnets, net.ClusterIPv4, net.ClusterIPv6 = tc.subnets, tc.v4, tc.v6
			net.MasqueradeIPs, net.Services = nil, nil
			d := mustLayer2(t, net, parityNodes(true))
			for _, c := range []struct{ table, row, column, want string }{
				{"Logical_Router_Port", "rtotr-" + pGR1, "networks", tc.rtotr},
				{"Logical_Router", pGR1, "options:lb_force_snat_ip", tc.lb},
				{"Logical_Router_Port", pRTOS + "-upgrade", "networks", tc.dummies},
				// The GR's MAC is its first join IP's: IPv4 when the cluster has it.
				{"Logical_Router_Port", "rtotr-" + pGR1, "mac", ovnk.MACFromIP(addr(strings.Fields(tc.lb)[0])).String()},
			} {
				if got, err := cell(d, c.table, c.row, c.column); err != nil || got != c.want {
					t.Errorf("%s %s %s = %q (%v), want %q", c.table, c.row, c.column, got, err, c.want)
				}
			}
			if rowByKey(d, "Logical_Router_Static_Route", pTR+" "+tc.noRouteFor) != nil {
				t.Errorf("the transit router routes the local GR's %s although the network has no transit address of its family", tc.noRouteFor)
			}
		})
	}
}

// A cluster family needs its join subnet, and a masquerade IP needs a
// family the network or the cluster has; either is refused naming the field.
func TestJoinFamiliesRefused(t *testing.T) {
	net := parityNetwork()
	net.Subnets, net.JoinSubnets = []netip.Prefix{pfx("10.100.0.0/16")}, []netip.Prefix{pfx("100.65.0.0/16")}
	net.ClusterIPv4, net.ClusterIPv6 = true, true
	net.MasqueradeIPs = []netip.Addr{addr("169.254.0.12")}
	if _, err := Layer2Topology(net, parityNodes(false)); err == nil || !strings.Contains(err.Error(), "network.joinSubnets: no join subnet for the cluster's ip6 family") {
		t.Errorf("a dual-stack cluster without an IPv6 join subnet: err = %v", err)
	}
	net.ClusterIPv6 = false
	net.MasqueradeIPs = []netip.Addr{addr("169.254.0.12"), addr("fd69::c")}
	if _, err := Layer2Topology(net, parityNodes(false)); err == nil || !strings.Contains(err.Error(), "network.masqueradeIPs[1]: fd69::c is of a family neither") {
		t.Errorf("an IPv6 masquerade IP on an IPv4 network and cluster: err = %v", err)
	}
}
