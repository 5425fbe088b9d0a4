package datapath_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/dataplane/controllers/networkpolicy"
	policyctl "github.com/udnkit/udnkit/dataplane/controllers/policy"
	netpolrows "github.com/udnkit/udnkit/dataplane/topology/networkpolicy"
	"github.com/udnkit/udnkit/dataplane/topology/policy"
	"github.com/udnkit/udnkit/envtest/datapath"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
)

// programPolicies runs udnkit's network-policy defaults reconciler (the
// network's cluster port groups and default ACLs) and its NetworkPolicy
// reconciler in every zone, each zone local to its own node, on the same
// API state.
func programPolicies(t *testing.T, c *datapath.Cluster, nets ...*network) {
	t.Helper()
	for _, zone := range c.Nodes {
		state := apiState(t, c, nets...)
		reconcileAll(t, zone, &policyctl.Reconciler{Client: state, OVN: ovnClient(t, zone), Cluster: cfg, Local: localTo(zone)}, nets...)
		reconcileAll(t, zone, &networkpolicy.Reconciler{Client: state, OVN: ovnClient(t, zone), Local: localTo(zone)}, nets...)
	}
}

// netpol is a NetworkPolicy of namespace selecting the pods labelled
// target, of the given types, without rules.
func netpol(namespace, name string, target map[string]string, types ...networkingv1.PolicyType) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: target}, PolicyTypes: types}}
}

// ingressFrom gives np one ingress rule from peers.
func ingressFrom(np *networkingv1.NetworkPolicy, peers ...networkingv1.NetworkPolicyPeer) *networkingv1.NetworkPolicy {
	np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: peers}}
	return np
}

// hostPrefix is the single-address CIDR of a.
func hostPrefix(p *pod, v6 bool) string {
	a := p.ip(v6)
	return a.String() + "/" + strconv.Itoa(a.BitLen())
}

// admits fails the test unless from reaches to over ICMP and TCP in the family.
func admits(t *testing.T, c *datapath.Cluster, from, to *pod, v6 bool) {
	t.Helper()
	reach(t, c, from, to.ip(v6))
	if err := from.datapath.TCPEcho(to.ip(v6), tcpPort, reachTimeout); err != nil {
		t.Fatal(err)
	}
}

// denies fails the test if from reaches to over ICMP or TCP in the family.
func denies(t *testing.T, from, to *pod, v6 bool) {
	t.Helper()
	unreachable(t, from, to.ip(v6))
	if err := from.datapath.TCPEcho(to.ip(v6), tcpPort, 2*time.Second); err == nil {
		t.Fatalf("%s/%s completed a TCP echo with %s, which it must not", from.net.namespace, from.name, to.ip(v6))
	}
}

// TestNetworkPolicy sends packets through the ACLs udnkit's NetworkPolicy
// controller writes for a dual-stack Primary Layer2 UDN programmed in
// three zones, from NetworkPolicy, Namespace and Pod objects, with pods on
// node-a, node-b and node-c: without a policy every pod reaches every
// other (ICMP and TCP); an ingress default-deny policy on the server drops
// both families while the server still opens its own connections, and an
// egress one on a client stops that client's new connections only; an
// allow rule by pod label admits the labelled client only; an allow rule
// by ipBlock admits the client's /32 and /128, and one whose except names
// them admits the other client only; removing the policies restores
// traffic. Each check has a mutation of a row udnkit wrote (in the zone of
// the pod the policy selects) that must break it, after which the
// reconciler's next pass heals it.
func TestNetworkPolicy(t *testing.T) {
	c := needCluster(t)
	a, b, cc := c.Node("node-a"), c.Node("node-b"), c.Node("node-c")
	pol := newNetwork(t, "tenant-pol", "pol", 12, "10.160.0.0/16", "fd00:160::/64")
	ns := pol.namespace
	server := &pod{net: pol, name: "server", node: b, index: 5, tunnelID: 10, labels: map[string]string{"app": "server"}}
	client1 := &pod{net: pol, name: "client", node: a, index: 6, tunnelID: 11, labels: map[string]string{"role": "client"}}
	other := &pod{net: pol, name: "other", node: cc, index: 7, tunnelID: 12, labels: map[string]string{"role": "other"}}
	all := []*pod{server, client1, other}
	setObjects(testobj.MakeNamespace(ns).Primary().Obj())
	program(t, c, pol)
	podPorts(t, c, all...)
	startPods(t, c, all...)
	for _, p := range all {
		stop, err := p.datapath.ServeTCP(tcpPort)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
	}
	var policies []client.Object
	t.Cleanup(func() { dropObjects(policies...) })
	// apply puts the policies (and only them) into the API state and runs
	// the reconcilers.
	apply := func(t *testing.T, nps ...*networkingv1.NetworkPolicy) {
		t.Helper()
		dropObjects(policies...)
		policies = policies[:0]
		for _, np := range nps {
			policies = append(policies, np)
		}
		setObjects(policies...)
		programPolicies(t, c, pol)
		settle(t, c)
	}
	heal := func(t *testing.T) {
		t.Helper()
		programPolicies(t, c, pol)
		settle(t, c)
	}
	families := []bool{false, true}
	fam := map[bool]string{false: "IPv4", true: "IPv6"}
	net := pol.ovnName()
	denyIn, denyOut := netpolrows.DenyPortGroup(net, ns, true), netpolrows.DenyPortGroup(net, ns, false)
	// withoutDrop is the mutation of the default-deny checks: without the
	// namespace's ingress (egress) drop ACL in the server's (client's)
	// zone the client reaches the server again, until the reconciler's
	// next pass.
	withoutDrop := func(t *testing.T, ingress bool) {
		t.Helper()
		zone, pg, dir, match := b, denyIn, "to-lport", "outport == @"+denyIn
		if !ingress {
			zone, pg, dir, match = a, denyOut, "from-lport", "inport == @"+denyOut
		}
		zone.NB().Must(t, "--type=port-group", "acl-del", pg, dir, strconv.Itoa(policy.DefaultDenyPriority), match)
		settle(t, c)
		admits(t, c, client1, server, false)
		heal(t)
		denies(t, client1, server, false)
	}

	apply(t)
	for _, v6 := range families {
		t.Run(fam[v6]+": without a policy every pod reaches every other (ICMP and TCP)", func(t *testing.T) {
			admits(t, c, client1, server, v6)
			admits(t, c, other, server, v6)
			admits(t, c, server, client1, v6)
			admits(t, c, other, client1, v6)
		})
	}

	// Default deny: the selected pod's new connections of the policy's
	// direction are dropped, replies to connections of the other direction
	// still pass.
	for _, d := range []struct {
		name             string
		np               *networkingv1.NetworkPolicy
		denied, admitted [][2]*pod
		ingress          bool
	}{{
		name:     "an ingress default-deny policy drops new connections to the pods it selects, both families",
		np:       netpol(ns, "deny-in", server.labels, networkingv1.PolicyTypeIngress),
		denied:   [][2]*pod{{client1, server}, {other, server}},
		admitted: [][2]*pod{{server, client1}, {other, client1}},
		ingress:  true,
	}, {
		name:     "an egress default-deny policy drops new connections from the pods it selects, both families",
		np:       netpol(ns, "deny-out", client1.labels, networkingv1.PolicyTypeEgress),
		denied:   [][2]*pod{{client1, server}, {client1, other}},
		admitted: [][2]*pod{{server, client1}, {other, server}},
	}} {
		t.Run(d.name, func(t *testing.T) {
			apply(t, d.np)
			for _, v6 := range families {
				for _, p := range d.denied {
					denies(t, p[0], p[1], v6)
				}
				for _, p := range d.admitted {
					admits(t, c, p[0], p[1], v6)
				}
			}
			withoutDrop(t, d.ingress)
		})
	}

	t.Run("an allow rule by pod label admits the labelled client and not the other", func(t *testing.T) {
		apply(t, ingressFrom(netpol(ns, "allow-client", server.labels, networkingv1.PolicyTypeIngress),
			networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: client1.labels}}))
		for _, v6 := range families {
			admits(t, c, client1, server, v6)
			denies(t, other, server, v6)
		}
		// Mutation: the rule's pod-selector address sets emptied in the
		// server's zone: the labelled client is dropped too.
		sets := strings.Fields(b.NB().Must(t, "--bare", "--columns=name", "find", "Address_Set",
			"external_ids:"+ovnk.ExternalIDOwnerType+"=PodSelector", "external_ids:"+ovnk.ExternalIDOwnerController+"="+policy.NetworkController(net)))
		if len(sets) != 2 {
			t.Fatalf("node-b's zone has pod-selector address sets %v for %s, want one per family", sets, net)
		}
		for _, s := range sets {
			b.NB().Must(t, "clear", "Address_Set", s, "addresses")
		}
		settle(t, c)
		for _, v6 := range families {
			denies(t, client1, server, v6)
		}
		heal(t)
		admits(t, c, client1, server, false)
	})

	t.Run("an allow rule by ipBlock admits the client's /32 and /128, and an except that names them excludes it", func(t *testing.T) {
		apply(t, ingressFrom(netpol(ns, "allow-block", server.labels, networkingv1.PolicyTypeIngress),
			networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: hostPrefix(client1, false)}},
			networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: hostPrefix(client1, true)}}))
		for _, v6 := range families {
			admits(t, c, client1, server, v6)
			denies(t, other, server, v6)
		}
		apply(t, ingressFrom(netpol(ns, "allow-block", server.labels, networkingv1.PolicyTypeIngress),
			networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: pol.subnets[0].String(), Except: []string{hostPrefix(client1, false)}}},
			networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: pol.subnets[1].String(), Except: []string{hostPrefix(client1, true)}}}))
		for _, v6 := range families {
			denies(t, client1, server, v6)
			admits(t, c, other, server, v6)
		}
		// Mutation: the policy's ACLs removed from its port group in the
		// server's zone: only the default deny is left, the other client
		// is dropped too.
		pg := netpolrows.PolicyPortGroup(net, ns, "allow-block")
		b.NB().Must(t, "--type=port-group", "acl-del", pg)
		settle(t, c)
		denies(t, other, server, false)
		heal(t)
		admits(t, c, other, server, false)
	})

	t.Run("removing the policies restores traffic", func(t *testing.T) {
		apply(t, netpol(ns, "deny-in", server.labels, networkingv1.PolicyTypeIngress))
		denies(t, client1, server, false)
		dropObjects(policies...)
		// Mutation: until the reconciler's next pass the rows of the
		// deleted policy still drop the traffic.
		denies(t, client1, server, false)
		apply(t)
		for _, v6 := range families {
			admits(t, c, client1, server, v6)
			admits(t, c, other, server, v6)
		}
		if got := b.NB().Must(t, "--bare", "--columns=name", "find", "Port_Group", "name="+denyIn); got != "" {
			t.Fatalf("node-b's zone still has the ingress default-deny port group %s after the policies went", got)
		}
	})
}
