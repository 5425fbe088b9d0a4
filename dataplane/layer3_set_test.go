package dataplane

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/ovnk"
)

// The default (address-set) form: one subnet per family is upstream's single
// policy; appending a second subnet to a family replaces it, in one
// transaction, with one Address_Set of the family's subnets and one policy
// matching it; a further append only changes the set; removing the network
// removes the sets with the policies.
func TestLayer3SubnetAddressSetAfterAppend(t *testing.T) {
	e := newEnv(t)
	const network = "udn_udn-primary-layer3"
	router := ovnk.NamesFor(network).ClusterRouter()
	set4 := ovnk.NamesFor(network).SubnetsAddressSet("ip4")
	apply := func(cidrs ...string) int {
		t.Helper()
		var subnets []netip.Prefix
		for _, c := range cidrs {
			subnets = append(subnets, pfx(c))
		}
		d, err := topology.Layer3SubnetPolicies(network, subnets)
		if err != nil {
			t.Fatal(err)
		}
		return e.apply(d)
	}
	// A foreign address set and policy that must survive everything below.
	e.nbctl("create", "Address_Set", "name=foreign", "addresses=10.9.0.1")
	apply("10.1.0.0/16", "fd00:10:1::/48")
	wantLines(t, "one subnet per family", e.nbctl("lr-policy-list", router),
		"Routing Policies",
		"102 ip4.src == 10.1.0.0/16 && ip4.dst == 10.1.0.0/16 allow",
		"102 ip6.src == fd00:10:1::/48 && ip6.dst == fd00:10:1::/48 allow",
		"102 pkt.mark == 42 allow",
	)
	e.nbctl("lr-policy-add", router, "1004", "ip4.dst == 172.18.0.3", "reroute", "10.1.0.2")

	apply("10.1.0.0/16", "fd00:10:1::/48", "10.2.0.0/16")
	wantLines(t, "after appending 10.2.0.0/16", e.nbctl("lr-policy-list", router),
		"Routing Policies",
		"1004 ip4.dst == 172.18.0.3 reroute 10.1.0.2",
		fmt.Sprintf("102 ip4.src == $%s && ip4.dst == $%s allow", set4, set4),
		"102 ip6.src == fd00:10:1::/48 && ip6.dst == fd00:10:1::/48 allow",
		"102 pkt.mark == 42 allow",
	)
	addresses := func() string {
		return e.nbctl("--bare", "--columns=addresses", "find", "Address_Set", "name="+set4)
	}
	if got := addresses(); got != "10.1.0.0/16 10.2.0.0/16" {
		t.Errorf("address set %s = %q, want both IPv4 subnets", set4, got)
	}
	if got := e.nbctl("--bare", "--columns=external_ids", "find", "Address_Set", "name="+set4); !strings.Contains(got, "k8s.ovn.org/network="+network) ||
		!strings.Contains(got, "k8s.ovn.org/udnkit-piece=subnet-policies") {
		t.Errorf("address set external_ids = %q, want it owned by the piece", got)
	}
	// A third subnet: the set grows, the policies stay as they are.
	policies := e.nbctl("--bare", "--columns=_uuid", "list", "Logical_Router_Policy")
	if ops := apply("10.1.0.0/16", "fd00:10:1::/48", "10.2.0.0/16", "10.3.0.0/16"); ops != 1 {
		t.Errorf("appending a third subnet sent %d operations, want 1 (the set's update)", ops)
	}
	if got := addresses(); got != "10.1.0.0/16 10.2.0.0/16 10.3.0.0/16" {
		t.Errorf("address set %s = %q after the third subnet", set4, got)
	}
	if got := e.nbctl("--bare", "--columns=_uuid", "list", "Logical_Router_Policy"); got != policies {
		t.Error("appending to a set rewrote policies")
	}
	if ops := apply("10.1.0.0/16", "fd00:10:1::/48", "10.2.0.0/16", "10.3.0.0/16"); ops != 0 {
		t.Errorf("second apply sent %d operations, want 0", ops)
	}

	d, _ := topology.Layer3SubnetPolicies(network, []netip.Prefix{pfx("10.1.0.0/16")})
	e.apply(&rows.Desired{Owner: d.Owner})
	if got := e.nbctl("--bare", "--columns=name", "list", "Address_Set"); got != "foreign" {
		t.Errorf("address sets after deleting the network: %q, want only the foreign one", got)
	}
	if got := e.nbctl("lr-policy-list", router); !strings.Contains(got, "1004 ") || strings.Contains(got, "102 ") {
		t.Errorf("policies after deleting the network:\n%s", got)
	}

	if _, err := topology.Layer3SubnetPoliciesForm(network, []netip.Prefix{pfx("10.1.0.0/16")}, "triangles"); err == nil ||
		!strings.Contains(err.Error(), `layer3 subnet policy form "triangles"`) {
		t.Errorf("unknown form: err = %v", err)
	}
	if _, err := topology.ParseLayer3PolicyForm("pair"); err == nil {
		t.Error(`ParseLayer3PolicyForm("pair") accepted a misspelt form`)
	}
	if f, err := topology.ParseLayer3PolicyForm(""); err != nil || f != topology.PolicyFormAddressSet {
		t.Errorf(`ParseLayer3PolicyForm("") = %q, %v; want the address-set default`, f, err)
	}
}

// 200 subnets: the address-set form is 1 policy and 1 set instead of 40,000 policies.
func TestLayer3AddressSetFormIsLinear(t *testing.T) {
	subnets := manySubnets(200)
	pairs, err := topology.Layer3SubnetPoliciesForm("ns_big", subnets, topology.PolicyFormPairs)
	if err != nil {
		t.Fatal(err)
	}
	sets, err := topology.Layer3SubnetPolicies("ns_big", subnets)
	if err != nil {
		t.Fatal(err)
	}
	// Both forms also hold the reply-traffic policy (pkt.mark == 42).
	if n := len(pairs.Routers[0].Policies); n != 200*200+1 {
		t.Errorf("pair form: %d policies, want 40000 and the reply policy", n)
	}
	if n, m := len(sets.Routers[0].Policies), len(sets.AddressSets); n != 2 || m != 1 || len(sets.AddressSets[0].Addresses) != 200 {
		t.Errorf("address-set form: %d policies and %d sets, want 1 and the reply policy, and 1 set of 200 subnets", n, m)
	}
}

// manySubnets returns n distinct IPv4 /24 subnets 10.1.0.0/24, 10.1.1.0/24, ...
func manySubnets(n int) []netip.Prefix {
	out := make([]netip.Prefix, n)
	for i := range out {
		out[i] = netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(1 + i/256), byte(i % 256), 0}), 24)
	}
	return out
}
