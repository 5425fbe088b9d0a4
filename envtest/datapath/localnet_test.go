package datapath_test

import (
	"context"
	"net/netip"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/envtest/datapath"
	"github.com/udnkit/udnkit/envtest/datapath/netns"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/netconf"
)

// localnetPhysnet is the physical network the Localnet test's network
// names (physicalNetworkName), which the nodes map to brlocalnet.
const localnetPhysnet = "physnet-tenants"

// newLocalnet renders a Localnet ClusterUserDefinedNetwork's NAD in
// namespace, as the NAD reconciler does: on physical network physnet,
// access VLAN vlan, network ID id.
func newLocalnet(t *testing.T, name string, id int, namespace, physnet string, vlan int32, subnets ...string) *network {
	t.Helper()
	ln := &udnv1.LocalnetConfig{Role: udnv1.NetworkRoleSecondary, PhysicalNetworkName: physnet,
		VLAN: &udnv1.VLANConfig{Mode: udnv1.VLANModeAccess, Access: &udnv1.AccessVLANConfig{ID: vlan}}}
	n := &network{namespace: namespace, name: name, id: id, cudn: true, secondary: true, localnet: true}
	for _, s := range subnets {
		ln.Subnets = append(ln.Subnets, udnv1.CIDR(s))
		n.subnets = append(n.subnets, netip.MustParsePrefix(s))
	}
	var err error
	n.nad, err = netconf.NewNAD(netconf.NADSource{Kind: udnv1.KindClusterUserDefinedNetwork,
		Meta: metav1.ObjectMeta{Name: name, UID: types.UID("cudn-" + name)},
		Spec: udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLocalnet, Localnet: ln}},
		namespace, cfg, nil, ovnk.NetworkIDs{ID: id, HasID: true})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// echoesSeen pings dst from from (count requests) and returns how many
// of them each host saw.
func echoesSeen(t *testing.T, from *pod, dst netip.Addr, count int, hosts ...*netns.Endpoint) []int {
	t.Helper()
	seen := make([]int, len(hosts))
	var nest func(i int) error
	nest = func(i int) error {
		if i == len(hosts) {
			_, err := from.datapath.Ping(dst, count, pingInterval)
			return err
		}
		var err error
		seen[i], err = hosts[i].EchoRequestsSeen(from.ip(false), func() error { return nest(i + 1) })
		return err
	}
	if err := nest(0); err != nil {
		t.Fatal(err)
	}
	return seen
}

// onlySeenBy fails the test unless the echo requests from from to dst
// reach want and none of the others.
func onlySeenBy(t *testing.T, from *pod, dst netip.Addr, want *netns.Endpoint, others ...*netns.Endpoint) {
	t.Helper()
	if err := from.datapath.FlushNeighbors(); err != nil {
		t.Fatal(err)
	}
	seen := echoesSeen(t, from, dst, 8, append([]*netns.Endpoint{want}, others...)...)
	if seen[0] == 0 {
		t.Fatalf("%s saw none of %s's echo requests to %s", want.Label, from.datapath.Label, dst)
	}
	for i, o := range others {
		if seen[i+1] > 0 {
			t.Fatalf("%s saw %d of %s's echo requests to %s, which it must not", o.Label, seen[i+1], from.datapath.Label, dst)
		}
	}
}

// TestLocalnetVLAN sends packets from pods on a Localnet
// ClusterUserDefinedNetwork with access VLAN 182, through the switch and
// localnet port udnkit's pod-port reconciler writes in every zone, over
// the nodes' physical network (each node's brlocalnet, which
// ovn-bridge-mappings maps the network's physicalNetworkName to, trunked
// to a top-of-rack switch) to the external host on an access port of
// VLAN 182. A host at the same address on VLAN 183 and an untagged one
// never see the pods' packets. Pods on different nodes reach each other
// over the physical network as well. Mutations: the localnet port's
// tag_request set to 183 in node-a's zone, node-a's pod reaches the VLAN
// 183 host instead; cleared, the untagged one; the reconciler's next pass
// puts VLAN 182 back.
func TestLocalnetVLAN(t *testing.T) {
	c := needCluster(t)
	a, b := c.Node("node-a"), c.Node("node-b")
	const vlan, otherVLAN = 182, 183
	net := newLocalnet(t, "phys-tenants", 21, "tenant-ln", localnetPhysnet, vlan, "10.182.0.0/24")
	if err := c.AddPhysicalNetwork(context.Background(), localnetPhysnet); err != nil {
		t.Fatal(err)
	}
	hostIP := netip.MustParsePrefix("10.182.0.1/24")
	ext := &c.External
	wrong := newPhysicalHost(t, c, "ln-vlan183", "a host on VLAN 183", otherVLAN, hostIP)
	untagged := newPhysicalHost(t, c, "ln-untagged", "an untagged host", 0, hostIP)
	unplug, err := c.PlugHost(ext, vlan, hostIP)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(unplug)
	pa := &pod{net: net, name: "ln-a", node: a, index: 5}
	pb := &pod{net: net, name: "ln-b", node: b, index: 6}
	podPorts(t, c, pa, pb)
	startOwnPods(t, c, pa, pb)
	stop, err := ext.ServeTCP(tcpPort)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	settle(t, c)
	localnetPort := net.names().LocalnetPort()

	t.Run("a Localnet pod reaches the external host on its VLAN (ICMP and TCP), and no other VLAN sees its packets", func(t *testing.T) {
		for _, p := range []*pod{pa, pb} {
			reach(t, c, p, hostIP.Addr())
			onlySeenBy(t, p, hostIP.Addr(), ext, wrong, untagged)
			if err := p.datapath.TCPEcho(hostIP.Addr(), tcpPort, 2*time.Second); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("Localnet pods on different nodes reach each other over the physical network", func(t *testing.T) {
		reach(t, c, pa, pb.ip(false))
		reach(t, c, pb, pa.ip(false))
	})
	t.Run("mutation: the localnet port on another VLAN, or untagged, reaches that VLAN's host only", func(t *testing.T) {
		a.NB().Must(t, "set", "Logical_Switch_Port", localnetPort, "tag_request="+strconv.Itoa(otherVLAN))
		settle(t, c)
		onlySeenBy(t, pa, hostIP.Addr(), wrong, ext, untagged)
		// ovn-northd keeps a localnet port's tag when its tag_request
		// goes: both cleared, the port is as written without a VLAN.
		a.NB().Must(t, "clear", "Logical_Switch_Port", localnetPort, "tag_request", "tag")
		settle(t, c)
		onlySeenBy(t, pa, hostIP.Addr(), untagged, ext, wrong)
		podPorts(t, c, pa, pb)
		settle(t, c)
		onlySeenBy(t, pa, hostIP.Addr(), ext, wrong, untagged)
	})
}

// newPhysicalHost creates a host plugged into the physical network's
// switch on VLAN vlan (0: untagged) with addr, removed when the test ends.
func newPhysicalHost(t *testing.T, c *datapath.Cluster, name, label string, vlan int, addr netip.Prefix) *netns.Endpoint {
	t.Helper()
	e, remove, err := c.NewHost(name, label)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(remove)
	unplug, err := c.PlugHost(e, vlan, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(unplug)
	return e
}
