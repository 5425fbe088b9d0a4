package dataplane

import (
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// OKEP-5377 in upstream's pair form: the cluster router allows east-west
// traffic between every ordered pair of subnets of one family, updated when a
// subnet is appended.
func TestLayer3SubnetPairPoliciesAfterAppend(t *testing.T) {
	e := newEnv(t)
	const router = "udn_udn.primary.layer3_ovn_cluster_router"
	d, err := topology.Layer3SubnetPoliciesForm("udn_udn-primary-layer3", []netip.Prefix{pfx("10.1.0.0/16"), pfx("fd00:10:1::/48")}, topology.PolicyFormPairs)
	if err != nil {
		t.Fatal(err)
	}
	// No cluster router yet: the piece creates and owns it, and removes it with the network.
	e.apply(d)
	if got := e.nbctl("--bare", "--columns=external_ids", "find", "Logical_Router", "name="+router); !strings.Contains(got, "k8s.ovn.org/udnkit-piece=subnet-policies") {
		t.Errorf("created cluster router is not owned by the piece: %q", got)
	}
	wantLines(t, "policies on the router the piece created", e.nbctl("lr-policy-list", router),
		"Routing Policies",
		"102 ip4.src == 10.1.0.0/16 && ip4.dst == 10.1.0.0/16 allow",
		"102 ip6.src == fd00:10:1::/48 && ip6.dst == fd00:10:1::/48 allow",
		"102 pkt.mark == 42 allow",
	)
	e.apply(&rows.Desired{Owner: d.Owner})
	if got := e.nbctl("--bare", "--columns=name", "list", "Logical_Router"); got != "" {
		t.Fatalf("the owned router survived the network: %q", got)
	}

	// The Layer3 topology owns the cluster router; it already has other policies.
	e.nbctl("lr-add", router)
	e.nbctl("lr-policy-add", router, "1004", "ip4.dst == 172.18.0.3", "reroute", "10.1.0.2")
	e.apply(d)
	wantLines(t, "one subnet per family", e.nbctl("lr-policy-list", router),
		"Routing Policies",
		"1004 ip4.dst == 172.18.0.3 reroute 10.1.0.2",
		"102 ip4.src == 10.1.0.0/16 && ip4.dst == 10.1.0.0/16 allow",
		"102 ip6.src == fd00:10:1::/48 && ip6.dst == fd00:10:1::/48 allow",
		"102 pkt.mark == 42 allow",
	)

	d, err = topology.Layer3SubnetPoliciesForm("udn_udn-primary-layer3",
		[]netip.Prefix{pfx("10.1.0.0/16"), pfx("fd00:10:1::/48"), pfx("10.2.0.0/16")}, topology.PolicyFormPairs)
	if err != nil {
		t.Fatal(err)
	}
	if ops := e.apply(d); ops == 0 {
		t.Fatal("appending a subnet sent no operations")
	}
	wantLines(t, "after appending 10.2.0.0/16", e.nbctl("lr-policy-list", router),
		"Routing Policies",
		"1004 ip4.dst == 172.18.0.3 reroute 10.1.0.2",
		"102 ip4.src == 10.1.0.0/16 && ip4.dst == 10.1.0.0/16 allow",
		"102 ip4.src == 10.1.0.0/16 && ip4.dst == 10.2.0.0/16 allow",
		"102 ip4.src == 10.2.0.0/16 && ip4.dst == 10.1.0.0/16 allow",
		"102 ip4.src == 10.2.0.0/16 && ip4.dst == 10.2.0.0/16 allow",
		"102 ip6.src == fd00:10:1::/48 && ip6.dst == fd00:10:1::/48 allow",
		"102 pkt.mark == 42 allow",
	)
	if ops := e.apply(d); ops != 0 {
		t.Errorf("second apply sent %d operations, want 0", ops)
	}

	// The network is deleted: its policies go, the foreign router and its other policy stay.
	e.apply(&rows.Desired{Owner: d.Owner})
	if got := e.nbctl("--bare", "--columns=external_ids", "find", "Logical_Router", "name="+router); got != "" {
		t.Errorf("the piece changed the foreign router's external_ids: %q", got)
	}
	wantLines(t, "after deleting the network", e.nbctl("lr-policy-list", router),
		"Routing Policies",
		"1004 ip4.dst == 172.18.0.3 reroute 10.1.0.2",
	)

	for _, c := range []struct {
		subnets []netip.Prefix
		want    string
	}{
		{nil, "network.subnets: a Layer3 network needs at least one subnet"},
		{[]netip.Prefix{pfx("10.1.0.0/16"), pfx("10.1.0.0/16")}, "network.subnets[1]: 10.1.0.0/16 repeats subnets[0]"},
		{[]netip.Prefix{{}}, "network.subnets[0]: not a valid CIDR"},
	} {
		if _, err := topology.Layer3SubnetPolicies("n", c.subnets); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Layer3SubnetPolicies(%v): err = %v, want %q", c.subnets, err, c.want)
		}
	}
}

// Two pieces that share a missing cluster router, applied at the same time
// (their controllers run concurrently), create it once: the second sees the
// first's router and only adds its rows to it.
func TestSharedRouterCreatedOnceByConcurrentPieces(t *testing.T) {
	e := newEnv(t)
	for i := range 10 {
		network := "ns_race" + strconv.Itoa(i)
		policies, err := topology.Layer3SubnetPolicies(network, []netip.Prefix{pfx("10.1.0.0/16")})
		if err != nil {
			t.Fatal(err)
		}
		ports := sharedRouterPiece(network)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for j, d := range []*rows.Desired{policies, ports} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[j] = e.c.Apply(e.ctx, d)
			}()
		}
		wg.Wait()
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("concurrent applies: %v, %v", errs[0], errs[1])
		}
		router := ovnk.NamesFor(network).ClusterRouter()
		if got := e.nbctl("--bare", "--columns=_uuid", "find", "Logical_Router", "name="+router); len(strings.Fields(got)) != 1 {
			t.Fatalf("round %d: %d routers named %s, want 1", i, len(strings.Fields(got)), router)
		}
		if got := e.nbctl("lr-policy-list", router); !strings.Contains(got, "10.1.0.0/16") {
			t.Errorf("round %d: the shared router lacks the policies: %s", i, got)
		}
		if got := e.nbctl("--bare", "--columns=name", "find", "Logical_Router_Port", "name="+ovnk.NamesFor(network).RouterToTransitSwitch("node-b")+"_encap1"); got == "" {
			t.Errorf("round %d: the shared router lacks the other piece's port", i)
		}
	}
}

// A shared router one piece created stays while the subnet policies are on
// it, and goes with the last piece to leave it.
func TestSharedRouterOutlivesItsCreatorWhileOthersUseIt(t *testing.T) {
	e := newEnv(t)
	const network = "ns_green"
	router := ovnk.NamesFor(network).ClusterRouter()
	ports := sharedRouterPiece(network)
	policies, err := topology.Layer3SubnetPolicies(network, []netip.Prefix{pfx("10.1.0.0/16")})
	if err != nil {
		t.Fatal(err)
	}
	e.apply(ports)
	e.apply(policies)
	if got := e.nbctl("--bare", "--columns=external_ids", "find", "Logical_Router", "name="+router); !strings.Contains(got, "k8s.ovn.org/udnkit-piece="+ports.Owner.Piece) ||
		!strings.Contains(got, ovnk.ExternalIDShared+"=true") {
		t.Fatalf("router external_ids = %q, want created by the first piece and marked shared", got)
	}
	// The creator's last port goes: the router stays for the policies.
	e.apply(&rows.Desired{Owner: ports.Owner})
	wantLines(t, "policies after the creator left", e.nbctl("lr-policy-list", router),
		"Routing Policies", "102 ip4.src == 10.1.0.0/16 && ip4.dst == 10.1.0.0/16 allow", "102 pkt.mark == 42 allow")
	if got := e.nbctl("--bare", "--columns=name", "find", "Logical_Router_Port", "name="+ovnk.NamesFor(network).RouterToTransitSwitch("node-b")+"_encap1"); got != "" {
		t.Errorf("the creator's port survived: %q", got)
	}
	// The policies go, and the router with them: nothing else is on it and
	// its creator, already gone, never applies again.
	e.apply(&rows.Desired{Owner: policies.Owner})
	if got := e.nbctl("--bare", "--columns=name", "list", "Logical_Router"); got != "" {
		t.Errorf("routers left: %q", got)
	}
	if ops := e.apply(&rows.Desired{Owner: ports.Owner}); ops != 0 {
		t.Errorf("the creator's empty Apply sent %d operations, want 0", ops)
	}
}

// sharedRouterPiece is a piece that shares a network's cluster router
// (Shared: created when missing, referenced otherwise) with one port on it,
// as the subnet policies share it with the Layer3 topology.
func sharedRouterPiece(network string) *rows.Desired {
	return &rows.Desired{Owner: rows.Owner{Network: network, Topology: base.TopologyLayer3, Piece: "shared-test"},
		Routers: []rows.Router{{Row: base.Layer3ClusterRouter(network), Shared: true, Copp: base.DefaultCOPP(),
			Ports: []nbdb.LogicalRouterPort{{Name: ovnk.NamesFor(network).RouterToTransitSwitch("node-b") + "_encap1",
				MAC: "0a:58:64:58:00:04", Networks: []string{"100.88.0.4/16"}}}}}}
}
