package datapath_test

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/udnkit/udnkit/envtest/datapath"
	"github.com/udnkit/udnkit/envtest/datapath/netns"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/kubevirt"
)

// vmPodObject is a virt-launcher pod as the dataplane reads it: KubeVirt's
// kubevirt.io/vm label and live-migration annotation, udnkit's address
// owner node and pod-networks, scheduled and running; running marks the
// pod KubeVirt says the VM runs in (kubevirt.io/nodeName).
func vmPodObject(t testing.TB, p *pod, vm, owner string, created time.Time, running bool) *corev1.Pod {
	t.Helper()
	annotations := p.annotation(t)
	annotations[kubevirt.AnnotationAllowLiveMigration] = "true"
	annotations[kubevirt.AnnotationAddressOwnerNode] = owner
	if running {
		annotations[kubevirt.KeyNodeName] = p.node.Name
	}
	o := testobj.MakePod(p.net.namespace, p.name).Node(p.node.Name).Running().Created(created).
		Labels(map[string]string{kubevirt.LabelVM: vm, kubevirt.LabelVMName: vm}).Annotations(annotations).Obj()
	o.UID = types.UID(p.uid())
	return o
}

// vmLease renews the VM's lease from OVN's DHCP server (the ARP proxy
// address) and checks it holds upstream's values: the VM's own address,
// its network's gateway as router, lease 3500 s, MTU 1400.
func vmLease(vm *datapath.VM, ip, gw netip.Addr, timeout time.Duration) error {
	l, err := vm.DHCPRenew(ip, vm.Addresses.MAC, ovnk.KubeVirtARPProxyIPv4, timeout)
	if err != nil {
		return err
	}
	if l.Addr != ip || l.Addr4(netns.DHCPOptRouter) != gw || l.Uint(netns.DHCPOptLeaseTime) != ovnk.KubeVirtDHCPLeaseTime ||
		l.Addr4(netns.DHCPOptServerID) != ovnk.KubeVirtARPProxyIPv4 || l.Uint(netns.DHCPOptMTU) != uint32(ovnk.DefaultMTU) {
		return fmt.Errorf("the VM's DHCP lease %s router %s lease %d s server %s MTU %d; want %s, %s, %d s, %s, %d",
			l.Addr, l.Addr4(netns.DHCPOptRouter), l.Uint(netns.DHCPOptLeaseTime), l.Addr4(netns.DHCPOptServerID), l.Uint(netns.DHCPOptMTU),
			ip, gw, ovnk.KubeVirtDHCPLeaseTime, ovnk.KubeVirtARPProxyIPv4, ovnk.DefaultMTU)
	}
	return nil
}

// startOwnPods starts the pods (startPods) and removes them when the test
// ends, so the test can run again on the same cluster (-count).
func startOwnPods(t testing.TB, c *datapath.Cluster, pods ...*pod) {
	t.Helper()
	for _, p := range pods {
		startPods(t, c, p)
		t.Cleanup(func() {
			if err := c.RemovePod(p.datapath); err != nil {
				t.Error(err)
			}
		})
	}
}

// nadRequest is the reconcile request of a network's NAD.
func nadRequest(net *network) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: net.nad.Namespace, Name: net.nad.Name}}
}

// egressSeen pings the external host 5 times from e and returns how many
// of the echo requests the external host saw from node's IP and from the
// other nodes' IPs.
func egressSeen(t *testing.T, c *datapath.Cluster, e *netns.Endpoint, node *datapath.Node) (own int, others []int) {
	t.Helper()
	return egressSeenFamily(t, c, e, node, false)
}

// egressSeenFamily is egressSeen in an IP family: the external host's
// address and the nodes' addresses of that family.
func egressSeenFamily(t *testing.T, c *datapath.Cluster, e *netns.Endpoint, node *datapath.Node, v6 bool) (own int, others []int) {
	t.Helper()
	dst, addr := datapath.ExternalIP, func(n *datapath.Node) netip.Addr { return n.UnderlayIP }
	if v6 {
		dst, addr = datapath.ExternalIP6, func(n *datapath.Node) netip.Addr { return n.UnderlayIP6 }
	}
	var nodes []*datapath.Node
	for _, n := range c.Nodes {
		if n != node {
			nodes = append(nodes, n)
		}
	}
	others = make([]int, len(nodes))
	// One counter per node, nested around the pings.
	var nest func(i int) error
	nest = func(i int) (err error) {
		if i == len(nodes) {
			own, err = c.External.EchoRequestsSeen(addr(node), func() error {
				n, err := e.Ping(dst, 5, pingInterval)
				if err == nil && n != 5 {
					err = fmt.Errorf("%d of 5 echo requests to %s answered", n, dst)
				}
				return err
			})
			return err
		}
		others[i], err = c.External.EchoRequestsSeen(addr(nodes[i]), func() error { return nest(i + 1) })
		return err
	}
	if err := nest(0); err != nil {
		t.Fatalf("%s: %v", e.Label, err)
	}
	return own, others
}

// TestKubeVirtLiveMigration migrates a VM on a Primary Layer2 network from
// node-a to node-b as KubeVirt does, while a pod on node-c pings it every
// 20 ms and holds a TCP connection to it: the target virt-launcher pod comes
// up on node-b with the VM's addresses (its port written disabled in every
// zone, as OVN-Kubernetes writes a target whose domain is not ready), then
// the domain switches over (the guest's tap moves to the target pod; every
// zone enables the target's port and disables the source's; udnkit's
// live-migration reconciler routes the VM, now away from the node owning its
// addresses), then the source pod goes. The design's promises
// (kubevirt-live-migration-point-to-point.md; OKEP-5094 story 1): the VM
// keeps its IP and MAC, its gateway's MAC does not change, its traffic
// leaves through the node it runs on (node-b's gateway router, seen on
// node-b's external side), and the TCP connection survives. In a zone per
// node the VM's egress follows the zone's own source route to its one
// gateway router, so udnkit writes no per-VM reroute, which would also
// shadow the routes to other nodes' join IPs: the migrated VM reaches
// node-a's gateway router at its join IP. Pointing node-b's zone's source
// route at node-a's gateway router moves the VM's egress there.
func TestKubeVirtLiveMigration(t *testing.T) {
	c := needCluster(t)
	x, y := c.Node("node-a"), c.Node("node-b")
	kv, client := kubevirtNetwork(t, c, "tenant-kv", 5, "10.120.0.0/16")
	// The VM's pods in the API state every zone's live-migration and
	// pod-port reconcilers read; the VM serves TCP and node-c's pod reaches it.
	m := startServingVM(t, c, kv, "vm1", client)
	vm, dst, migrate := m.vm, m.dst, m.reconcile
	vmIP, vmMAC, gw := vm.Addresses.IPs[0].Addr(), vm.Addresses.MAC.String(), kv.gateway(false)
	if err := vmLease(vm, vmIP, gw, reachTimeout); err != nil {
		t.Fatalf("on node-a: %v", err)
	}
	if err := vm.Reach(gw, reachTimeout); err != nil {
		t.Fatal(err)
	}
	gwMAC, err := vm.Neighbor(gw.String())
	if err != nil || gwMAC == "" {
		t.Fatalf("the VM has no neighbour entry for its gateway %s (%v)", gw, err)
	}
	if own, others := egressSeen(t, c, &vm.Endpoint, x); own != 5 || slices.Max(others) != 0 {
		t.Fatalf("before the migration the external host saw the VM's echo requests %d times from node-a (want 5), %v from the others (want none)", own, others)
	}

	// Continuous traffic from node-c's pod through the whole migration:
	// the target pod comes up on node-b with the VM's addresses (its port
	// disabled until the domain is ready), the domain switches over to
	// node-b and every zone at once switches the ports over, the source pod
	// goes (liveMigration.underTraffic).
	traffic := m.underTraffic(t, client, true)
	flow, result, switchStart, switched := traffic.tcp, traffic.icmp, traffic.switchStart, traffic.switched
	t.Logf("live migration node-a -> node-b (switch-over written in %d ms): ICMP from node-c: %s (gap from %+d ms of the switch-over); TCP: %d exchanges on %s, longest stall %d ms",
		switched.Milliseconds(), result, result.GapStart.Sub(switchStart).Milliseconds(), flow.Exchanges, flow.Local, flow.LongestStall.Milliseconds())

	t.Run("the TCP connection survives the migration", func(t *testing.T) {
		if flow.Err != nil {
			t.Fatalf("the connection from node-c's pod to the VM broke: %v (after %d exchanges)", flow.Err, flow.Exchanges)
		}
		if err := client.datapath.TCPEcho(vmIP, tcpPort, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ICMP from a third node keeps flowing", func(t *testing.T) {
		// The design's disruption for a pre-copy migration is about a
		// second; a loaded machine gets three.
		if result.Answered == 0 || result.LongestGap > 3*time.Second {
			t.Fatalf("%s: the VM was unreachable for more than 3 s", result)
		}
		// The last second ran on node-b alone: every request answered but
		// those still in flight.
		if err := client.datapath.Reach(vmIP, reachTimeout); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("the VM renews its address by DHCP from OVN on node-b", func(t *testing.T) {
		if err := vmLease(vm, vmIP, gw, reachTimeout); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("mutation: without the target port's DHCP options OVN does not answer", func(t *testing.T) {
		for _, zone := range c.Nodes {
			zone.NB().Must(t, "clear", "Logical_Switch_Port", dst.port(), "dhcpv4_options")
		}
		settle(t, c)
		if err := vmLease(vm, vmIP, gw, 3*time.Second); err == nil {
			t.Fatal("the VM renewed its lease with its port's dhcpv4_options cleared")
		}
		migrate(t)
		settle(t, c)
		if err := vmLease(vm, vmIP, gw, reachTimeout); err != nil {
			t.Fatalf("after udnkit's reconcile: %v", err)
		}
	})
	t.Run("the VM keeps its IP and MAC", func(t *testing.T) {
		// node-c's pod resolves the VM's IP afresh: the VM answers from
		// node-b with its MAC.
		if err := client.datapath.FlushNeighbors(); err != nil {
			t.Fatal(err)
		}
		reach(t, c, client, vmIP)
		got, err := client.datapath.Neighbor(vmIP)
		if err != nil {
			t.Fatal(err)
		}
		if got != vmMAC {
			t.Fatalf("node-c's pod resolves the VM's IP %s to %q after the migration, want %s", vmIP, got, vmMAC)
		}
	})
	t.Run("the VM's gateway answers at the same MAC on node-b", func(t *testing.T) {
		if err := vm.FlushNeighbors(); err != nil {
			t.Fatal(err)
		}
		if err := vm.Reach(gw, reachTimeout); err != nil {
			t.Fatal(err)
		}
		got, err := vm.Neighbor(gw.String())
		if err != nil {
			t.Fatal(err)
		}
		if got != gwMAC {
			t.Fatalf("on node-b the VM resolves its gateway %s to %q, on node-a it was %s", gw, got, gwMAC)
		}
	})

	// The VM's egress: the source route of node-b's zone to its gateway
	// router, and no per-VM reroute.
	route := kv.subnets[0].String() + " "
	grIP := func(n *datapath.Node) string {
		t.Helper()
		peer, err := ovnk.TransitPeerSubnet(ovnk.DefaultTransitSubnetV4, slices.Index(c.Nodes, n)+2)
		if err != nil {
			t.Fatal(err)
		}
		_, gr := ovnk.TransitPeerIPs(peer)
		return gr.Addr().String()
	}
	egressThroughY := func(t *testing.T) {
		t.Helper()
		if err := vm.Reach(datapath.ExternalIP, reachTimeout); err != nil {
			t.Fatal(err)
		}
		if own, others := egressSeen(t, c, &vm.Endpoint, y); own != 5 || slices.Max(others) != 0 {
			t.Fatalf("after the migration the external host saw the VM's echo requests %d times from node-b (want 5), %v from node-a and node-c (want none)", own, others)
		}
	}
	t.Run("egress leaves through node-b's gateway router", func(t *testing.T) {
		for _, zone := range c.Nodes {
			routes := zone.NB().Must(t, "lr-route-list", kv.names().TransitRouter())
			policies := zone.NB().Must(t, "lr-policy-list", kv.names().TransitRouter())
			if !strings.Contains(routes, vmIP.String()+" ") || strings.Contains(policies, "ip4.src == "+vmIP.String()) {
				t.Fatalf("%s's transit router lacks the VM's point-to-point route or has a per-VM reroute:\n%s\n%s", zone.Name, routes, policies)
			}
		}
		egressThroughY(t)
	})
	// Traffic that enters through another node's gateway router (a
	// NodePort, an EgressIP) reaches the VM from that router's join IP; the
	// VM's replies must go back there, as a pod's do.
	t.Run("the migrated VM reaches node-a's gateway router at its join IP, as a pod on node-c does", func(t *testing.T) {
		join := ovnk.MustAddrAt(joinSubnetV4, uint64(slices.Index(c.Nodes, x)+2))
		reach(t, c, client, join)
		if err := vm.Reach(join, reachTimeout); err != nil {
			t.Fatalf("%v; node-b's transit router:\n%s\n%s", err, y.NB().Must(t, "lr-policy-list", kv.names().TransitRouter()),
				y.NB().Must(t, "lr-route-list", kv.names().TransitRouter()))
		}
	})
	t.Run("mutation: node-b's zone's source route pointed at node-a's gateway router moves the VM's egress there", func(t *testing.T) {
		uuid := y.NB().Must(t, "--bare", "--columns=_uuid", "find", "Logical_Router_Static_Route", `ip_prefix="`+strings.TrimSpace(route)+`"`, "policy=src-ip")
		if uuid == "" {
			t.Fatal("node-b's zone has no source route of the network")
		}
		y.NB().Must(t, "set", "Logical_Router_Static_Route", uuid, `nexthop="`+grIP(x)+`"`)
		settle(t, c)
		own, others := egressSeen(t, c, &vm.Endpoint, y)
		t.Logf("mutated: the external host saw the VM's echo requests %d times from node-b, %v from node-a and node-c", own, others)
		if own != 0 {
			t.Fatalf("with node-b's source route pointed at node-a the external host still saw %d echo requests from node-b", own)
		}
		program(t, c, kv)
		settle(t, c)
		egressThroughY(t)
	})
}
