package dataplane

import (
	"context"
	"errors"
	"maps"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/udnkit/udnkit/dataplane/internal/nbtest"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/dataplane/topology/multivtep"
	"github.com/udnkit/udnkit/ovnk"
)

// OKEP-5535's test list on a real database: ports created on demand per used
// VTEP, same VTEP -> node-subnet route, other VTEP -> /32, local pods on two
// VTEPs, and ports and routes leaving with their last pod.
func TestMultiVTEPPortsAndRoutes(t *testing.T) {
	e := newEnv(t)
	const (
		network = "net-red"
		router  = "net.red_ovn_cluster_router"
		ts      = "net.red_transit_switch"
	)
	e.nbctl("lr-add", router)
	e.nbctl("ls-add", ts)
	transit := ovnk.DefaultTransitSubnetV4
	nodes := []multivtep.VTEPNode{
		{Name: "node-a", Chassis: chassisOf("node-a"), EncapIPs: []netip.Addr{addr("10.0.0.2"), addr("10.0.0.3"), addr("10.0.0.4")}, TunnelIDs: []int{6, 7, 8},
			Subnets: []netip.Prefix{pfx("10.1.7.0/24")}},
		{Name: "node-b", Local: true, EncapIPs: []netip.Addr{addr("10.0.1.2"), addr("10.0.1.3")}, TunnelIDs: []int{9, 10},
			Subnets: []netip.Prefix{pfx("10.1.8.0/24")}},
		{Name: "node-c", Chassis: chassisOf("node-c"), EncapIPs: []netip.Addr{addr("10.0.2.2")}, TunnelIDs: []int{11}, Subnets: []netip.Prefix{pfx("10.1.9.0/24")}},
	}
	podA := multivtep.VTEPPod{Namespace: "ns", Name: "pod-a", Node: "node-a", IPs: []netip.Prefix{pfx("10.1.7.4/24")}, EncapIP: addr("10.0.0.3")}
	podA2 := multivtep.VTEPPod{Namespace: "ns", Name: "pod-a2", Node: "node-a", IPs: []netip.Prefix{pfx("10.1.7.6/24")}, EncapIP: addr("10.0.0.3")}
	podA3 := multivtep.VTEPPod{Namespace: "ns", Name: "pod-a3", Node: "node-a", IPs: []netip.Prefix{pfx("10.1.7.5/24")}, EncapIP: addr("10.0.0.4")}
	podB := multivtep.VTEPPod{Namespace: "ns", Name: "pod-b", Node: "node-b", IPs: []netip.Prefix{pfx("10.1.8.4/24")}, EncapIP: addr("10.0.1.2")}
	podB2 := multivtep.VTEPPod{Namespace: "ns", Name: "pod-b2", Node: "node-b", IPs: []netip.Prefix{pfx("10.1.8.5/24")}, EncapIP: addr("10.0.1.3")}
	podC := multivtep.VTEPPod{Namespace: "ns", Name: "pod-c", Node: "node-c", IPs: []netip.Prefix{pfx("10.1.9.4/24")}, EncapIP: addr("10.0.2.2")}
	apply := func(pods ...multivtep.VTEPPod) int {
		t.Helper()
		d, err := multivtep.MultiVTEPPorts(network, transit, nodes, pods)
		if err != nil {
			t.Fatal(err)
		}
		return e.apply(d)
	}
	switchPorts := func() map[string]string { return e.rows("Logical_Switch_Port", "type", "addresses", "options") }
	routes := func() string { return e.nbctl("lr-route-list", router) }

	// The first remote pod, on node-a's second VTEP: one remote port, the node-subnet route.
	apply(podA, podC)
	wantRows(t, "transit switch ports", switchPorts(), map[string]string{
		"net.red_tstor-node-a_encap1": "remote,0a:58:64:58:00:07 100.88.0.7/16,requested-chassis=5e1f0c1a-node-a requested-tnl-key=7",
	})
	wantLines(t, "routes after the first pod", routes(), "IPv4 Routes", "Route Table <main>:", "10.1.7.0/24 100.88.0.7 dst-ip")

	// Another pod on the same VTEP changes nothing.
	if ops := apply(podA, podA2, podC); ops != 0 {
		t.Errorf("a second pod on the same VTEP sent %d operations, want 0", ops)
	}

	// A pod on another VTEP: a second remote port and a /32.
	apply(podA, podA2, podA3, podC)
	wantRows(t, "transit switch ports", switchPorts(), map[string]string{
		"net.red_tstor-node-a_encap1": "remote,0a:58:64:58:00:07 100.88.0.7/16,requested-chassis=5e1f0c1a-node-a requested-tnl-key=7",
		"net.red_tstor-node-a_encap2": "remote,0a:58:64:58:00:08 100.88.0.8/16,requested-chassis=5e1f0c1a-node-a requested-tnl-key=8",
	})
	wantLines(t, "routes with two VTEPs", routes(), "IPv4 Routes", "Route Table <main>:",
		"10.1.7.0/24 100.88.0.7 dst-ip", "10.1.7.5 100.88.0.8 dst-ip") // ovn-nbctl prints host routes without /32

	// Two local pods on different VTEPs: rtots- router ports and router-type switch ports.
	apply(podA, podA2, podA3, podB, podB2, podC)
	wantRows(t, "cluster router ports", e.rows("Logical_Router_Port", "mac", "networks"), map[string]string{
		"net.red_rtots-node-b":        "0a:58:64:58:00:09,100.88.0.9/16",
		"net.red_rtots-node-b_encap1": "0a:58:64:58:00:0a,100.88.0.10/16",
	})
	ports := switchPorts()
	if got := ports["net.red_tstor-node-b_encap1"]; got != "router,router,requested-tnl-key=10 router-port=net.red_rtots-node-b_encap1" {
		t.Errorf("local second-VTEP switch port = %q", got)
	}
	if got := ports["net.red_tstor-node-b"]; got != "router,router,requested-tnl-key=9 router-port=net.red_rtots-node-b" {
		t.Errorf("local first-VTEP switch port = %q", got)
	}

	// The /32's pod goes, then every pod: ports and routes follow.
	apply(podA, podA2, podB, podB2, podC)
	if _, ok := switchPorts()["net.red_tstor-node-a_encap2"]; ok {
		t.Error("the encap2 port survived its last pod")
	}
	wantLines(t, "routes after the /32 pod left", routes(), "IPv4 Routes", "Route Table <main>:", "10.1.7.0/24 100.88.0.7 dst-ip")
	apply(podC)
	if got := e.nbctl("lsp-list", ts); got != "" {
		t.Errorf("ports left without pods: %s", got)
	}
	if got := routes(); got != "" {
		t.Errorf("routes left without pods: %s", got)
	}

	bad := podA
	bad.EncapIP = addr("10.9.9.9")
	if _, err := multivtep.MultiVTEPPorts(network, transit, nodes, []multivtep.VTEPPod{bad}); err == nil ||
		!strings.Contains(err.Error(), "pods[0] (ns/pod-a).encapIP: 10.9.9.9 is not one of node node-a's encap IPs") {
		t.Errorf("unknown encap IP: err = %v", err)
	}
	short := nodes[0]
	short.TunnelIDs = []int{6}
	if _, err := multivtep.MultiVTEPPorts(network, transit, []multivtep.VTEPNode{short}, nil); err == nil ||
		!strings.Contains(err.Error(), "nodes[0] (node-a): k8s.ovn.org/node-transit-switch-port-tunnel-ids lists 1 tunnel IDs for 3 encap IPs") {
		t.Errorf("tunnel ID count mismatch: err = %v", err)
	}
}

// Layer2 remote pod ports get Port_Binding.encap pointing at the Encap row of
// their pod's encap IP in the Southbound database.
func TestSetPortEncapsInSouthbound(t *testing.T) {
	e := newEnv(t)
	e.startNorthd()
	e.nbctl("ls-add", sw)
	e.nbctl("lsp-add", sw, "ns_pod-a", "--", "lsp-set-type", "ns_pod-a", "remote")
	e.sbctl("chassis-add", "node-a", "geneve", "10.0.0.2")
	e.sbctl("--", "--id=@e", "create", "Encap", "type=geneve", `ip="10.0.0.3"`, "chassis_name=node-a",
		"options:csum=true", "--", "add", "Chassis", "node-a", "encaps", "@e")
	e.nbctl("--timeout=60", "--wait=sb", "sync")

	ports := map[string]multivtep.PortEncap{"ns_pod-a": {Chassis: "node-a", EncapIP: "10.0.0.3"}}
	e.setPortEncapsOnceBound(ports)
	want := e.sbctl("--bare", "--columns=_uuid", "find", "Encap", `ip="10.0.0.3"`)
	if got := e.sbctl("get", "Port_Binding", "ns_pod-a", "encap"); got != want {
		t.Errorf("Port_Binding encap = %s, want the 10.0.0.3 Encap %s", got, want)
	}
	if n, err := e.c.SetPortEncaps(e.ctx, "net", ports); err != nil || n != 0 {
		t.Errorf("second SetPortEncaps = %d, %v; want 0 operations", n, err)
	}
	_, err := e.c.SetPortEncaps(e.ctx, "net", map[string]multivtep.PortEncap{"ns_pod-a": {Chassis: "node-a", EncapIP: "10.0.0.9"}})
	if err == nil || !strings.Contains(err.Error(), `port ns_pod-a: no Encap row for chassis "node-a" with IP 10.0.0.9`) {
		t.Errorf("unknown encap: err = %v", err)
	}
	if got := e.sbctl("get", "Port_Binding", "ns_pod-a", "encap"); got != want {
		t.Errorf("a refused call changed the binding: %s", got)
	}
}

// The Layer3 topology and the multi-VTEP ports of one network start at
// once, again and again: the topology creates the transit switch and the
// cluster router with all their columns; the multi-VTEP piece, which only
// references them, waits while they are missing (as its controller does)
// and then adds its ports. There is one switch, with both pieces' ports,
// and the topology's columns; neither piece's next Apply changes anything.
func TestLayer3TopologyAndMultiVTEPStartTogether(t *testing.T) {
	e := newEnv(t)
	for round := range 8 {
		network := "ns_vtep" + strconv.Itoa(round)
		names := ovnk.NamesFor(network)
		net, topo, ports := vtepNetwork(t, network, 16711700+round)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		waited := false
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, errs[0] = e.c.Apply(e.ctx, topo)
		}()
		go func() {
			defer wg.Done()
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				_, errs[1] = e.c.Apply(e.ctx, ports)
				missing := (*rows.MissingRowError)(nil)
				if !errors.As(errs[1], &missing) || time.Now().After(deadline) {
					return
				}
				waited = true
			}
		}()
		wg.Wait()
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("round %d: concurrent applies: topology %v, multi-VTEP %v", round, errs[0], errs[1])
		}
		ts := names.TransitSwitch()
		if got := strings.Fields(e.nbctl("--bare", "--columns=_uuid", "find", "Logical_Switch", "name="+ts)); len(got) != 1 {
			t.Fatalf("round %d: %d switches named %s, want 1", round, len(got), ts)
		}
		lsps := e.nbctl("--bare", "--columns=name", "list", "Logical_Switch_Port")
		for _, want := range []string{names.TransitSwitchPort("node-a", 0), names.TransitSwitchPort("node-b", 1)} {
			if !strings.Contains(e.nbctl("lsp-list", ts), want) {
				t.Errorf("round %d (multi-VTEP waited: %v): the transit switch lacks %s; switch ports:\n%s", round, waited, want, lsps)
			}
		}
		if got := e.nbctl("get", "Logical_Switch", ts, "other_config:requested-tnl-key", "external_ids:"+ovnk.ExternalIDPiece); got != `"`+strconv.Itoa(net.TransitSwitchTunnelKey)+`"`+"\n"+base.PieceTopology {
			t.Errorf("round %d: the transit switch's tunnel key and piece = %q, want the topology's", round, got)
		}
		for _, d := range []*rows.Desired{topo, ports} {
			if n := e.apply(d); n != 0 {
				t.Errorf("round %d: a second Apply of %s sent %d operations, want 0", round, d.Owner.Piece, n)
			}
		}
	}
}

// vtepNetwork is a Layer3 network of tunnel key key with node-a local and
// node-b multi-VTEP (two encap IPs, a pod on the second): its topology and
// its multi-VTEP ports.
func vtepNetwork(t *testing.T, network string, key int) (net topology.Layer3Network, topo, ports *rows.Desired) {
	t.Helper()
	net = topology.Layer3Network{Name: network, Subnets: []netip.Prefix{pfx("10.1.0.0/16")}, JoinSubnets: []netip.Prefix{pfx("100.65.0.0/16")},
		ClusterIPv4: true, TransitSubnets: []netip.Prefix{ovnk.DefaultTransitSubnetV4}, TransitSwitchTunnelKey: key,
		GatewayMasqueradeIPs: []netip.Addr{addr("169.254.0.13")}, ManagementMasqueradeIPs: []netip.Addr{addr("169.254.0.14")},
		MasqueradeSubnets: []netip.Prefix{pfx("169.254.0.0/17")}}
	topo, err := topology.Layer3Topology(net, []topology.Layer3Node{
		{Name: "node-a", ID: 2, Local: true, Chassis: chassisOf("node-a"), HostSubnets: []netip.Prefix{pfx("10.1.1.0/24")}, NoGateway: true},
		{Name: "node-b", ID: 3, Chassis: chassisOf("node-b"), HostSubnets: []netip.Prefix{pfx("10.1.2.0/24")}, MultiVTEP: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	ports, err = multivtep.MultiVTEPPorts(network, ovnk.DefaultTransitSubnetV4, []multivtep.VTEPNode{{Name: "node-b", Chassis: chassisOf("node-b"),
		EncapIPs: []netip.Addr{addr("10.0.0.2"), addr("10.0.0.3")}, TunnelIDs: []int{6, 7}, Subnets: []netip.Prefix{pfx("10.1.2.0/24")}}},
		[]multivtep.VTEPPod{{Namespace: "ns", Name: "p", Node: "node-b", IPs: []netip.Prefix{pfx("10.1.2.5/24")}, EncapIP: addr("10.0.0.3")}})
	if err != nil {
		t.Fatal(err)
	}
	return net, topo, ports
}

// Multi-VTEP ports applied before the Layer3 topology create no transit
// switch (they only reference it: rows.MissingRowError, on which their
// controller waits), so there is never a transit switch without its
// interconnect other_config; once the topology has created it, the ports
// go on, and the switch has exactly base.TransitSwitchOtherConfig
// (upstream's addTransitSwitchConfig,
// pkg/ovn/zone_interconnect/zone_ic_handler.go). On a real ovsdb-server
// and on the in-memory one.
func TestMultiVTEPFirstLeavesTheTransitSwitchToTheTopology(t *testing.T) {
	const network, key = "ns_vtepfirst", 16711720
	ts := ovnk.NamesFor(network).TransitSwitch()
	_, topo, ports := vtepNetwork(t, network, key)
	want := base.TransitSwitchOtherConfig(ts, key)
	check := func(t *testing.T, apply func(*rows.Desired) error, transitSwitch func() *nbdb.LogicalSwitch) {
		missing := (*rows.MissingRowError)(nil)
		if err := apply(ports); !errors.As(err, &missing) {
			t.Fatalf("multi-VTEP ports before the topology: %v, want a rows.MissingRowError", err)
		}
		if sw := transitSwitch(); sw != nil {
			t.Fatalf("multi-VTEP ports created the transit switch %+v", sw)
		}
		for _, d := range []*rows.Desired{topo, ports} {
			if err := apply(d); err != nil {
				t.Fatalf("%s: %v", d.Owner.Piece, err)
			}
		}
		sw := transitSwitch()
		if sw == nil || !maps.Equal(sw.OtherConfig, want) {
			t.Fatalf("transit switch %+v, want other_config %v", sw, want)
		}
	}
	t.Run("ovsdb-server", func(t *testing.T) {
		e := newEnv(t)
		check(t, func(d *rows.Desired) error { _, err := e.c.Apply(e.ctx, d); return err }, func() *nbdb.LogicalSwitch {
			var out []nbdb.LogicalSwitch
			if err := e.c.eng.NB.WhereCache(func(s *nbdb.LogicalSwitch) bool { return s.Name == ts }).List(e.ctx, &out); err != nil || len(out) == 0 {
				return nil
			}
			if got := e.nbctl("lsp-list", ts); !strings.Contains(got, ovnk.NamesFor(network).TransitSwitchPort("node-b", 1)) {
				t.Errorf("ovn-nbctl lists the transit switch's ports as %q, want node-b's second VTEP's among them", got)
			}
			return &out[0]
		})
	})
	t.Run("in-memory", func(t *testing.T) {
		eng := nbtest.Engine(t, nbtest.Serve(t), nil)
		ctx := context.Background()
		check(t, func(d *rows.Desired) error { _, err := eng.Apply(ctx, d); return err }, func() *nbdb.LogicalSwitch {
			var out []nbdb.LogicalSwitch
			if err := eng.NB.WhereCache(func(s *nbdb.LogicalSwitch) bool { return s.Name == ts }).List(ctx, &out); err != nil || len(out) == 0 {
				return nil
			}
			return &out[0]
		})
	})
}
