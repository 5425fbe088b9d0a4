package datapath_test

import (
	"encoding/json"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	podrows "github.com/udnkit/udnkit/dataplane/topology/pods"
	"github.com/udnkit/udnkit/envtest/datapath"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/netconf"
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

// layer3Pods returns the start of a run on a Primary Layer3 network: it
// publishes the nodes' host subnets, puts the pods into the API state with
// their k8s.ovn.org/pod-networks (pod.layer3Entry) and labels, programs the
// network with udnkit's Layer3 and pod-port reconcilers in every zone,
// checks that each pod's port is udnkit's and in its own node's zone only
// (wantLocalPort), and starts the pods, each plumbed by its port's
// iface-id. The pods are removed when the test ends, if it has not removed
// them itself (removePods).
func layer3Pods(nodes []l3node) func(*testing.T, *datapath.Cluster, []*pod) {
	return func(t *testing.T, c *datapath.Cluster, all []*pod) {
		t.Helper()
		net := all[0].net
		setLayer3Hosts(net, nodes)
		for _, p := range all {
			setPods(p.object(t))
		}
		t.Cleanup(func() { removePods(t, c, all...) })
		programLayer3(t, c, net)
		for _, p := range all {
			wantLocalPort(t, c, p)
		}
		startPods(t, c, all...)
	}
}

// wantLocalPort fails unless the pod's port is in its node's zone, written
// by udnkit's pod-port reconciler (its piece "pods"), and in no other zone:
// on a Layer3 network upstream writes a port for local pods only, a remote
// pod being reached through its node's switch across the transit switch
// (go-controller/pkg/ovn/base_network_controller_user_defined.go
// addLogicalPortToNetworkForNAD: requiresLogicalPort is isLocalPod or a
// Layer2 interconnect).
func wantLocalPort(t testing.TB, c *datapath.Cluster, p *pod) {
	t.Helper()
	if got := zonesWithPort(t, c, p); !slices.Equal(got, []string{p.node.Name}) {
		t.Fatalf("pod %s/%s on %s: its port %s is in the zones of %v, want %s's only", p.net.namespace, p.name, p.node.Name, p.port(), got, p.node.Name)
	}
	ids := p.node.NB().Must(t, "--bare", "--columns=external_ids", "find", "Logical_Switch_Port", "name="+strconv.Quote(p.port()))
	if want := ovnk.ExternalIDPiece + "=" + podrows.Piece; !slices.Contains(strings.Fields(ids), want) {
		t.Fatalf("pod %s/%s: its port %s has external_ids %q, not udnkit's %s", p.net.namespace, p.name, p.port(), ids, want)
	}
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
// apart; the reconciler's next pass heals both. The pods' ports are
// udnkit's, each in its own node's zone only; once the pods are gone from
// the API state, udnkit's pod-port reconciler deletes them.
func TestLayer3AppendedSubnet(t *testing.T) {
	c := needCluster(t)
	red := newLayer3Network(t, "tenant-red", "red", 3, "10.200.0.0/16", "10.201.0.0/16")
	nodes := []l3node{
		{c.Node("node-a"), 2, netip.MustParsePrefix("10.200.2.0/24")},
		{c.Node("node-b"), 3, netip.MustParsePrefix("10.201.3.0/24")},
		{c.Node("node-c"), 4, netip.MustParsePrefix("10.201.4.0/24")},
	}
	podA := &pod{net: red, name: "pod-a", node: nodes[0].Node, index: 5}
	podB := &pod{net: red, name: "pod-b", node: nodes[1].Node, index: 5}
	layer3Pods(nodes)(t, c, []*pod{podA, podB})
	// The EgressIP controller's reroute of pod-a (types.EgressIPReroutePriority)
	// to the transit IP of a node ID no zone has; the EgressIP's deletion
	// takes it away.
	a := nodes[0].Node
	egressIP := `ip4.src == ` + podA.ip(false).String()
	a.NB().Must(t, "lr-policy-add", red.names().ClusterRouter(), "100", egressIP, "reroute", ovnk.MustAddrAt(datapath.Layer3TransitSubnet, 9).String())
	t.Cleanup(func() { a.NB().Must(t, "--if-exists", "lr-policy-del", red.names().ClusterRouter(), "100", egressIP) })
	settle(t, c)

	t.Run("IPv4: pods in the original and the appended subnet reach each other across zones", func(t *testing.T) {
		for _, p := range [][2]*datapath.Pod{{podA.datapath, podB.datapath}, {podB.datapath, podA.datapath}} {
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
			err = podB.datapath.Reach(datapath.ExternalIP, reachTimeout)
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
		if n, err := podB.datapath.Ping(netip.MustParseAddr("10.100.0.6"), 10, pingInterval); err != nil || n != 0 {
			t.Fatalf("pod-b of tenant-red reached 10.100.0.6 (another network's address): %d replies (%v)", n, err)
		}
	})
	t.Run("mutation: the priority-102 policies removed leave pod-a's traffic to its EgressIP reroute", func(t *testing.T) {
		if !strings.Contains(a.NB().Must(t, "lr-policy-list", red.names().ClusterRouter()), "102 ") {
			t.Fatal("udnkit wrote no priority-102 policy on node-a's cluster router")
		}
		breakAndHeal(t, c, red, podA.datapath, podB.datapath, "without the priority-102 policies", "lr-policy-del", red.names().ClusterRouter(), "102")
	})
	t.Run("mutation: node-b's remote port deleted from node-a's transit switch cuts the zones apart", func(t *testing.T) {
		breakAndHeal(t, c, red, podA.datapath, podB.datapath, "without node-b's transit port", "lsp-del", red.names().TransitSwitchToRouter("node-b"))
	})
	t.Run("removing the pods from the API state deletes their ports in every zone", func(t *testing.T) {
		removePods(t, c, podA, podB)
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
