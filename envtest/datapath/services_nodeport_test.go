package datapath_test

import (
	"context"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/udnkit/udnkit/envtest/datapath"
	"github.com/udnkit/udnkit/envtest/datapath/netns"
)

// nodePort is the NodePort Service's node port (TCP and UDP).
const nodePort = 30176

// warmNodePort connects from the external host to node n's node port
// until each of want has answered once or reachTimeout passes: the first
// connections of a new path through a gateway router go unanswered (seen:
// up to three of a node port's first 16 with a 1 s timeout, none after;
// presumably while the router resolves the external host's and each
// backend's MAC). The checks that follow find what it did not reach.
func warmNodePort(ext *netns.Endpoint, n *datapath.Node, want ...*pod) {
	seen := map[string]bool{}
	for deadline := time.Now().Add(reachTimeout); time.Now().Before(deadline); {
		name, err := ext.AskName("tcp", n.UnderlayIP, nodePort, time.Second)
		seen[name] = err == nil
		if !slices.ContainsFunc(want, func(p *pod) bool { return !seen[p.datapath.Label] }) {
			return
		}
	}
}

// TestServiceNodePort connects over TCP from the external host to a
// NodePort Service of a Primary Layer2 UDN whose backends are on node-b
// and node-c, at a node's IP and the node port: breth0 sends the
// connection into the network's gateway router on that node (the flows
// ovnkube-node's shared gateway keeps, SteerNodePorts), whose node-local
// load balancer, as udnkit's services controller writes it, picks the
// backend. With externalTrafficPolicy Cluster both backends answer at
// node-a, which has none of its own (the router SNATs to its join IP, so
// the reply comes back through it). With externalTrafficPolicy Local
// node-a does not answer (its load balancer has no backend and rejects),
// and at node-b only node-b's backend answers (its load balancer without
// SNAT holds the local backend only).
func TestServiceNodePort(t *testing.T) {
	c := needCluster(t)
	a, b, cc := c.Node("node-a"), c.Node("node-b"), c.Node("node-c")
	np := newNetwork(t, "tenant-svc-np", "np", 16, "10.176.0.0/16")
	program(t, c, np)
	steer(t, c, np)
	ctx := context.Background()
	if err := c.SteerNodePorts(ctx, np.ovnk(), "tcp:"+strconv.Itoa(nodePort)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.SteerNodePorts(ctx, np.ovnk()); err != nil {
			t.Error(err)
		}
	})
	webB := &pod{net: np, name: "web-b", node: b, index: 6, tunnelID: 10}
	webC := &pod{net: np, name: "web-c", node: cc, index: 9, tunnelID: 11}
	podPorts(t, c, webB, webC)
	startOwnPods(t, c, webB, webC)
	serveNames(t, webB, webC)
	web := &service{net: np, name: "web", v4: netip.MustParseAddr("10.96.176.10"), backends: []*pod{webB, webC},
		nodePort: nodePort, etp: corev1.ServiceExternalTrafficPolicyCluster}
	// Afterwards the network has no Services: their load balancers go.
	t.Cleanup(func() { programServices(t, c, nil, np) })
	ext := &c.External
	// lb is the name of the Service's TCP load balancer of a scope on a node.
	lb := func(scope string, n *datapath.Node) string {
		name := web.net.names().ServiceLoadBalancer(web.net.namespace, web.name, string(corev1.ProtocolTCP), scope+n.Name)
		if lbs := n.NB().Must(t, "--bare", "--columns=name", "list", "Load_Balancer"); !slices.Contains(strings.Fields(lbs), name) {
			t.Fatalf("%s's zone has no load balancer %s; it has:\n%s", n.Name, name, lbs)
		}
		return name
	}
	// vip is the load balancers' vips column holding n's node port with
	// the backends to.
	vip := func(n *datapath.Node, to ...*pod) string {
		var targets []string
		for _, p := range to {
			targets = append(targets, netip.AddrPortFrom(p.ip(false), svcTargetPort).String())
		}
		return `vips:"` + netip.AddrPortFrom(n.UnderlayIP, nodePort).String() + `"="` + strings.Join(targets, ",") + `"`
	}

	t.Run("externalTrafficPolicy Cluster: both backends on other nodes answer at node-a's node port", func(t *testing.T) {
		programServices(t, c, serviceObjects(true, web), np)
		warmNodePort(ext, a, webB, webC)
		warmNodePort(ext, b, webB, webC)
		// Each connection picks a backend by hash: 16 leave one unpicked
		// with probability 2^-15.
		answeredBy(t, askNamesAt(t, ext, "tcp", a.UnderlayIP, nodePort, 32), webB, webC)

		// Mutation: node-a's node-local load balancer removed from its
		// zone, node-a's gateway router no longer DNATs the node port
		// (node-b's still does); the next pass writes it back.
		a.NB().Must(t, "lb-del", lb("node_router+switch_", a))
		settle(t, c)
		if seen := tryNamesAt(ext, "tcp", a.UnderlayIP, nodePort, 3); seen[""] != 3 {
			t.Fatalf("mutation: with node-a's node-local load balancer removed the external host got answers %v at node-a's node port", seen)
		}
		answeredBy(t, askNamesAt(t, ext, "tcp", b.UnderlayIP, nodePort, 32), webB, webC)
		programServices(t, c, serviceObjects(true, web), np)
		answeredBy(t, askNamesAt(t, ext, "tcp", a.UnderlayIP, nodePort, 32), webB, webC)
	})

	t.Run("externalTrafficPolicy Local: node-a without a backend does not answer, node-b answers from its own backend only", func(t *testing.T) {
		web.etp = corev1.ServiceExternalTrafficPolicyLocal
		defer func() { web.etp = corev1.ServiceExternalTrafficPolicyCluster }()
		programServices(t, c, serviceObjects(true, web), np)
		warmNodePort(ext, b, webB)
		answeredBy(t, askNamesAt(t, ext, "tcp", b.UnderlayIP, nodePort, 32), webB)
		if seen := tryNamesAt(ext, "tcp", a.UnderlayIP, nodePort, 3); seen[""] != 3 {
			t.Fatalf("node-a has no backend of the externalTrafficPolicy Local Service, yet the external host got answers %v at its node port", seen)
		}

		// Mutation: node-a's node-local load balancer given both backends
		// (as with externalTrafficPolicy Cluster): node-a answers.
		a.NB().Must(t, "set", "Load_Balancer", lb("node_router_", a), vip(a, webB, webC))
		settle(t, c)
		answeredBy(t, askNamesAt(t, ext, "tcp", a.UnderlayIP, nodePort, 32), webB, webC)

		// Mutation: node-b's skip_snat load balancer given node-c's backend
		// too (with SNAT, so its replies come back): node-c's backend
		// answers at node-b's node port.
		local := lb("node_local_router_", b)
		b.NB().Must(t, "set", "Load_Balancer", local, `options:skip_snat="false"`, vip(b, webB, webC))
		settle(t, c)
		if seen := tryNamesAt(ext, "tcp", b.UnderlayIP, nodePort, 16); seen[webC.datapath.Label] == 0 {
			t.Fatalf("mutation: with node-c's backend on node-b's node-local load balancer the external host got answers %v at node-b's node port, none from node-c's backend", seen)
		}

		// The next pass writes both back.
		programServices(t, c, serviceObjects(true, web), np)
		answeredBy(t, askNamesAt(t, ext, "tcp", b.UnderlayIP, nodePort, 32), webB)
		if seen := tryNamesAt(ext, "tcp", a.UnderlayIP, nodePort, 3); seen[""] != 3 {
			t.Fatalf("after the reconciler's next pass the external host still got answers %v at node-a's node port", seen)
		}
	})
}
