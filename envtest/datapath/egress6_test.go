package datapath_test

import (
	"slices"
	"testing"
	"time"

	"github.com/udnkit/udnkit/envtest/datapath"
	"github.com/udnkit/udnkit/ovnk"
)

// TestLayer2EgressIPv6 sends IPv6 traffic (ICMPv6 and TCP) from pods of a
// dual-stack Primary Layer2 network to the external host: each leaves
// through its own node's gateway router (OKEP-5094: the transit router's
// source route of the network's subnet to the local gateway router; the
// router's SNAT to the node's IPv6 address), so the external host sees it
// from that node's IPv6 address and no other's, and the reply comes back.
// Removing the transit router's IPv6 source route in node-a's zone stops
// node-a's pod's IPv6 egress while node-b's pod keeps its own.
func TestLayer2EgressIPv6(t *testing.T) {
	c := needCluster(t)
	a, b := c.Node("node-a"), c.Node("node-b")
	v6 := newNetwork(t, "tenant-six", "six", 7, "10.140.0.0/16", "fd00:140::/64")
	program(t, c, v6)
	steer(t, c, v6)
	podA := &pod{net: v6, name: "pod-a", node: a, index: 5, tunnelID: 10}
	podB := &pod{net: v6, name: "pod-b", node: b, index: 6, tunnelID: 11}
	podPorts(t, c, podA, podB)
	startOwnPods(t, c, podA, podB)
	const port = tcpPort + 6
	stop, err := c.External.ServeTCP(port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	settle(t, c)

	egress := func(t *testing.T, p *pod) {
		t.Helper()
		reach(t, c, p, datapath.ExternalIP6)
		if err := p.datapath.TCPEcho(datapath.ExternalIP6, port, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if own, others := egressSeenFamily(t, c, &p.datapath.Endpoint, p.node, true); own != 5 || slices.Max(others) != 0 {
			t.Fatalf("%s on %s pinged %s 5 times: the external host saw %d from %s (%s's IPv6 address, want 5), %v from the other nodes' (want none)",
				p.name, p.node.Name, datapath.ExternalIP6, own, p.node.UnderlayIP6, p.node.Name, others)
		}
	}

	t.Run("IPv6: egress (ICMPv6 and TCP) leaves through the pod's own node's gateway router and the reply comes back", func(t *testing.T) {
		egress(t, podA)
		egress(t, podB)
	})
	t.Run("mutation: the transit router's IPv6 source route removed stops that node's IPv6 egress", func(t *testing.T) {
		s, _ := ovnk.FamilyOf(v6.subnets, true)
		a.NB().Must(t, "--policy=src-ip", "lr-route-del", v6.names().TransitRouter(), s.String())
		settle(t, c)
		unreachable(t, podA, datapath.ExternalIP6)
		reach(t, c, podB, datapath.ExternalIP6)
		program(t, c, v6)
		settle(t, c)
		egress(t, podA)
	})
}
