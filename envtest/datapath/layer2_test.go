package datapath_test

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/udnkit/udnkit/envtest/datapath"
	"github.com/udnkit/udnkit/envtest/datapath/netns"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

// TestLayer2Primary sends packets through what udnkit's dataplane writes
// for two dual-stack Primary Layer2 networks (OKEP-5094's transit-router
// topology) with the same subnets, each programmed in three zones: pods on
// one node and pods in different zones reach each other over the layer2
// switch (across zones through Geneve), every node's pods find the default
// gateway at the same MAC, neither network reaches the other's pods, and a
// pod's traffic to the external host leaves through its own node's gateway
// router (the external host sees that node's IP) and the reply comes back.
// Each check then has a mutation of a row udnkit wrote that must break it,
// after which the reconciler's next pass must heal it.
func TestLayer2Primary(t *testing.T) {
	c := needCluster(t)
	a, b, cc := c.Node("node-a"), c.Node("node-b"), c.Node("node-c")
	subnets := []string{"10.100.0.0/16", "fd00:100::/64"}
	blue := newNetwork(t, "tenant-blue", "blue", 1, subnets...)
	green := newNetwork(t, "tenant-green", "green", 2, subnets...)
	// udnkit writes both networks' gateway routers' external side from the
	// nodes' l3-gateway-config; breth0 tells their traffic apart.
	program(t, c, blue, green)
	steer(t, c, blue, green)
	blueA := &pod{net: blue, name: "pod-a", node: a, index: 5, tunnelID: 10}
	blueA2 := &pod{net: blue, name: "pod-a2", node: a, index: 7, tunnelID: 11}
	blueB := &pod{net: blue, name: "pod-b", node: b, index: 6, tunnelID: 12}
	blueC := &pod{net: blue, name: "pod-c", node: cc, index: 9, tunnelID: 13}
	greenA := &pod{net: green, name: "pod-a", node: a, index: 5, tunnelID: 10}
	greenB := &pod{net: green, name: "pod-b", node: b, index: 6, tunnelID: 11}
	greenOnly := &pod{net: green, name: "pod-only", node: b, index: 8, tunnelID: 12}
	all := []*pod{blueA, blueA2, blueB, blueC, greenA, greenB, greenOnly}
	podPorts(t, c, all...)
	startPods(t, c, all...)
	ovnkManagementPorts(t, c, blue)
	// TCP echo servers: a pod and the external host.
	for _, e := range []*netns.Endpoint{&blueB.datapath.Endpoint, &c.External} {
		stop, err := e.ServeTCP(tcpPort)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
	}
	heal := func(t *testing.T) {
		t.Helper()
		program(t, c, blue, green)
		settle(t, c)
	}
	families := []bool{false, true}
	for _, v6 := range families {
		fam := map[bool]string{false: "IPv4", true: "IPv6"}[v6]
		t.Run(fam+": pods on one node reach each other", func(t *testing.T) {
			reach(t, c, blueA, blueA2.ip(v6))
			reach(t, c, greenA, greenOnly.ip(v6))
		})
		t.Run(fam+": pods in different zones reach each other over Geneve (ICMP and TCP)", func(t *testing.T) {
			reach(t, c, blueA, blueB.ip(v6))
			reach(t, c, blueB, blueC.ip(v6))
			reach(t, c, blueC, blueA.ip(v6))
			reach(t, c, greenB, greenA.ip(v6))
			if err := blueA.datapath.TCPEcho(blueB.ip(v6), tcpPort, 10*time.Second); err != nil {
				t.Fatal(err)
			}
		})
		t.Run(fam+": the default gateway answers at the same MAC on every node", func(t *testing.T) {
			gw := blue.gateway(v6)
			// The transit router's switch port: one MAC for both families,
			// derived from the IPv4 gateway (podannotation.GatewayRouterPortMAC).
			want := podannotation.GatewayRouterPortMAC([]netip.Addr{blue.gateway(false), blue.gateway(true)}).String()
			for _, p := range []*pod{blueA, blueB, blueC} {
				reach(t, c, p, gw)
				got, err := p.datapath.Neighbor(gw)
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("%s on %s resolves the gateway %s to %q, want %s", p.name, p.node.Name, gw, got, want)
				}
			}
		})
		t.Run(fam+": two networks with one subnet stay isolated", func(t *testing.T) {
			reach(t, c, blueA, blueB.ip(v6))
			// blue pod-a's peer at the shared address is blue pod-b, never
			// green pod-b: blue pod-b sees every request, green pod-b none.
			var atBlue int
			atGreen, err := greenB.datapath.EchoRequestsSeen(blueA.ip(v6), func() (err error) {
				atBlue, err = blueB.datapath.EchoRequestsSeen(blueA.ip(v6), func() error {
					_, err := blueA.datapath.Ping(blueB.ip(v6), 5, pingInterval)
					return err
				})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if atBlue != 5 || atGreen != 0 {
				t.Fatalf("blue pod-a pinged %s 5 times: blue pod-b saw %d requests (want 5), green pod-b at the same address %d (want 0)",
					blueB.ip(v6), atBlue, atGreen)
			}
			// An address only the green network has is not reached from blue.
			unreachable(t, blueA, greenOnly.ip(v6))
		})
	}

	t.Run("IPv4: egress (ICMP and TCP) leaves through the pod's own node's gateway router and the reply comes back", func(t *testing.T) {
		for _, p := range []*pod{blueA, blueB, blueC} {
			reach(t, c, p, datapath.ExternalIP)
			if err := p.datapath.TCPEcho(datapath.ExternalIP, tcpPort, 10*time.Second); err != nil {
				t.Fatal(err)
			}
			// The external host sees the pod's traffic from its own node's IP
			// (the router's SNAT), from no other node's.
			var others []int
			own, err := c.External.EchoRequestsSeen(p.node.UnderlayIP, func() error {
				return seenFromOthers(c, p.node, &others, func() error {
					n, err := p.datapath.Ping(datapath.ExternalIP, 5, pingInterval)
					if err == nil && n != 5 {
						err = fmt.Errorf("%d of 5 echo requests to %s answered", n, datapath.ExternalIP)
					}
					return err
				})
			})
			if err != nil {
				t.Fatalf("%s on %s: %v", p.name, p.node.Name, err)
			}
			if own != 5 || slices.Max(others) != 0 {
				t.Fatalf("%s on %s pinged %s 5 times: the external host saw %d from %s's IP (want 5), %v from the other nodes' (want none)",
					p.name, p.node.Name, datapath.ExternalIP, own, p.node.Name, others)
			}
		}
	})

	t.Run("IPv4: a pod reaches its node's IP through the management port, SNATed to the network's masquerade IP", func(t *testing.T) {
		masq := masqueradeIP(t, 1)
		// The node's own stack sees the pod's echo requests (the transit
		// router's priority-1004 reroute to the management port) from the
		// network's management masquerade IP: udnkit's SNAT on the transit
		// router's trtos- port, which ovn-northd applies because the port
		// has a gateway chassis (the zone's node). The GR, which also holds
		// the node IP, would answer without the node seeing them.
		seen := func(p *pod) (fromPod, fromMasq int) {
			t.Helper()
			host := p.node.Host()
			fromPod, err := host.EchoRequestsSeen(p.ip(false), func() (err error) {
				fromMasq, err = host.EchoRequestsSeen(masq, func() error {
					_, err := p.datapath.Ping(p.node.UnderlayIP, 5, pingInterval)
					return err
				})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			return fromPod, fromMasq
		}
		for _, p := range []*pod{blueA, blueB} {
			reach(t, c, p, p.node.UnderlayIP)
			if fromPod, fromMasq := seen(p); fromMasq != 5 || fromPod != 0 {
				t.Fatalf("%s pinged %s's IP 5 times: the node saw %d echo requests from %s (want 5) and %d from the pod's IP (want 0)",
					p.name, p.node.Name, fromMasq, masq, fromPod)
			}
		}
		// Mutation: without the trtos- port's gateway chassis ovn-northd
		// applies no SNAT on it: the node sees the pod's own IP.
		port := blue.names().RouterToSwitch()
		a.NB().Must(t, "lrp-del-gateway-chassis", port, a.ChassisID())
		settle(t, c)
		if fromPod, fromMasq := seen(blueA); fromMasq != 0 || fromPod != 5 {
			t.Fatalf("mutation: with node-a's gateway chassis removed from %s node-a saw %d echo requests from %s (want 0) and %d from the pod's IP (want 5)",
				port, fromMasq, masq, fromPod)
		}
		heal(t)
		if fromPod, fromMasq := seen(blueA); fromMasq != 5 || fromPod != 0 {
			t.Fatalf("after the reconciler's next pass node-a saw %d echo requests from %s (want 5) and %d from the pod's IP (want 0)", fromMasq, masq, fromPod)
		}
		// Mutation: without the reroute the node never sees the pod's traffic.
		policy := `inport == "` + port + `" && ip4.dst == ` + a.UnderlayIP.String() + ` /* ` + blue.names().Switch() + ` */`
		a.NB().Must(t, "lr-policy-del", blue.names().TransitRouter(), "1004", policy)
		settle(t, c)
		if fromPod, fromMasq := seen(blueA); fromPod+fromMasq != 0 {
			t.Fatalf("mutation: with the priority-1004 policy removed node-a still saw %d echo requests", fromPod+fromMasq)
		}
		heal(t)
		if fromPod, fromMasq := seen(blueA); fromMasq != 5 || fromPod != 0 {
			t.Fatalf("after the reconciler's next pass node-a saw %d echo requests from %s (want 5) and %d from the pod's IP (want 0)", fromMasq, masq, fromPod)
		}
	})

	// Each mutation changes one row udnkit wrote in one zone: the path
	// through it must break while a path that does not
	// use it keeps working, and the reconciler's next pass must heal it.
	for _, m := range []struct {
		name   string
		mutate func()
		broken func(v6 bool) (*pod, netip.Addr)
		kept   func(v6 bool) (*pod, netip.Addr)
		// families are the IP families the check runs in (nil: both).
		families []bool
	}{{
		name: "a zone's switch tunnel key changed breaks the cross-zone path",
		mutate: func() {
			b.NB().Must(t, "set", "Logical_Switch", blue.names().Switch(), "other_config:requested-tnl-key=16000000")
		},
		broken: func(v6 bool) (*pod, netip.Addr) { return blueA, blueB.ip(v6) },
		kept:   func(v6 bool) (*pod, netip.Addr) { return blueA, blueA2.ip(v6) },
	}, {
		name: "the transit router's source route to a node's gateway router removed stops that node's egress",
		mutate: func() {
			s, _ := ovnk.FamilyOf(blue.subnets, false)
			a.NB().Must(t, "--policy=src-ip", "lr-route-del", blue.names().TransitRouter(), s.String())
		},
		families: []bool{false},
		broken:   func(bool) (*pod, netip.Addr) { return blueA, datapath.ExternalIP },
		kept:     func(bool) (*pod, netip.Addr) { return blueB, datapath.ExternalIP },
	}, {
		name:   "the transit router's switch port removed silences the gateway on that node",
		mutate: func() { a.NB().Must(t, "lrp-del", blue.names().RouterToSwitch()) },
		broken: func(v6 bool) (*pod, netip.Addr) { return blueA, blue.gateway(v6) },
		kept:   func(v6 bool) (*pod, netip.Addr) { return blueB, blue.gateway(v6) },
	}} {
		t.Run("mutation: "+m.name, func(t *testing.T) {
			m.mutate()
			settle(t, c)
			fams := m.families
			if fams == nil {
				fams = families
			}
			for _, v6 := range fams {
				from, dst := m.broken(v6)
				unreachable(t, from, dst)
				from, dst = m.kept(v6)
				reach(t, c, from, dst)
			}
			heal(t)
			from, dst := m.broken(false)
			reach(t, c, from, dst)
		})
	}

	t.Run("mutation: a node's l3-gateway-config removed takes its external side and management port away until it returns", func(t *testing.T) {
		ext, mgmt := blue.names().ExternalSwitch(a.Name), blue.names().ManagementPort(a.Name)
		has := func(table, name string) bool {
			return slices.Contains(strings.Fields(a.NB().Must(t, "--bare", "--columns=name", "list", table)), name)
		}
		setGatewayless(a, true)
		t.Cleanup(func() { setGatewayless(a, false) })
		heal(t)
		if has("Logical_Switch", ext) || has("Logical_Switch_Port", mgmt) {
			t.Fatalf("node-a's Node has no l3-gateway-config, yet its zone still has %s or %s", ext, mgmt)
		}
		for _, v6 := range families {
			unreachable(t, blueA, externalIP(v6))
			reach(t, c, blueB, externalIP(v6))
		}
		setGatewayless(a, false)
		heal(t)
		if !has("Logical_Switch", ext) || !has("Logical_Switch_Port", mgmt) {
			t.Fatalf("node-a's l3-gateway-config is back, yet its zone lacks %s or %s", ext, mgmt)
		}
		// ovn-controller made a new patch port for the new localnet port.
		steer(t, c, blue, green)
		for _, v6 := range families {
			reach(t, c, blueA, externalIP(v6))
		}
	})
}

// externalIP is the external host's address of a family beyond the
// underlay.
func externalIP(v6 bool) netip.Addr {
	if v6 {
		return datapath.ExternalIP6
	}
	return datapath.ExternalIP
}
