package attach

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
	"github.com/udnkit/udnkit/reconcilers/addresses/ipalloc"
)

func pfx(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

func nn(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }

func layer3(node string, host ...string) Attachment {
	return Attachment{Key: "ns/green", Node: node, HostSubnets: pfx(host...),
		Network: Network{Name: "ns_green", Topology: TopologyLayer3, Primary: true, Subnets: pfx("10.20.0.0/16"), JoinSubnets: pfx("100.65.0.0/16")}}
}

func mustAllocate(t *testing.T, a *Allocator, pod string, att Attachment) podannotation.PodNetwork {
	t.Helper()
	if _, err := a.Ensure(att); err != nil {
		t.Fatal(err)
	}
	pn, err := a.Allocate(nn(pod), types.UID("uid-"+pod), att)
	if err != nil {
		t.Fatalf("%s: %v", pod, err)
	}
	return pn
}

// Layer3 pods draw from their node's host subnet as upstream's logical
// switch manager hands it out (pkg/ovn/logical_switch_manager
// AddOrUpdateSwitch excludes the gateway .1 and management port .2;
// pkg/allocator/ip NewAllocatorCIDRRange the network and IPv4 broadcast
// addresses): the first pod gets .3, a pod on another node its node's .3,
// and a /30 host subnet has nothing left. A freed address is handed out
// again.
func TestLayer3FromHostSubnet(t *testing.T) {
	a := New(pfx("10.96.0.0/16"))
	if got := mustAllocate(t, a, "p1", layer3("node-a", "10.20.1.0/24")).IPAddresses; got[0] != "10.20.1.3/24" {
		t.Errorf("first pod on node-a: %v, want 10.20.1.3/24", got)
	}
	if got := mustAllocate(t, a, "p2", layer3("node-a", "10.20.1.0/24")).IPAddresses; got[0] != "10.20.1.4/24" {
		t.Errorf("second pod on node-a: %v, want 10.20.1.4/24", got)
	}
	pn := mustAllocate(t, a, "p3", layer3("node-b", "10.20.2.0/24"))
	if pn.IPAddresses[0] != "10.20.2.3/24" || pn.GatewayIP != "10.20.2.1" || pn.MACAddress != "0a:58:0a:14:02:03" {
		t.Errorf("pod on node-b: %+v", pn)
	}
	a.Forget(nn("p1"))
	if got := mustAllocate(t, a, "p4", layer3("node-a", "10.20.1.0/24")).IPAddresses; got[0] != "10.20.1.5/24" {
		t.Errorf("after a release the cursor goes on: %v, want 10.20.1.5/24", got)
	}

	small := layer3("node-c", "10.20.3.0/30")
	if _, err := a.Ensure(small); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Allocate(nn("p5"), "uid-p5", small); ipalloc.ReasonOf(err) != ipalloc.ReasonSubnetExhausted {
		t.Errorf("a /30 host subnet: %v, want SubnetExhausted", err)
	}
	if _, err := a.Ensure(layer3("node-d")); reasonOf(err) != ReasonHostSubnetMissing || !strings.Contains(err.Error(), "node node-d has no host subnet of network ns_green in annotation k8s.ovn.org/node-subnets") {
		t.Errorf("no host subnet: %v", err)
	}
}

func reasonOf(err error) string {
	if e, ok := err.(*ipalloc.Error); ok {
		return e.Reason
	}
	return ""
}

// A restarted allocator restores the written entries and never hands them
// out again; an entry copied onto another pod is refused, and so is a
// tunnel ID another pod holds.
func TestRestoreBeforeAllocate(t *testing.T) {
	a := New(nil)
	l2 := Attachment{Key: "ns/red", Node: "node-a", Network: Network{Name: "ns_red", Topology: TopologyLayer2, Subnets: pfx("10.30.0.0/24")}}
	first := mustAllocate(t, a, "p1", l2)
	if first.IPAddresses[0] != "10.30.0.1/24" || first.TunnelID != podannotation.FirstPodTunnelID || first.GatewayIPs != nil || first.Routes != nil {
		t.Errorf("secondary layer2 entry: %+v, want .1 (no gateway reserved), tunnel_id 10, no gateway or routes", first)
	}

	b := New(nil)
	if fresh, err := b.Ensure(l2); !fresh || err != nil {
		t.Fatalf("Ensure on a new allocator: %v %v", fresh, err)
	}
	if err := b.Restore(nn("p1"), "uid-p1", l2, &first); err != nil {
		t.Fatal(err)
	}
	if err := b.Restore(nn("copy"), "uid-copy", l2, &first); ipalloc.ReasonOf(err) != ipalloc.ReasonIPAddressConflict {
		t.Errorf("a copied entry: %v, want IPAddressConflict", err)
	}
	stolen := first
	stolen.IPAddresses, stolen.IPAddress, stolen.MACAddress = []string{"10.30.0.9/24"}, "10.30.0.9/24", "0a:58:0a:1e:00:09"
	if err := b.Restore(nn("thief"), "uid-thief", l2, &stolen); err == nil || !strings.Contains(err.Error(), "pod/ns/p1") {
		t.Errorf("a copied tunnel_id: %v, want a conflict naming pod/ns/p1", err)
	}
	if b.pools["ns_red"].ips.OwnerOfIP(netip.MustParseAddr("10.30.0.9")) != "" {
		t.Errorf("a refused restore kept its address")
	}
	if got := mustAllocate(t, b, "p2", l2); got.IPAddresses[0] != "10.30.0.2/24" || got.TunnelID != 11 {
		t.Errorf("after the restore: %+v, want 10.30.0.2/24 and tunnel_id 11", got)
	}
	if fresh, _ := b.Ensure(l2); fresh {
		t.Errorf("an unchanged network's pool was rebuilt")
	}
}

// Secondary networks with subnets refuse static addresses (upstream's
// validateStaticIPRequest: "only supported on primary networks"); without
// subnets they take them, with the MAC derived from the first, or a
// requested MAC, or a random locally administered unicast one.
func TestSecondaryRequests(t *testing.T) {
	a := New(nil)
	ipam := Attachment{Key: "ns/phys", Node: "node-a", Network: Network{Name: "ns_phys", Topology: ovnk.TopologyLocalnet, Subnets: pfx("192.168.10.0/24"), ExcludeSubnets: pfx("192.168.10.0/29")},
		Request: Request{IPs: []string{"192.168.10.50/24"}}}
	if _, err := a.Ensure(ipam); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Allocate(nn("p1"), "u1", ipam); ipalloc.ReasonOf(err) != ipalloc.ReasonInvalidRequest || !strings.Contains(err.Error(), "static addresses") {
		t.Errorf("static IPs on an IPAM network: %v", err)
	}
	ipam.Request = Request{}
	if got := mustAllocate(t, a, "p1", ipam); got.IPAddresses[0] != "192.168.10.8/24" || got.TunnelID != 0 {
		t.Errorf("localnet with excludeSubnets: %+v, want 192.168.10.8/24 and no tunnel_id", got)
	}

	none := Attachment{Key: "ns/flat", Node: "node-a", Network: Network{Name: "ns_flat", Topology: ovnk.TopologyLocalnet}}
	got := mustAllocate(t, a, "p2", none)
	hw, err := net.ParseMAC(got.MACAddress)
	if len(got.IPAddresses) != 0 || err != nil || hw[0]&1 != 0 || hw[0]&2 == 0 {
		t.Errorf("no IPAM: %+v, want a MAC only, unicast and locally administered", got)
	}
	none.Request = Request{IPs: []string{"172.16.0.5/24"}}
	if got := mustAllocate(t, a, "p3", none); got.IPAddresses[0] != "172.16.0.5/24" || got.MACAddress != "0a:58:ac:10:00:05" {
		t.Errorf("no IPAM with ips: %+v, want the address and its derived MAC", got)
	}
	none.Request = Request{MAC: "01:00:5e:00:00:01"}
	if _, err := a.Allocate(nn("p4"), "u4", none); ipalloc.ReasonOf(err) != ipalloc.ReasonInvalidRequest {
		t.Errorf("multicast MAC request: %v", err)
	}
}

// Forget gives a pod's addresses and tunnel ID back: a full pool serves the
// next pod once one is forgotten; a replaced pool (the node's host subnet
// changed) forgets the holds on the old one.
func TestForgetFreesAndReplacedPoolsDropHolds(t *testing.T) {
	a := New(nil)
	tiny := Attachment{Key: "ns/red", Node: "node-a", Network: Network{Name: "ns_red", Topology: TopologyLayer2, Subnets: pfx("10.30.0.0/30")}}
	mustAllocate(t, a, "p1", tiny)
	mustAllocate(t, a, "p2", tiny)
	if _, err := a.Allocate(nn("p3"), "u3", tiny); ipalloc.ReasonOf(err) != ipalloc.ReasonSubnetExhausted {
		t.Fatalf("a full /30: %v, want SubnetExhausted", err)
	}
	a.Forget(nn("p1"))
	p3 := mustAllocate(t, a, "p3", tiny)
	if p3.IPAddresses[0] != "10.30.0.1/30" {
		t.Errorf("after p1 is forgotten: %v, want its 10.30.0.1/30", p3.IPAddresses)
	}
	// A retry after a failed write gets the same entry back.
	if again := mustAllocate(t, a, "p3", tiny); again.IPAddresses[0] != p3.IPAddresses[0] || again.TunnelID != p3.TunnelID {
		t.Errorf("retry: %+v, want %+v", again, p3)
	}
	if !a.Held(nn("p2"), "uid-p2", tiny) || a.Held(nn("p2"), "other-uid", tiny) {
		t.Errorf("Held must match the pod's UID")
	}

	att := layer3("node-a", "10.20.1.0/24")
	mustAllocate(t, a, "web", att)
	moved := layer3("node-a", "10.20.9.0/24")
	if fresh, err := a.Ensure(moved); !fresh || err != nil {
		t.Fatalf("a new host subnet: fresh %v, %v", fresh, err)
	}
	if a.Held(nn("web"), "uid-web", moved) {
		t.Errorf("a hold on the replaced pool survived")
	}
}

// A Secondary Layer2 network without subnets still gives each pod a
// tunnel_id (upstream's cluster manager allocates pods on every Layer2
// network, hasPodAllocation) and a MAC, no address.
func TestLayer2WithoutSubnets(t *testing.T) {
	a := New(nil)
	att := Attachment{Key: "ns/bare", Node: "node-a", Network: Network{Name: "ns_bare", Topology: TopologyLayer2}}
	pn := mustAllocate(t, a, "p1", att)
	if len(pn.IPAddresses) != 0 || pn.TunnelID != podannotation.FirstPodTunnelID || pn.MACAddress == "" || pn.Role != podannotation.RoleSecondary {
		t.Errorf("entry %+v, want a MAC, tunnel_id 10, no address, role secondary", pn)
	}
}

// A pod naming a Secondary Layer2 NAD twice holds two addresses and two
// tunnel IDs, one per pod-networks key ("ns/red", "ns/red/1"), as
// upstream's cluster manager allocates per NAD key
// (pkg/clustermanager/pod/allocator.go: podIdAllocationName(nadKey, uid));
// Forget releases both.
func TestANADNamedTwiceHoldsTwoAllocations(t *testing.T) {
	a := New(nil)
	first := Attachment{Key: "ns/red", Node: "node-a", Network: Network{Name: "ns_red", Topology: TopologyLayer2, Subnets: pfx("10.30.0.0/24")}}
	second := first
	second.Key = "ns/red/1"
	one, two := mustAllocate(t, a, "p1", first), mustAllocate(t, a, "p1", second)
	if one.IPAddresses[0] != "10.30.0.1/24" || one.TunnelID != 10 || two.IPAddresses[0] != "10.30.0.2/24" || two.TunnelID != 11 {
		t.Fatalf("entries %+v and %+v, want .1/tunnel 10 and .2/tunnel 11", one, two)
	}
	if !a.Held(nn("p1"), "uid-p1", first) || !a.Held(nn("p1"), "uid-p1", second) {
		t.Errorf("the pod does not hold both attachments")
	}
	a.Forget(nn("p1"))
	p := a.pools["ns_red"]
	for _, ip := range []string{"10.30.0.1", "10.30.0.2"} {
		if owner := p.ips.OwnerOfIP(netip.MustParseAddr(ip)); owner != "" {
			t.Errorf("%s still held by %q after Forget", ip, owner)
		}
	}
	for _, id := range []int{10, 11} {
		if owner, held := p.tunnels.Owner(id); held {
			t.Errorf("tunnel ID %d still held by %q after Forget", id, owner)
		}
	}
}
