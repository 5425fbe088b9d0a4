package datapath_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/envtest/datapath"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/netconf"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

// l3node is a node's share of a Layer3 network: its node ID and host
// subnet.
type l3node = datapath.Layer3Node

// newLayer3Network renders a Primary Layer3 UDN's NAD (IPv4 subnets, /24
// host subnets) with network ID id.
func newLayer3Network(t *testing.T, namespace, name string, id int, subnets ...string) *network {
	t.Helper()
	spec := udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer3, Layer3: &udnv1.Layer3Config{Role: udnv1.NetworkRolePrimary}}
	n := &network{namespace: namespace, name: name, layer3: true, id: id}
	for _, s := range subnets {
		spec.Layer3.Subnets = append(spec.Layer3.Subnets, udnv1.Layer3Subnet{CIDR: udnv1.CIDR(s), HostSubnet: 24})
		n.subnets = append(n.subnets, netip.MustParsePrefix(s))
	}
	var err error
	n.nad, err = netconf.NewNAD(netconf.NADSource{Kind: udnv1.KindUserDefinedNetwork,
		Meta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID(namespace + "-" + name)}, Spec: spec},
		namespace, cfg, nil, ovnk.NetworkIDs{ID: id, HasID: true})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// layer3Hosts are the host subnets of each Layer3 network per node, as
// OVN-Kubernetes' cluster manager publishes them in k8s.ovn.org/node-subnets
// (network name → node → subnet); guarded by knownMu.
var layer3Hosts = map[string]map[string]string{}

// setLayer3Hosts publishes the nodes' host subnets of net in every later
// API state, for udnkit's Layer3 topology to read.
func setLayer3Hosts(net *network, nodes []l3node) {
	knownMu.Lock()
	defer knownMu.Unlock()
	hosts := map[string]string{}
	for _, n := range nodes {
		hosts[n.Node.Name] = n.Host.String()
	}
	layer3Hosts[net.ovnName()] = hosts
}

// addLayer3HostSubnets sets node's k8s.ovn.org/node-subnets to its host
// subnets of every Layer3 network (setLayer3Hosts).
func addLayer3HostSubnets(t testing.TB, node *corev1.Node) {
	t.Helper()
	knownMu.Lock()
	defer knownMu.Unlock()
	subnets := map[string][]string{}
	for net, hosts := range layer3Hosts {
		if h, ok := hosts[node.Name]; ok {
			subnets[net] = []string{h}
		}
	}
	if len(subnets) == 0 {
		return
	}
	b, err := json.Marshal(subnets)
	if err != nil {
		t.Fatal(err)
	}
	node.Annotations[ovnk.AnnotationNodeSubnets] = string(b)
}

// layer3Pod creates a pod at offset 5 of its node's host subnet: its port
// on the node switch as OVN-Kubernetes writes it and its namespace
// configured from the k8s.ovn.org/pod-networks entry (gateway: the host
// subnet's first address).
func layer3Pod(t *testing.T, c *datapath.Cluster, net *network, n l3node, name string) *datapath.Pod {
	t.Helper()
	ip := netip.PrefixFrom(ovnk.MustAddrAt(n.Host, 5), n.Host.Bits())
	mac := ovnk.MACFromIP(ip.Addr())
	v := layer3PodNetworks(t, net, n)
	port := datapath.PodPort{Network: net.ovnk(), Switch: ovnk.NetworkPrefix(net.ovnName()) + n.Node.Name, Namespace: net.namespace,
		Pod: name, Node: n.Node, Addresses: mac.String() + " " + ip.Addr().String(), LocalOnly: true}
	if err := c.WritePodPort(port); err != nil {
		t.Fatal(err)
	}
	p, err := c.AddPod(context.Background(), n.Node, datapath.PodSpec{Namespace: net.namespace, Name: name,
		Annotations: map[string]string{ovnk.AnnotationPodNetworks: v}, NAD: net.key(), Port: port.Name()})
	if err != nil {
		t.Fatalf("%v\n%s", err, n.Node.Logs(20))
	}
	return p
}

// layer3PodNetworks is the k8s.ovn.org/pod-networks of layer3Pod's pod
// on node n: its address at offset 5 of the host subnet, the host
// subnet's first address as gateway, a route to each of the network's
// subnets through it.
func layer3PodNetworks(t testing.TB, net *network, n l3node) string {
	t.Helper()
	ip := netip.PrefixFrom(ovnk.MustAddrAt(n.Host, 5), n.Host.Bits())
	gw := ovnk.MustAddrAt(n.Host, 1).String()
	pn := podannotation.PodNetwork{IPAddresses: []string{ip.String()}, MACAddress: ovnk.MACFromIP(ip.Addr()).String(), GatewayIPs: []string{gw},
		IPAddress: ip.String(), GatewayIP: gw, Role: podannotation.RolePrimary}
	for _, s := range net.subnets {
		pn.Routes = append(pn.Routes, podannotation.PodRoute{Dest: s.String(), NextHop: gw})
	}
	v, err := podannotation.PodNetworks{net.key(): pn}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestLayer3AppendedSubnet sends packets through a Primary Layer3 network
// whose subnets were appended (OKEP-5377), on udnkit's own Layer3 topology
// in every zone (the fixture publishes only what OVN-Kubernetes' cluster
// manager and ovnkube-node do: the Nodes' annotations): node-a's host
// subnet comes from the original subnet, node-b's from the appended one.
// Pods on them reach each other across zones even though node-a's pod has
// an EgressIP reroute (priority 100) to a node of another zone that is
// gone: udnkit's priority-102 subnet-pair policies take pod-to-pod traffic
// past it. Pod-b reaches the external host through node-b's gateway
// router's external side, which udnkit writes from node-b's
// l3-gateway-config (the host sees node-b's IP). Removing the policies in
// node-a's zone sends that traffic to the reroute's dead next hop, and
// deleting node-b's remote port on node-a's transit switch cuts the zones
// apart; the reconciler's next pass heals both.
func TestLayer3AppendedSubnet(t *testing.T) {
	c := needCluster(t)
	red := newLayer3Network(t, "tenant-red", "red", 3, "10.200.0.0/16", "10.201.0.0/16")
	nodes := []l3node{
		{c.Node("node-a"), 2, netip.MustParsePrefix("10.200.2.0/24")},
		{c.Node("node-b"), 3, netip.MustParsePrefix("10.201.3.0/24")},
		{c.Node("node-c"), 4, netip.MustParsePrefix("10.201.4.0/24")},
	}
	setLayer3Hosts(red, nodes)
	programLayer3(t, c, red)
	podA := layer3Pod(t, c, red, nodes[0], "pod-a")
	podB := layer3Pod(t, c, red, nodes[1], "pod-b")
	// The EgressIP controller's reroute of pod-a (types.EgressIPReroutePriority)
	// to the transit IP of a node ID no zone has.
	a := nodes[0].Node
	egressIP := `ip4.src == ` + podA.IP(false).String()
	a.NB().Must(t, "lr-policy-add", red.names().ClusterRouter(), "100", egressIP, "reroute", ovnk.MustAddrAt(datapath.Layer3TransitSubnet, 9).String())
	settle(t, c)

	t.Run("IPv4: pods in the original and the appended subnet reach each other across zones", func(t *testing.T) {
		for _, p := range [][2]*datapath.Pod{{podA, podB}, {podB, podA}} {
			if err := p[0].Reach(p[1].IP(false), reachTimeout); err != nil {
				t.Fatalf("%v\n%s", err, a.NB().Must(t, "lr-policy-list", red.names().ClusterRouter()))
			}
		}
	})
	t.Run("IPv4: a pod reaches the external host through its own node's gateway router", func(t *testing.T) {
		// pod-b: pod-a's EgressIP reroute sends its external traffic to
		// the gone node.
		steer(t, c, red)
		b := nodes[1].Node
		var err error
		own, cerr := c.External.EchoRequestsSeen(b.UnderlayIP, func() error {
			err = podB.Reach(datapath.ExternalIP, reachTimeout)
			return err
		})
		if err != nil || cerr != nil {
			t.Fatalf("%v %v\n%s", err, cerr, b.NB().Must(t, "lr-route-list", red.names().GatewayRouter(b.Name)))
		}
		if own == 0 {
			t.Fatalf("the external host saw no echo request from node-b's IP %s: pod-b's traffic did not leave through node-b's gateway router", b.UnderlayIP)
		}
	})
	t.Run("IPv4: another network's address is not reached", func(t *testing.T) {
		// From pod-b, which has no EgressIP reroute to hide behind; 10.100.0.6
		// is a pod of the Layer2 networks when TestLayer2Primary has run.
		if n, err := podB.Ping(netip.MustParseAddr("10.100.0.6"), 10, pingInterval); err != nil || n != 0 {
			t.Fatalf("pod-b of tenant-red reached 10.100.0.6 (another network's address): %d replies (%v)", n, err)
		}
	})
	t.Run("mutation: the priority-102 policies removed leave pod-a's traffic to its EgressIP reroute", func(t *testing.T) {
		if !strings.Contains(a.NB().Must(t, "lr-policy-list", red.names().ClusterRouter()), "102 ") {
			t.Fatal("udnkit wrote no priority-102 policy on node-a's cluster router")
		}
		breakAndHeal(t, c, red, podA, podB, "without the priority-102 policies", "lr-policy-del", red.names().ClusterRouter(), "102")
	})
	t.Run("mutation: node-b's remote port deleted from node-a's transit switch cuts the zones apart", func(t *testing.T) {
		breakAndHeal(t, c, red, podA, podB, "without node-b's transit port", "lsp-del", red.names().TransitSwitchToRouter("node-b"))
	})
}

// breakAndHeal runs the ovn-nbctl command in from's zone and checks that
// from no longer reaches to, then that udnkit's next pass heals it.
func breakAndHeal(t *testing.T, c *datapath.Cluster, net *network, from, to *datapath.Pod, broken string, command ...string) {
	t.Helper()
	zone := from.Node
	zone.NB().Must(t, command...)
	settle(t, c)
	if n, err := from.Ping(to.IP(false), 10, pingInterval); err != nil || n != 0 {
		t.Fatalf("%s %s still reached %s: %d replies (%v)", broken, from.Name, to.Name, n, err)
	}
	programLayer3(t, c, net)
	settle(t, c)
	if err := from.Reach(to.IP(false), reachTimeout); err != nil {
		t.Fatalf("%v\n%s", err, zone.NB().Must(t, "show"))
	}
}
