package topology

import (
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/rows"
)

// parity is one (table, column) of a row udnkit writes that upstream's
// ovnkube-controller also writes for the same network, the value both write
// for the plan below, and where upstream writes it (a path under
// go-controller/pkg/ovn/ and the function), so a reviewer can check each
// entry against upstream's source.
type parity struct {
	table, row, column string
	want               string
	upstream           string
}

// parityPlan is a 3-node dual-stack Primary Layer2 network in node1's zone:
// node IDs 2, 3 and 4, each node's chassis its k8s.ovn.org/node-chassis-id.
// upgrade leaves node2 on the old topology.
func parityPlan(t *testing.T, upgrade bool) *rows.Desired {
	t.Helper()
	return mustLayer2(t, parityNetwork(), parityNodes(upgrade))
}

// parityNetwork is parityPlan's network.
func parityNetwork() Layer2Network {
	return Layer2Network{
		Name:                   "tenant_blue",
		Subnets:                []netip.Prefix{pfx("10.100.0.0/16"), pfx("fd00:100::/64")},
		JoinSubnets:            []netip.Prefix{pfx("100.65.0.0/16"), pfx("fd99::/64")},
		SwitchTunnelKey:        16711685,
		TransitRouterTunnelKey: 16715780,
		MTU:                    1300, // the UDN's own mtu
		GatewayMTU:             1400, // the cluster's --mtu
		MasqueradeIPs:          []netip.Addr{addr("169.254.0.12"), addr("fd69::c")},
		MasqueradeBits:         map[int]int{4: 17, 6: 112},
		Services: []UDNEnabledService{
			{Key: "default/kubernetes", ClusterIPs: []netip.Addr{addr("10.96.0.1"), addr("fd96::1")}},
			{Key: "kube-system/kube-dns", ClusterIPs: []netip.Addr{addr("10.96.0.10"), addr("fd96::a")}},
		},
		// The reference cluster runs EgressIP: the tables check its
		// no-reroute policies.
		EgressIP: true,
	}
}

// parityNodes are parityPlan's nodes; upgrade leaves node2 on the old
// topology.
func parityNodes(upgrade bool) []Layer2Node {
	nodes := []Layer2Node{
		{Name: "node1", ID: 2, Chassis: chassisOf("node1"), Local: true, TopologyVersion: "2.0", LegacyTunnelKey: 4,
			NodeIPs: []netip.Addr{addr("172.18.0.2"), addr("fc00:f853::2")}},
		{Name: "node2", ID: 3, Chassis: chassisOf("node2"), TopologyVersion: "2.0", LegacyTunnelKey: 5},
		{Name: "node3", ID: 4, Chassis: chassisOf("node3"), TopologyVersion: "2.0", LegacyTunnelKey: 6},
	}
	if upgrade {
		nodes[1].TopologyVersion = ""
	}
	return nodes
}

const (
	pTR   = "tenant_blue_transit_router"
	pSW   = "tenant_blue_ovn_layer2_switch"
	pGR1  = "GR_tenant_blue_node1"
	pGR2  = "GR_tenant_blue_node2"
	pGR3  = "GR_tenant_blue_node3"
	pRTOS = "trtos-" + pSW
	// pSTOR2 is node2's remote port on the switch while it runs the old topology.
	pSTOR2 = "stor-" + pSW + "_node2"
)

// layer2Parity is the golden table of the steady state (every node on 2.0).
var layer2Parity = []parity{
	{"Logical_Router", pTR, "options", "requested-tnl-key=16715780",
		"topology/topologyfactory.go: NewTransitRouter (the network's transit router tunnel key)"},
	{"Logical_Router", pTR, "external_ids:k8s-cluster-router", "yes",
		"topology/topologyfactory.go: newClusterRouter"},
	{"Logical_Router_Port", pRTOS, "options", "gateway_mtu=1400,requested-tnl-key=1",
		"base_network_controller.go: syncNodeClusterRouterPort (gateway_mtu: the cluster MTU; transit_router.go: transitRouterToSwitchTunnelKey)"},
	{"Logical_Router_Port", "rtotr-" + pGR1, "options", "gateway_mtu=1400",
		"gateway.go: createGWRouterPort (gateway_mtu: the cluster MTU)"},
	{"Logical_Router_Port", pRTOS, "mac", "0a:58:0a:64:00:01",
		"base_network_controller.go: syncNodeClusterRouterPort (IPAddrToHWAddr of the IPv4 gateway IP)"},
	{"Logical_Router_Port", pRTOS, "networks", "10.100.0.1/16,fd00:100::1/64",
		"base_network_controller.go: syncNodeClusterRouterPort (GetNodeGatewayIP per subnet)"},
	{"Logical_Router_Port", pRTOS, "ipv6_ra_configs",
		"address_mode=dhcpv6_stateful,max_interval=900,min_interval=300,mtu=1300,router_preference=LOW,send_periodic=true",
		"base_network_controller.go: syncNodeClusterRouterPort (primary Layer2 with IPv6; mtu: the network's bnc.MTU())"},
	{"Logical_Router_Port", "trtor-" + pGR1, "options", "requested-tnl-key=12",
		"gateway.go: createGWRouterPeerRouterPort; transit_router.go: getTransitRouterPortTunnelKey (10 + node ID)"},
	{"Logical_Router_Port", "trtor-" + pGR1, "peer", "rtotr-" + pGR1,
		"gateway.go: createGWRouterPeerRouterPort"},
	{"Logical_Router_Port", "trtor-" + pGR1, "mac", "0a:58:64:58:00:04",
		"gateway.go: createGWRouterPeerRouterPort; transit_router.go: getTransitRouterInfo (IPv4 transit router IP)"},
	{"Logical_Router_Port", "trtor-" + pGR1, "networks", "100.88.0.4/31,fd97::4/127",
		"gateway.go: createGWRouterPeerRouterPort; transit_router.go: getTransitRouterInfo (GenerateIPPair(nodeID))"},
	{"Logical_Router_Port", "trtor-" + pGR2, "options", "requested-chassis=" + chassisOf("node2") + ",requested-tnl-key=13",
		"layer2_user_defined_network_controller.go: addRouterSetupForRemoteNodeGR (ParseNodeChassisIDAnnotation)"},
	{"Logical_Router_Port", "trtor-" + pGR3, "mac", "0a:58:64:58:00:08",
		"layer2_user_defined_network_controller.go: addRouterSetupForRemoteNodeGR"},
	{"Logical_Router_Port", "trtor-" + pGR3, "networks", "100.88.0.8/31,fd97::8/127",
		"layer2_user_defined_network_controller.go: addRouterSetupForRemoteNodeGR"},
	{"Logical_Router_Port", "trtor-" + pGR3, "peer", "",
		"layer2_user_defined_network_controller.go: addRouterSetupForRemoteNodeGR (a remote port has no peer)"},
	{"Logical_Router_Port", "rtotr-" + pGR1, "mac", "0a:58:64:41:00:02",
		"gateway.go: createGWRouterPort (IPAddrToHWAddr of the GR's IPv4 join IP)"},
	{"Logical_Router_Port", "rtotr-" + pGR1, "networks", "100.65.0.2/16,100.88.0.5/31,fd97::5/127,fd99::2/64",
		"gateway.go: createGWRouterPort (join IPs, then the transit gateway router IPs)"},
	{"Logical_Router_Port", "rtotr-" + pGR1, "peer", "trtor-" + pGR1,
		"gateway.go: createGWRouterPort"},
	{"Logical_Router", pGR1, "options:chassis", chassisOf("node1"),
		"gateway.go: createGWRouter (gwConfig.annoConfig.ChassisID)"},
	{"Logical_Router_Static_Route", pTR + " 100.65.0.3", "nexthop", "100.88.0.7",
		"layer2_user_defined_network_controller.go: addTransitRouterRoutes (remote GR join IP via its transit IP)"},
	{"Logical_Router_Static_Route", pTR + " fd99::4", "nexthop", "fd97::9",
		"layer2_user_defined_network_controller.go: addTransitRouterRoutes"},
	{"Logical_Switch", pSW, "other_config:requested-tnl-key", "16711685",
		"layer2_user_defined_network_controller.go: the layer2 switch keeps the network's legacy switch key (OKEP-5094)"},
	{"Logical_Switch", pSW, "other_config",
		"interconn-ts=" + pSW + ",ipv6_prefix=fd00:100::,mcast_flood_unregistered=true,mcast_querier=false,mcast_snoop=true," +
			"requested-tnl-key=16711685,subnet=10.100.0.0/16",
		"base_secondary_layer2_network_controller.go: initializeLogicalSwitch (subnet, ipv6_prefix per cluster subnet); " +
			"zone_interconnect/zone_ic_handler.go: addTransitSwitchConfig (interconn-ts, requested-tnl-key: GetTunnelKeys()[0], mcast_*)"},
	{"Gateway_Chassis", pRTOS, "name", pRTOS + "-" + chassisOf("node1"),
		"base_network_controller.go: syncNodeClusterRouterPort (lrpName + \"-\" + chassisID)"},
	{"Gateway_Chassis", pRTOS, "chassis_name", chassisOf("node1"),
		"base_network_controller.go: syncNodeClusterRouterPort (ParseNodeChassisIDAnnotation of the zone's node)"},
	{"Gateway_Chassis", pRTOS, "priority", "1",
		"base_network_controller.go: syncNodeClusterRouterPort"},
	{"Logical_Router", pTR, "copp", "ovnkube-default",
		"topology/topologyfactory.go: newClusterRouter (Copp: the UUID EnsureDefaultCOPP returns; types.DefaultCOPPName)"},
	{"Logical_Router", pGR1, "copp", "ovnkube-default",
		"gateway.go: createGWRouter (Copp: &gw.coppUUID, the default COPP)"},
	{"Copp", "ovnkube-default", "meters",
		"arp-resolve=arp-resolve-rate-limiter,arp=arp-rate-limiter,bfd=bfd-rate-limiter,event-elb=event-elb-rate-limiter," +
			"icmp4-error=icmp4-error-rate-limiter,icmp6-error=icmp6-error-rate-limiter,reject=reject-rate-limiter," +
			"svc-monitor=svc-monitor-rate-limiter,tcp-reset=tcp-reset-rate-limiter",
		"copp.go: EnsureDefaultCOPP (defaultProtocolNames, getMeterNameForProtocol: <protocol>-types.OvnRateLimitingMeter)"},
	{"Copp", "ovnkube-default", "external_ids", "", "copp.go: EnsureDefaultCOPP (none)"},
	{"Meter", "arp-rate-limiter", "fair", "true", "copp.go: EnsureDefaultCOPP (meterFairness)"},
	{"Meter", "svc-monitor-rate-limiter", "unit", "pktps", "copp.go: EnsureDefaultCOPP (types.PacketsPerSecond)"},
	{"Meter", "reject-rate-limiter", "bands", "drop/25",
		"copp.go: EnsureDefaultCOPP (CreateOrUpdateMeterOps with []*nbdb.MeterBand{band}: one band per meter)"},
	{"Meter_Band", "arp-rate-limiter", "action", "drop", "copp.go: EnsureDefaultCOPP (types.MeterAction)"},
	{"Meter_Band", "arp-rate-limiter", "rate", "25", "copp.go: EnsureDefaultCOPP (Rate: int(25))"},
	{"Meter_Band", "arp-rate-limiter", "burst_size", "0", "copp.go: EnsureDefaultCOPP (unset)"},
	// The UDN-enabled services' routes: on the transit router
	// (GetNetworkScopedClusterRouterName of a Layer2 network), the
	// service's spec.clusterIP via the management IP of its family; a
	// dual-stack service's second ClusterIP (fd96::a here) is not routed
	// (TestServiceRoutesFollowTheServices asserts the routes exactly).
	{"Logical_Router_Static_Route", pTR + " 10.96.0.10", "nexthop", "10.100.0.2",
		"controller/services/services_controller.go: configureUDNEnabledServiceRoute (MatchFirstIPFamily of the ClusterIP in the node's mgmtIPs)"},
	{"Logical_Router_Static_Route", pTR + " 10.96.0.10", "policy", "dst-ip",
		"controller/services/services_controller.go: configureUDNEnabledServiceRoute"},
	{"Logical_Router_Static_Route", pTR + " 10.96.0.10", "external_ids:k8s.ovn.org/udn-enabled-default-service", "kube-system/kube-dns",
		"controller/services/services_controller.go: configureUDNEnabledServiceRoute (types.UDNEnabledServiceExternalID: the service's namespace/name)"},
	{"Logical_Router_Static_Route", pTR + " 10.96.0.1", "external_ids:k8s.ovn.org/udn-enabled-default-service", "default/kubernetes",
		"controller/services/services_controller.go: configureUDNEnabledServiceRoute"},
}

// layer2UpgradeParity is the golden table while node2 runs the old topology.
var layer2UpgradeParity = []parity{
	{"Logical_Switch_Port", pSTOR2, "type", "remote",
		"layer2_user_defined_network_controller.go: addSwitchPortForRemoteNodeGR"},
	{"Logical_Switch_Port", pSTOR2, "addresses", "0a:58:64:41:00:03 100.65.0.3/16 fd99::3/64",
		"layer2_user_defined_network_controller.go: addSwitchPortForRemoteNodeGR (GR join IPs, MAC of the first)"},
	{"Logical_Switch_Port", pSTOR2, "options:requested-chassis", chassisOf("node2"),
		"layer2_user_defined_network_controller.go: addSwitchPortForRemoteNodeGR (ParseNodeChassisIDAnnotation)"},
	{"Logical_Switch_Port", pSTOR2, "options:requested-tnl-key", "5",
		"layer2_user_defined_network_controller.go: addSwitchPortForRemoteNodeGR (tunnelIDForNode: the node's k8s.ovn.org/udn-layer2-node-gateway-router-lrp-tunnel-ids)"},
	{"Logical_Switch_Port", "stotr-" + pSW + "-upgrade", "options:requested-tnl-key", "4",
		"layer2_user_defined_network_controller.go: ensureUpgradeTopology (the local node's tunnel ID for the network)"},
	{"Logical_Router_Port", pRTOS, "networks", "10.100.0.1/16,169.254.0.12/17,fd00:100::1/64,fd69::c/112",
		"layer2_user_defined_network_controller.go: ensureUpgradeTopology (GetUDNMgmtPortMasqueradeIPs added to the trtos- port)"},
	{"Logical_Router_Static_Route", pTR + " 100.65.0.3", "nexthop", "100.65.0.3",
		"layer2_user_defined_network_controller.go: addRouterSetupForRemoteNodeGR (joinIP via joinIP, always the longest prefix)"},
	{"Gateway_Chassis", pRTOS, "chassis_name", chassisOf("node1"),
		"layer2_user_defined_network_controller.go: syncClusterRouterPorts (syncNodeClusterRouterPort runs before ensureUpgradeTopology, whose upgrade port gets none)"},
}

// cell reads one column of one row of d: a Logical_Router, Logical_Switch or
// port by name, a static route as "<router> <ip_prefix>", a router's Copp
// and its Meters by name, a Meter_Band by the name of the meter holding it,
// any other row by its planRows key (a port's Gateway_Chassis by the port's
// name). external_ids read as the planner writes them, with the owner's keys
// (none on the zone's COPP rows). A router's copp reads as its COPP's name
// (its UUID once planned), a meter's bands as "<action>/<rate>" of each. A
// column
// "options:key" or "other_config:key" reads one key of a map. Maps read as
// sorted "k=v" pairs and sets as sorted values, comma-separated.
func cell(d *rows.Desired, table, row, column string) (string, error) {
	var found any
	for _, r := range d.Routers {
		switch table {
		case "Logical_Router":
			if r.Row.Name == row {
				lr := r.Row
				if r.Copp != nil {
					lr.Copp = &r.Copp.Row.Name
				}
				lr.LoadBalancerGroup, lr.LoadBalancer = r.LoadBalancerGroups, r.LoadBalancers // by name
				found = lr
			}
		case "Copp", "Meter", "Meter_Band":
			if f := coppCell(r.Copp, table, row); f != nil {
				found = f
			}
		case "Logical_Router_Port":
			for _, p := range r.Ports {
				if p.Name == row {
					found = p
				}
			}
		case "Logical_Router_Static_Route":
			for _, s := range r.Routes {
				if r.Row.Name+" "+s.IPPrefix == row {
					found = s
				}
			}
		}
	}
	for _, s := range d.Switches {
		switch table {
		case "Logical_Switch":
			if s.Row.Name == row {
				ls := s.Row
				ls.LoadBalancerGroup, ls.LoadBalancer = s.LoadBalancerGroups, s.LoadBalancers // by name
				found = ls
			}
		case "Logical_Switch_Port":
			for _, p := range s.Ports {
				if p.Name == row {
					found = p
				}
			}
		}
	}
	if found == nil {
		found = rowByKey(d, table, row) // NAT, policies, root tables
	}
	if found == nil {
		return "", fmt.Errorf("no such row")
	}
	col, key, isKey := strings.Cut(column, ":")
	v := reflect.ValueOf(found)
	for i := range v.NumField() {
		if v.Type().Field(i).Tag.Get("ovsdb") != col {
			continue
		}
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Map:
			m := f.Interface().(map[string]string)
			if col == "external_ids" && schema.Lookup(table).Kind != schema.Zone {
				m = withOwnerIDs(d, m)
			}
			if isKey {
				val, ok := m[key]
				if !ok {
					return "", fmt.Errorf("no key %s", key)
				}
				return val, nil
			}
			var kv []string
			for k, val := range m {
				kv = append(kv, k+"="+val)
			}
			slices.Sort(kv)
			return strings.Join(kv, ","), nil
		case reflect.Slice:
			s := slices.Clone(f.Interface().([]string))
			slices.Sort(s)
			return strings.Join(s, ","), nil
		case reflect.Pointer:
			if f.IsNil() {
				return "", nil
			}
			return fmt.Sprint(f.Elem().Interface()), nil
		default:
			return fmt.Sprint(f.Interface()), nil
		}
	}
	return "", fmt.Errorf("no column %s", col)
}

// coppCell is a router's COPP, one of its meters (its bands as
// "<action>/<rate>") or the band a meter holds, by name (nil: none).
func coppCell(c *rows.Copp, table, row string) any {
	if c == nil {
		return nil
	}
	if table == "Copp" && c.Row.Name == row {
		return c.Row
	}
	for _, m := range c.Meters {
		switch {
		case m.Name != row:
		case table == "Meter":
			m.Bands = []string{fmt.Sprintf("%s/%d", c.Band.Action, c.Band.Rate)}
			return m
		case table == "Meter_Band":
			return c.Band
		}
	}
	return nil
}

// A node whose ovnkube-node turned gateway_mtu off
// (k8s.ovn.org/gateway-mtu-support: "false") gets none on its ports, as
// upstream's ParseNodeGatewayMTUSupport gates both syncNodeClusterRouterPort
// (trtos-, from the zone's local node) and createGWRouterPort (rtotr-).
func TestGatewayMTUFollowsTheLocalNode(t *testing.T) {
	d := parityPlan(t, false)
	if got, _ := cell(d, "Logical_Router_Port", pRTOS, "options:gateway_mtu"); got != "1400" {
		t.Fatalf("trtos- gateway_mtu = %q with gateway MTU support, want the cluster MTU 1400", got)
	}
	net := Layer2Network{
		Name: "tenant_blue", Subnets: []netip.Prefix{pfx("10.100.0.0/16")}, JoinSubnets: []netip.Prefix{pfx("100.65.0.0/16")},
		SwitchTunnelKey: 16711685, TransitRouterTunnelKey: 16715780, MTU: 1300, GatewayMTU: 1400,
	}
	nodes := []Layer2Node{
		{Name: "node1", ID: 2, Chassis: chassisOf("node1"), Local: true, TopologyVersion: "2.0", NoGatewayMTU: true},
		{Name: "node2", ID: 3, Chassis: chassisOf("node2"), TopologyVersion: "2.0"},
	}
	d = mustLayer2(t, net, nodes)
	for _, port := range []string{pRTOS, "rtotr-" + pGR1} {
		if _, err := cell(d, "Logical_Router_Port", port, "options:gateway_mtu"); err == nil || !strings.Contains(err.Error(), "no key") {
			t.Errorf("%s has gateway_mtu although node1 turned it off (err = %v)", port, err)
		}
	}
}
