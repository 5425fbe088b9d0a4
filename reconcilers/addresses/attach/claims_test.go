package attach

import (
	"slices"
	"testing"

	"github.com/udnkit/udnkit/ovnk"
)

// Which networks honour an ipam-claim-reference, as upstream decides it:
// hasPersistentIPs is AllowsPersistentIPs() && DoesNetworkRequireIPAM
// (pkg/allocator/pod/pod_annotation.go), and FindIPAMClaim refuses Layer3
// (pkg/persistentips/allocator.go).
func TestHonoursClaims(t *testing.T) {
	for _, c := range []struct {
		name string
		n    Network
		want bool
	}{
		{"Layer2, persistent, subnets", Network{Topology: TopologyLayer2, PersistentIPs: true, Subnets: pfx("10.0.0.0/24")}, true},
		{"Localnet, persistent, subnets", Network{Topology: ovnk.TopologyLocalnet, PersistentIPs: true, Subnets: pfx("10.0.0.0/24")}, true},
		{"Layer2, not persistent", Network{Topology: TopologyLayer2, Subnets: pfx("10.0.0.0/24")}, false},
		{"Layer2, persistent, no IPAM", Network{Topology: TopologyLayer2, PersistentIPs: true}, false},
		{"Layer3, persistent", Network{Topology: TopologyLayer3, PersistentIPs: true, Subnets: pfx("10.0.0.0/16")}, false},
	} {
		if got := c.n.HonoursClaims(); got != c.want {
			t.Errorf("%s: HonoursClaims() = %v, want %v", c.name, got, c.want)
		}
	}
}

// A claim's addresses outlive its pods: Forget keeps them and names the
// claim; ReleaseClaim frees them only where no pod holds them still.
func TestClaimAddressesOutliveTheirPods(t *testing.T) {
	a := New(nil)
	att := Attachment{Key: "ns/vm", Network: Network{Name: "ns_vm", Topology: TopologyLayer2, PersistentIPs: true, Subnets: pfx("10.9.0.0/30")}}
	withClaim := att
	withClaim.Request.Claim = "vm-a"
	src := mustAllocate(t, a, "src", withClaim)
	dst := mustAllocate(t, a, "dst", withClaim)
	if !slices.Equal(src.IPAddresses, dst.IPAddresses) || src.MACAddress != dst.MACAddress || src.TunnelID == dst.TunnelID {
		t.Fatalf("migration target %+v, source %+v: want the same addresses and MAC, another tunnel_id", dst, src)
	}
	owner := ClaimOwner("ns", "vm-a")
	if got := a.Forget(nn("src")); !slices.Equal(got, []string{owner}) {
		t.Errorf("Forget(src) = %v, want [%s]", got, owner)
	}
	a.ReleaseClaim(owner) // dst still holds them
	mustAllocate(t, a, "other", att)
	if _, err := a.Allocate(nn("third"), "uid-third", att); err == nil {
		t.Fatal("a /30 with the claim and another pod holding one address each handed out a third")
	}
	a.Forget(nn("dst"))
	if _, err := a.Allocate(nn("third"), "uid-third", att); err == nil {
		t.Fatal("the claim's addresses were freed with its last pod, before the claim went")
	}
	a.ReleaseClaim(owner)
	if pn, err := a.Allocate(nn("third"), "uid-third", att); err != nil || !slices.Equal(pn.IPAddresses, src.IPAddresses) {
		t.Errorf("after ReleaseClaim: %v, %v; want the claim's %v", pn.IPAddresses, err, src.IPAddresses)
	}
}
