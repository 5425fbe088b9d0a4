package datapath_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/dataplane/controllers/layer2"
	"github.com/udnkit/udnkit/envtest/datapath"
	"github.com/udnkit/udnkit/envtest/datapath/netns"
	"github.com/udnkit/udnkit/internal/testobj/ovnkrows"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

// annotationGRLRPTunnelIDs is where OVN-Kubernetes' cluster manager
// publishes, per Layer2 network, the tunnel key of a node's gateway router
// port on the old topology's switch
// (go-controller/pkg/util/node_annotations.go, UDNLayer2NodeGRLRPTunnelIDAnnotation).
const annotationGRLRPTunnelIDs = "k8s.ovn.org/udn-layer2-node-gateway-router-lrp-tunnel-ids"

// joinSubnetV4 is the Layer2 networks' default IPv4 join subnet.
var joinSubnetV4 = netip.MustParsePrefix("100.65.0.0/16")

// legacyNode is a node on the old Layer2 topology: its node ID (its join IP
// is the join subnet's address at the ID) and the tunnel key cluster
// manager allocated to its gateway router's switch port.
type legacyNode struct {
	node     *datapath.Node
	id, grID int
}

func (n legacyNode) joinIP() netip.Addr { return ovnk.MustAddrAt(joinSubnetV4, uint64(n.id)) }

// ovnkLegacyLayer2 writes, in each node's zone, OVN-Kubernetes' Layer2
// topology before the transit router (go-controller/pkg/ovn/gateway.go
// createGWRouterPeerSwitchPort and getGWRouterPortName without a transit
// router; layer2_user_defined_network_controller.go
// addSwitchPortForRemoteNodeGR): the layer2 switch, the local gateway
// router's port rtos-<switch> on it holding the join IP and the network's
// gateway (MAC from the join IP), its switch port stor-<switch> with the
// node's GR LRP tunnel key, and per other node a remote port
// stor-<switch>_<node> with that node's join IP, MAC and tunnel key, and
// the local node's management port k8s-<prefix><node>
// (base_network_controller.go syncNodeManagementPort: no external_ids).
func ovnkLegacyLayer2(t testing.TB, net *network, switchKey int, nodes []legacyNode) {
	t.Helper()
	sw := net.names().Switch()
	ids := []string{`external_ids:"k8s.ovn.org/network"="` + net.ovnName() + `"`, `external_ids:"k8s.ovn.org/topology"=layer2`}
	gw := net.gateway(false)
	s, _ := ovnk.FamilyOf(net.subnets, false)
	for _, local := range nodes {
		z := local.node
		gr, rtos, stor := net.names().GatewayRouter(z.Name), "rtos-"+sw, "stor-"+sw
		join := netip.PrefixFrom(local.joinIP(), joinSubnetV4.Bits())
		z.NB().Must(t, append([]string{"--may-exist", "ls-add", sw, "--", "set", "Logical_Switch", sw,
			"other_config:requested-tnl-key=" + strconv.Itoa(switchKey)}, ids...)...)
		z.NB().Must(t, "lrp-add", gr, rtos, ovnk.MACFromIP(local.joinIP()).String(), join.String(), netip.PrefixFrom(gw, s.Bits()).String())
		z.NB().Must(t, append([]string{"set", "Logical_Router_Port", rtos}, ids...)...)
		if _, err := ovnkrows.WriteManagementPort(z.NB(), net.ovnName(), z.Name, net.managementIP(false).Addr()); err != nil {
			t.Fatal(err)
		}
		z.NB().Must(t, append([]string{"lsp-add", sw, stor, "--", "lsp-set-type", stor, "router", "--", "lsp-set-addresses", stor, "router",
			"--", "lsp-set-options", stor, "router-port=" + rtos, "requested-tnl-key=" + strconv.Itoa(local.grID),
			"--", "set", "Logical_Switch_Port", stor}, ids...)...)
		for _, m := range nodes {
			if m == local {
				continue
			}
			port := stor + "_" + m.node.Name
			addr := ovnk.MACFromIP(m.joinIP()).String() + " " + netip.PrefixFrom(m.joinIP(), joinSubnetV4.Bits()).String()
			z.NB().Must(t, append([]string{"lsp-add", sw, port, "--", "lsp-set-type", port, "remote",
				"--", "set", "Logical_Switch_Port", port, `addresses="` + addr + `"`,
				"options:requested-tnl-key=" + strconv.Itoa(m.grID), "options:requested-chassis=" + m.node.ChassisID(),
				`external_ids:"k8s.ovn.org/node"=` + m.node.Name}, ids...)...)
		}
	}
}

// rollingUpgrade is a Primary Layer2 network on OVN-Kubernetes' old
// topology in every zone, node-a and node-b running a pod each, that
// udnkit's Layer2 reconciler in node-a's and node-b's zones (adopting the
// old rows) leaves on the old topology until node-a is drained
// (TestLayer2RollingUpgrade).
type rollingUpgrade struct {
	c    *datapath.Cluster
	up   *network
	x, y *datapath.Node
	// legacyX and legacyY are node-a's and node-b's old-topology IDs.
	legacyX, legacyY legacyNode
	// podX is node-a's pod (drained by move), podY node-b's.
	podX, podY *pod
	drained    bool
	// podX2 is the pod that comes back to node-a after the move.
	podX2 *pod
	// state is the API state of the zones' reconcilers.
	state client.Client
}

// setUpRollingUpgrade writes the network (namespace, network ID id, one
// IPv4 subnet) on the old topology as OVN-Kubernetes does, starts its pods
// on node-a and node-b (node-b's serving TCP on tcpPort), and runs
// udnkit's Layer2 reconciler in node-a's and node-b's zones, which leaves
// them on the old topology while they run pods.
func setUpRollingUpgrade(t testing.TB, c *datapath.Cluster, namespace string, id int, subnet string) *rollingUpgrade {
	t.Helper()
	ctx := context.Background()
	x, y, z := c.Node("node-a"), c.Node("node-b"), c.Node("node-c")
	up := newNetwork(t, namespace, "up", id, subnet)
	switchKey := 16715776 + 2*id
	// Node IDs as nodeObject gives them; GR LRP tunnel keys as cluster
	// manager allocates them, from the network's tunnel IDs, not the node IDs.
	legacyX, legacyY := legacyNode{x, slices.Index(c.Nodes, x) + 2, 7}, legacyNode{y, slices.Index(c.Nodes, y) + 2, 8}
	legacy := []legacyNode{legacyX, legacyY, {z, slices.Index(c.Nodes, z) + 2, 9}}
	// OVN-Kubernetes writes the old topology's external side; udnkit
	// adopts node-a's once node-a moves, and writes it from node-a's
	// l3-gateway-config.
	joinIPs := map[*datapath.Node]netip.Addr{}
	for _, n := range legacy {
		joinIPs[n.node] = n.joinIP()
	}
	// The zones' dataplanes are connected before OVN-Kubernetes writes the
	// old topology: its rows (the management port with no external_ids
	// among them) reach them as monitor updates, which they adopt as they
	// would rows of their initial dump.
	for _, n := range c.Nodes {
		ovnClient(t, n)
	}
	ovnkLegacyGateway(t, c, up, func(n *datapath.Node) netip.Addr { return joinIPs[n] })
	ovnkLegacyLayer2(t, up, switchKey, legacy)
	steer(t, c, up)
	u := &rollingUpgrade{c: c, up: up, x: x, y: y, legacyX: legacyX, legacyY: legacyY,
		podX: &pod{net: up, name: "pod-a", node: x, index: 5, tunnelID: 10}, podY: &pod{net: up, name: "pod-b", node: y, index: 6, tunnelID: 11}}
	ovnkPodPorts(t, c, u.podX, u.podY)
	startPods(t, c, u.podX) // drained by move
	t.Cleanup(func() {
		if !u.drained {
			_ = c.RemovePod(u.podX.datapath)
		}
	})
	startOwnPods(t, c, u.podY)
	stopServer, err := u.podY.datapath.ServeTCP(tcpPort)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopServer)
	settle(t, c)

	// The API state: every node on the old topology with its GR LRP tunnel
	// key; node-a and node-b run a pod each (node-c's zone is left to
	// OVN-Kubernetes' old topology throughout).
	u.state = apiState(t, c, up)
	for _, n := range legacy {
		var node corev1.Node
		if err := u.state.Get(ctx, client.ObjectKey{Name: n.node.Name}, &node); err != nil {
			t.Fatal(err)
		}
		delete(node.Annotations, ovnk.AnnotationLayer2TopologyVersion)
		if node.Annotations[ovnk.AnnotationL3GatewayConfig] == "" {
			t.Fatalf("node %s has no %s: the move would not take its gateway over", node.Name, ovnk.AnnotationL3GatewayConfig)
		}
		v, _ := json.Marshal(map[string]string{up.ovnName(): strconv.Itoa(n.grID)})
		node.Annotations[annotationGRLRPTunnelIDs] = string(v)
		if err := u.state.Update(ctx, &node); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []*pod{u.podX, u.podY} {
		if err := u.state.Create(ctx, p.object(t)); err != nil {
			t.Fatal(err)
		}
	}
	// Before: both zones run pods, udnkit leaves them on the old topology.
	u.reconcileZone(t, x)
	u.reconcileZone(t, y)
	settle(t, c)
	if v := u.version(t, x); v != "" {
		t.Fatalf("node-a runs a pod but was announced on topology version %q", v)
	}
	return u
}

// reconcileZone runs udnkit's Layer2 reconciler in a node's zone (adopting
// the old rows).
func (u *rollingUpgrade) reconcileZone(t testing.TB, zone *datapath.Node) {
	t.Helper()
	r := &layer2.Reconciler{Client: u.state, OVN: ovnClient(t, zone), Cluster: cfg, AdoptLegacy: true,
		Local: func(n *corev1.Node) bool { return n.Name == zone.Name }, EgressIP: true}
	reconcileAll(t, zone, r, u.up)
}

// version is the Layer2 topology version node n announces.
func (u *rollingUpgrade) version(t testing.TB, n *datapath.Node) string {
	t.Helper()
	var node corev1.Node
	if err := u.state.Get(context.Background(), client.ObjectKey{Name: n.Name}, &node); err != nil {
		t.Fatal(err)
	}
	return node.Annotations[ovnk.AnnotationLayer2TopologyVersion]
}

// move drains node-a (its pod goes, from every zone and the API state) and
// runs udnkit's Layer2 reconciler in node-a's and node-b's zones, which
// moves node-a to the transit router; then a pod (podX2) comes back to
// node-a, on the new topology. Throughout, node-b's pod pings node-a's
// gateway router at its join IP every 20 ms: move returns what it saw,
// when udnkit's reconciles began and how long they took. With drain false
// node-a keeps its pod, so the same reconciles leave it on the old
// topology: what the same probe sees without an upgrade.
func (u *rollingUpgrade) move(t testing.TB, drain bool) (result netns.ProbeResult, moveStart time.Time, moved time.Duration) {
	t.Helper()
	probe, err := u.podY.datapath.StartProbe(u.legacyX.joinIP(), migrationProbeInterval)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if drain {
		u.drain(t)
	}
	moveStart = time.Now()
	u.reconcileZone(t, u.x)
	u.reconcileZone(t, u.y)
	moved = time.Since(moveStart)
	settle(t, u.c)
	if drain {
		// A pod comes back to node-a, on the new topology.
		u.podX2 = &pod{net: u.up, name: "pod-a2", node: u.x, index: 7, tunnelID: 12}
		ovnkPodPorts(t, u.c, u.podX2)
		startOwnPods(t, u.c, u.podX2)
		if err := u.state.Create(context.Background(), u.podX2.object(t)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second)
	if result, err = probe.Stop(300 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	return result, moveStart, moved
}

// drain takes node-a's pod away: its port in every zone, its namespace and
// every pod object on node-a in the API state.
func (u *rollingUpgrade) drain(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	// Drained: node-a's pod goes (its port in every zone, its object).
	for _, zone := range u.c.Nodes {
		zone.NB().Must(t, "lsp-del", u.podX.port())
	}
	if err := u.c.RemovePod(u.podX.datapath); err != nil {
		t.Fatal(err)
	}
	u.drained = true
	// Drained: no pod of any network runs on node-a any more (the API
	// state holds other tests' pods too).
	var all corev1.PodList
	if err := u.state.List(ctx, &all); err != nil {
		t.Fatal(err)
	}
	for i := range all.Items {
		if p := &all.Items[i]; p.Spec.NodeName == u.x.Name {
			if err := u.state.Delete(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestLayer2RollingUpgrade moves one node of a Primary Layer2 network from
// the old topology to the transit router as OKEP-5094's rolling upgrade
// does, while the other nodes stay on the old one: node-a is drained (its
// pod goes), udnkit's Layer2 reconciler in node-a's zone (adopting the old
// rows) builds the transit router with the temporary upgrade ports and
// announces node-a (k8s.ovn.org/layer2-topology-version 2.0); node-b's zone,
// whose node still runs a pod, stays on the old topology. Throughout, a pod
// on node-b pings node-a's gateway router at its join IP every 20 ms (the
// join subnet is what both topologies understand: service replies and
// EgressIP use it); afterwards a new pod on node-a reaches node-b's pod
// (ICMP and TCP) and node-b's gateway router's join IP through the upgrade
// port, and leaves the cluster through node-a's gateway router. Removing the
// upgrade router port cuts both join-IP paths.
func TestLayer2RollingUpgrade(t *testing.T) {
	c := needCluster(t)
	u := setUpRollingUpgrade(t, c, "tenant-up", 6, "10.130.0.0/16")
	x, y, up, legacyX, legacyY, podY := u.x, u.y, u.up, u.legacyX, u.legacyY, u.podY
	reconcileZone := u.reconcileZone
	version := func(n *datapath.Node) string { return u.version(t, n) }
	reach(t, c, podY, u.podX.ip(false))
	reach(t, c, podY, legacyX.joinIP())
	reach(t, c, u.podX, up.gateway(false))
	if got, err := u.podX.datapath.Neighbor(up.gateway(false)); err != nil || got != ovnk.MACFromIP(legacyX.joinIP()).String() {
		t.Fatalf("on the old topology pod-a resolves its gateway to %q (%v), want node-a's gateway router %s", got, err, ovnk.MACFromIP(legacyX.joinIP()))
	}

	// OVN-Kubernetes' gateway rows in node-a's zone, which udnkit adopts.
	gatewayRows := func(zone *datapath.Node) map[string]string {
		out := map[string]string{}
		for table, name := range map[string]string{"Logical_Switch": up.names().ExternalSwitch(zone.Name),
			"Logical_Router_Port": up.names().GRToExternal(zone.Name), "Logical_Switch_Port": up.names().ManagementPort(zone.Name)} {
			out[name] = zone.NB().Must(t, "--bare", "--columns=_uuid,external_ids", "find", table, "name="+name)
		}
		return out
	}
	oldX, oldY := gatewayRows(x), gatewayRows(y)

	// Continuous traffic from node-b to node-a's gateway router while
	// node-a moves; a pod comes back to node-a after.
	result, moveStart, moved := u.move(t, true)
	podX2 := u.podX2
	t.Logf("node-a moved to the transit router (udnkit's reconciles took %d ms): pod-b -> node-a's gateway router %s: %s (gap from %+d ms of the move)",
		moved.Milliseconds(), legacyX.joinIP(), result, result.GapStart.Sub(moveStart).Milliseconds())

	// grPorts are, per zone, the switch ports that carry the join subnet
	// between the topologies, with their tunnel keys: a join-IP path holds
	// when the key a zone sends with is the key the other zone receives on.
	grPorts := func() string {
		var b strings.Builder
		for _, zone := range []*datapath.Node{x, y} {
			out := zone.NB().Must(t, "--format=csv", "--data=bare", "--no-headings", "--columns=name,type,options", "find", "Logical_Switch_Port",
				`external_ids:"k8s.ovn.org/network"="`+up.ovnName()+`"`)
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "stor-") || strings.HasPrefix(l, "stotr-") {
					b.WriteString("\n  " + zone.Name + "'s zone: " + l)
				}
			}
		}
		return b.String()
	}
	reachJoin := func(t *testing.T, from *pod, dst netip.Addr) {
		t.Helper()
		if err := from.datapath.Reach(dst, reachTimeout); err != nil {
			t.Fatalf("%v; the gateway routers' switch ports:%s", err, grPorts())
		}
	}

	t.Run("node-a is announced, node-b stays on the old topology", func(t *testing.T) {
		if v := version(x); v != ovnk.Layer2TopologyVersionTransitRouter {
			t.Errorf("drained node-a announces topology version %q, want %s", v, ovnk.Layer2TopologyVersionTransitRouter)
		}
		if v := version(y); v != "" {
			t.Errorf("node-b, which runs a pod, announces topology version %q", v)
		}
		if !strings.Contains(y.NB().Must(t, "show", up.names().Switch()), "rtos-"+up.names().Switch()) {
			t.Errorf("node-b's zone lost its old gateway router port")
		}
	})
	t.Run("node-a's gateway rows are adopted, node-b's stay OVN-Kubernetes'", func(t *testing.T) {
		for name, row := range gatewayRows(x) {
			uuid := strings.Fields(oldX[name])
			if len(uuid) == 0 || !strings.HasPrefix(row, uuid[0]) || !strings.Contains(row, ovnk.ExternalIDPiece) {
				t.Errorf("node-a's zone: %s is %q, want OVN-Kubernetes' row %q adopted (marked udnkit's)", name, row, oldX[name])
			}
		}
		for name, row := range gatewayRows(y) {
			if row != oldY[name] || strings.Contains(row, ovnk.ExternalIDPiece) {
				t.Errorf("node-b's zone: %s is %q, was %q", name, row, oldY[name])
			}
		}
	})
	t.Run("traffic from node-b to node-a's gateway router kept flowing", func(t *testing.T) {
		if result.Answered == 0 || result.LongestGap > 5*time.Second {
			t.Fatalf("%s", result)
		}
		reachJoin(t, podY, legacyX.joinIP())
	})
	t.Run("pods on the two topologies reach each other (ICMP and TCP)", func(t *testing.T) {
		reach(t, c, podX2, podY.ip(false))
		reach(t, c, podY, podX2.ip(false))
		if err := podX2.datapath.TCPEcho(podY.ip(false), tcpPort, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a pod on node-a reaches node-b's gateway router through the upgrade port", func(t *testing.T) {
		reachJoin(t, podX2, legacyY.joinIP())
	})
	t.Run("node-a's pods find the transit router's gateway MAC and leave through node-a", func(t *testing.T) {
		reach(t, c, podX2, up.gateway(false))
		want := podannotation.GatewayRouterPortMAC([]netip.Addr{up.gateway(false)}).String()
		if got, err := podX2.datapath.Neighbor(up.gateway(false)); err != nil || got != want {
			t.Fatalf("pod-a2 resolves its gateway to %q (%v), want the transit router's %s", got, err, want)
		}
		for _, p := range []*pod{podX2, podY} {
			if own, others := egressSeen(t, c, &p.datapath.Endpoint, p.node); own != 5 || slices.Max(others) != 0 {
				t.Fatalf("%s: the external host saw its echo requests %d times from %s (want 5), %v from the others (want none)", p.name, own, p.node.Name, others)
			}
		}
	})
	t.Run("mutation: the upgrade router port removed cuts the join-IP paths between the topologies", func(t *testing.T) {
		x.NB().Must(t, "lrp-del", up.names().UpgradeRouterPort())
		settle(t, c)
		unreachable(t, podY, legacyX.joinIP())
		unreachable(t, podX2, legacyY.joinIP())
		reach(t, c, podX2, podY.ip(false))
		reconcileZone(t, x)
		settle(t, c)
		reachJoin(t, podY, legacyX.joinIP())
		reachJoin(t, podX2, legacyY.joinIP())
	})
}

// ovnkPodPorts adds the pods' logical switch ports in every zone as
// OVN-Kubernetes' pod controller writes them (datapath.WritePodPort): on
// the old topology, which OVN-Kubernetes programs, and in node-c's zone,
// left to it throughout, the ports are its own.
func ovnkPodPorts(t testing.TB, c *datapath.Cluster, pods ...*pod) {
	t.Helper()
	for _, p := range pods {
		pn, err := podannotation.DecodePodNetwork(p.annotation(t), p.net.key())
		if err != nil {
			t.Fatal(err)
		}
		port, err := datapath.PodPortOf(p.net.ovnk(), p.net.namespace, p.name, p.node, pn)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.WritePodPort(port); err != nil {
			t.Fatal(err)
		}
	}
}
