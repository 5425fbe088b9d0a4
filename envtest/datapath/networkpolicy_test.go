package datapath_test

import (
	"context"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/dataplane/controllers/networkpolicy"
	policyctl "github.com/udnkit/udnkit/dataplane/controllers/policy"
	netpolrows "github.com/udnkit/udnkit/dataplane/topology/networkpolicy"
	"github.com/udnkit/udnkit/dataplane/topology/policy"
	"github.com/udnkit/udnkit/envtest/datapath"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
)

// policyRun is one policy packet test's network, in its own namespace,
// with a server on node-b, a client labelled role=client on node-a and
// another pod on node-c, and the policies it has put into the API state.
type policyRun struct {
	c                     *datapath.Cluster
	net                   *network
	server, client, other *pod
	policies              []client.Object
}

// newPolicyRun programs net (Primary or Secondary Layer2) in every zone,
// puts its namespace and pods into the API state, starts the pods and a
// TCP echo server in each.
func newPolicyRun(t *testing.T, c *datapath.Cluster, net *network) *policyRun {
	t.Helper()
	return startPolicyRun(t, c, layer2Pods,
		&pod{net: net, name: "server", node: c.Node("node-b"), index: 5, tunnelID: 10, labels: map[string]string{"app": "server"}},
		&pod{net: net, name: "client", node: c.Node("node-a"), index: 6, tunnelID: 11, labels: map[string]string{"role": "client"}},
		&pod{net: net, name: "other", node: c.Node("node-c"), index: 7, tunnelID: 12, labels: map[string]string{"role": "other"}})
}

// layer2Pods programs the pods' Layer2 networks in every zone, puts the
// pods into the API state and starts them.
func layer2Pods(t *testing.T, c *datapath.Cluster, all []*pod) {
	t.Helper()
	var nets []*network
	for _, p := range all {
		if !slices.Contains(nets, p.net) {
			nets = append(nets, p.net)
		}
	}
	program(t, c, nets...)
	podPorts(t, c, all...)
	startPods(t, c, all...)
}

// startPolicyRun puts the pods' namespaces into the API state, has start
// program their networks and start them, then starts a TCP echo server in
// each; the run's network is the server's.
func startPolicyRun(t *testing.T, c *datapath.Cluster, start func(*testing.T, *datapath.Cluster, []*pod), server, client, other *pod) *policyRun {
	t.Helper()
	r := &policyRun{c: c, net: server.net, server: server, client: client, other: other}
	all := []*pod{r.server, r.client, r.other}
	for _, p := range all {
		ns := testobj.MakeNamespace(p.net.namespace)
		if !p.net.secondary {
			ns = ns.Primary()
		}
		setObjects(ns.Obj())
	}
	t.Cleanup(func() { dropObjects(r.policies...) })
	start(t, c, all)
	for _, p := range all {
		stop, err := p.datapath.ServeTCP(tcpPort)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
	}
	r.apply(t)
	return r
}

// families are the run's network's IP families (v6 false, true).
func (r *policyRun) families() []bool {
	var out []bool
	for _, v6 := range []bool{false, true} {
		if slices.ContainsFunc(r.net.subnets, func(s netip.Prefix) bool { return s.Addr().Is6() == v6 }) {
			out = append(out, v6)
		}
	}
	return out
}

// program runs udnkit's network-policy defaults reconciler (the network's
// cluster port groups and default ACLs) and its NetworkPolicy reconciler,
// following MultiNetworkPolicies too, in every zone, each zone local to
// its own node, on the same API state; then waits for the flows.
func (r *policyRun) program(t *testing.T) {
	t.Helper()
	for _, zone := range r.c.Nodes {
		state := apiState(t, r.c, r.net)
		reconcileAll(t, zone, &policyctl.Reconciler{Client: state, OVN: ovnClient(t, zone), Cluster: cfg, Local: localTo(zone)}, r.net)
		reconcileAll(t, zone, &networkpolicy.Reconciler{Client: state, OVN: ovnClient(t, zone), Local: localTo(zone), MultiNetworkPolicy: true}, r.net)
	}
	settle(t, r.c)
}

// apply puts the policies (and only them) into the API state and runs the
// reconcilers.
func (r *policyRun) apply(t *testing.T, policies ...client.Object) {
	t.Helper()
	dropObjects(r.policies...)
	r.policies = policies
	setObjects(policies...)
	r.program(t)
}

// netpol is a NetworkPolicy of the run's namespace selecting the server,
// of the given types, with ingress rules from the peers' lists.
func (r *policyRun) netpol(name string, typ networkingv1.PolicyType, from ...[]networkingv1.NetworkPolicyPeer) *networkingv1.NetworkPolicy {
	target := r.server.labels
	if typ == networkingv1.PolicyTypeEgress {
		target = r.client.labels
	}
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: r.net.namespace, Name: name},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: target}, PolicyTypes: []networkingv1.PolicyType{typ}}}
	for _, peers := range from {
		np.Spec.Ingress = append(np.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{From: peers})
	}
	return np
}

// multi is np as a MultiNetworkPolicy whose policy-for names nad (a NAD
// of np's namespace).
func multi(t *testing.T, np *networkingv1.NetworkPolicy, nad string) client.Object {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(np)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(networkpolicy.MultiNetworkPolicyGVK)
	u.SetAnnotations(map[string]string{netpolrows.AnnotationPolicyFor: nad})
	return u
}

// hostBlocks are the ipBlock peers of p's /32 and /128.
func hostBlocks(p *pod) []networkingv1.NetworkPolicyPeer {
	var out []networkingv1.NetworkPolicyPeer
	for _, v6 := range []bool{false, true} {
		a := p.ip(v6)
		out = append(out, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: netip.PrefixFrom(a, a.BitLen()).String()}})
	}
	return out
}

// exceptBlocks are the ipBlock peers of the network's subnets except p's
// /32 and /128.
func exceptBlocks(p *pod) []networkingv1.NetworkPolicyPeer {
	var out []networkingv1.NetworkPolicyPeer
	for _, s := range p.net.subnets {
		a := p.ip(s.Addr().Is6())
		out = append(out, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: s.String(),
			Except: []string{netip.PrefixFrom(a, a.BitLen()).String()}}})
	}
	return out
}

// labelPeer is the pod-selector peer of p's labels.
func labelPeer(p *pod) []networkingv1.NetworkPolicyPeer {
	return []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: p.labels}}}
}

// admits fails the test unless from reaches to over ICMP and TCP in the family.
func (r *policyRun) admits(t *testing.T, from, to *pod, v6 bool) {
	t.Helper()
	reach(t, r.c, from, to.ip(v6))
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

// check asserts, in both families, that each pair's first pod reaches
// its second (admitted) or does not (denied).
func (r *policyRun) check(t *testing.T, admitted, denied [][2]*pod) {
	t.Helper()
	for _, v6 := range r.families() {
		for _, p := range denied {
			denies(t, p[0], p[1], v6)
		}
		for _, p := range admitted {
			r.admits(t, p[0], p[1], v6)
		}
	}
}

// withoutDrop is the mutation of the default-deny checks: without the
// namespace's ingress (egress) drop ACL in the server's (client's) zone
// the client reaches the server again, until the reconciler's next pass.
func (r *policyRun) withoutDrop(t *testing.T, ingress bool) {
	t.Helper()
	name, ns := r.net.ovnName(), r.net.namespace
	pg := netpolrows.DenyPortGroup(name, ns, ingress)
	zone, dir, match := r.server.node, "to-lport", "outport == @"+pg
	if !ingress {
		zone, dir, match = r.client.node, "from-lport", "inport == @"+pg
	}
	zone.NB().Must(t, "--type=port-group", "acl-del", pg, dir, strconv.Itoa(policy.DefaultDenyPriority), match)
	r.recompute(t, zone)
	r.admits(t, r.client, r.server, false)
	r.program(t)
	denies(t, r.client, r.server, false)
}

// recompute settles the flows after a mutation that deleted ACLs in
// zone: OVN 26.03.1's ovn-controller can keep the flows of ACLs deleted
// from a port group on a switch without stateful ACLs (the Secondary
// network's: a deleted drop ACL, and once a deleted allow ACL of a
// MultiNetworkPolicy) until it recomputes. The mutation is the Northbound
// row, so the zone's flows are recomputed from it.
func (r *policyRun) recompute(t *testing.T, zone *datapath.Node) {
	t.Helper()
	settle(t, r.c)
	if _, err := runCmd("ovn-appctl", "-t", filepath.Join(r.c.Dir, zone.Name, "ovn-controller.ctl"), "recompute"); err != nil {
		t.Fatal(err)
	}
	settle(t, r.c)
}

// withoutSelectorSets is the mutation of the pod-label check: the
// pod-selector address sets emptied in the server's zone, the labelled
// client is dropped too, until the reconciler's next pass.
func (r *policyRun) withoutSelectorSets(t *testing.T) {
	t.Helper()
	nb := r.server.node.NB()
	sets := strings.Fields(nb.Must(t, "--bare", "--columns=name", "find", "Address_Set",
		"external_ids:"+ovnk.ExternalIDOwnerType+"=PodSelector",
		"external_ids:"+ovnk.ExternalIDOwnerController+"="+policy.NetworkController(r.net.ovnName())))
	if len(sets) != len(r.families()) {
		t.Fatalf("%s's zone has pod-selector address sets %v for %s, want one per family", r.server.node.Name, sets, r.net.ovnName())
	}
	for _, s := range sets {
		nb.Must(t, "clear", "Address_Set", s, "addresses")
	}
	settle(t, r.c)
	r.check(t, nil, [][2]*pod{{r.client, r.server}})
	r.program(t)
	r.admits(t, r.client, r.server, false)
}

// withoutPolicyACLs is the mutation of the ipBlock checks: the policy's
// ACLs removed from its port group in the server's zone, only the default
// deny is left and the admitted client is dropped too, until the
// reconciler's next pass.
func (r *policyRun) withoutPolicyACLs(t *testing.T, policyName string, admitted *pod) {
	t.Helper()
	r.server.node.NB().Must(t, "--type=port-group", "acl-del", netpolrows.PolicyPortGroup(r.net.ovnName(), r.net.namespace, policyName))
	r.recompute(t, r.server.node)
	denies(t, admitted, r.server, false)
	r.program(t)
	r.admits(t, admitted, r.server, false)
}

// TestNetworkPolicy sends packets through the ACLs udnkit's NetworkPolicy
// controller writes for a dual-stack Primary Layer2 UDN programmed in
// three zones, from NetworkPolicy, Namespace and Pod objects, with pods on
// node-a, node-b and node-c: the checks every Primary network shares
// (primaryScenario) and, between them, an allow rule by ipBlock admits the
// client's /32 and /128, and one whose except names them admits the other
// client only; an allow rule with a TCP port admits TCP to that port only.
// The ipBlock check has a mutation of a row udnkit wrote (in the server's
// zone) that must break it, after which the reconciler's next pass heals
// it.
func TestNetworkPolicy(t *testing.T) {
	r := newPolicyRun(t, needCluster(t), newNetwork(t, "tenant-pol", "pol", 14, "10.170.0.0/16", "fd00:170::/64"))
	r.primaryScenario(t,
		policyCheck{"an allow rule by ipBlock admits the client's /32 and /128, and an except that names them excludes it", r.ipBlocks},
		policyCheck{"an allow rule with a TCP port admits TCP to that port only, not another port or ICMP", r.tcpPort})
}

// policyCheck is one subtest of a policy packet test.
type policyCheck struct {
	name string
	run  func(t *testing.T)
}

// primaryScenario runs, as subtests, the checks every Primary network's
// NetworkPolicy packet test shares, own (the topology's) between the allow
// rule by pod label and the policies' removal: without a policy every pod
// reaches every other (ICMP and TCP), also while breth0's own MAC is held
// on the network's gateway router's patch port in the server's node
// (geneveToHost); an ingress default-deny policy on the server drops both
// families while the server still opens its own connections, and an
// egress one on a client stops that client's new connections only; an
// allow rule by pod label admits the labelled client only; removing the
// policies restores traffic and their rows; removing the pods deletes
// their ports in every zone. Each policy check has a mutation of a row
// udnkit wrote (in the zone of the pod the policy selects) that must break
// it, after which the reconciler's next pass heals it.
func (r *policyRun) primaryScenario(t *testing.T, own ...policyCheck) {
	server, client, other := r.server, r.client, r.other
	in, out := networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress
	checks := []policyCheck{
		{"without a policy every pod reaches every other (ICMP and TCP)", func(t *testing.T) {
			r.check(t, [][2]*pod{{client, server}, {other, server}, {server, client}, {other, client}}, nil)
		}},
		{"the Geneve traffic into the server's node reaches its host while breth0's MAC is held on a gateway router's patch port", r.geneveToHost},
		{"an ingress default-deny policy drops new connections to the pods it selects", func(t *testing.T) {
			r.apply(t, r.netpol("deny-in", in))
			// Replies to the server's own connections still come in.
			r.check(t, [][2]*pod{{server, client}, {other, client}}, [][2]*pod{{client, server}, {other, server}})
			r.withoutDrop(t, true)
		}},
		{"an egress default-deny policy drops new connections from the pods it selects", func(t *testing.T) {
			r.apply(t, r.netpol("deny-out", out))
			// Replies to connections others open to the client still go out.
			r.check(t, [][2]*pod{{server, client}, {other, server}}, [][2]*pod{{client, server}, {client, other}})
			r.withoutDrop(t, false)
		}},
		{"an allow rule by pod label admits the labelled client and not the other", func(t *testing.T) {
			r.apply(t, r.netpol("allow-client", in, labelPeer(client)))
			r.check(t, [][2]*pod{{client, server}}, [][2]*pod{{other, server}})
			r.withoutSelectorSets(t)
		}},
	}
	checks = append(checks, own...)
	checks = append(checks,
		policyCheck{"removing the policies restores traffic", r.removePolicies},
		policyCheck{"removing the pods from the API state deletes their ports in every zone", func(t *testing.T) {
			removePods(t, r.c, server, client, other)
		}})
	for _, c := range checks {
		t.Run(c.name, c.run)
	}
}

// geneveToHost checks that the server's node's Geneve traffic goes to its
// host by breth0's flows, as ovnkube-node's, and not by breth0's MAC
// table: every gateway router's external port has breth0's MAC and answers
// ARP for the node's IP through its patch port, where the table then
// learns that MAC. With breth0's MAC held there (Node.HoldBridgeMACOn),
// the pods on other nodes and the server still reach each other.
func (r *policyRun) geneveToHost(t *testing.T) {
	node := r.server.node
	release, err := node.HoldBridgeMACOn(context.Background(), r.net.ovnk().LocalnetPort(node))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := release(); err != nil {
			t.Error(err)
		}
	}()
	r.check(t, [][2]*pod{{r.client, r.server}, {r.other, r.server}, {r.server, r.client}}, nil)
}

// ipBlocks checks an allow rule by ipBlock: the client's /32 and /128
// admit it and not the other, an except that names them the other only;
// mutation: withoutPolicyACLs.
func (r *policyRun) ipBlocks(t *testing.T) {
	in, client, other, server := networkingv1.PolicyTypeIngress, r.client, r.other, r.server
	r.apply(t, r.netpol("allow-block", in, hostBlocks(client)))
	r.check(t, [][2]*pod{{client, server}}, [][2]*pod{{other, server}})
	r.apply(t, r.netpol("allow-block", in, exceptBlocks(client)))
	r.check(t, [][2]*pod{{other, server}}, [][2]*pod{{client, server}})
	r.withoutPolicyACLs(t, "allow-block", other)
}

// tcpPort checks an allow rule with a TCP port: TCP to that port is
// admitted, not to another port nor ICMP.
func (r *policyRun) tcpPort(t *testing.T) {
	server, client := r.server, r.client
	// A rule whose ACL leaves out the port (gress.addPort taking every
	// port as 0) opens the other port: this check fails.
	defer r.portRule(t, "allow-tcp", intstr.FromInt32(tcpPort))()
	for _, v6 := range r.families() {
		if err := client.datapath.TCPEcho(server.ip(v6), tcpPort, reachTimeout); err != nil {
			t.Fatal(err)
		}
		if err := client.datapath.TCPEcho(server.ip(v6), tcpPort+1, 2*time.Second); err == nil {
			t.Fatalf("the client completed a TCP echo with %s port %d, which the policy does not open", server.ip(v6), tcpPort+1)
		}
		unreachable(t, client, server.ip(v6))
	}
}

// portRule starts a second echo server on the server's port tcpPort+1 and
// applies an ingress policy named name on the server whose one rule, from
// anywhere, has the one port; the returned func stops that server.
func (r *policyRun) portRule(t *testing.T, name string, port intstr.IntOrString) func() {
	t.Helper()
	stop, err := r.server.datapath.ServeTCP(tcpPort + 1)
	if err != nil {
		t.Fatal(err)
	}
	np := r.netpol(name, networkingv1.PolicyTypeIngress, nil)
	np.Spec.Ingress[0].Ports = []networkingv1.NetworkPolicyPort{{Port: &port}}
	r.apply(t, np)
	return stop
}

// removePolicies checks that removing the policies restores traffic and
// takes their rows away; mutation: until the reconciler's next pass the
// rows of the deleted policy still drop the traffic.
func (r *policyRun) removePolicies(t *testing.T) {
	server, client, other := r.server, r.client, r.other
	r.apply(t, r.netpol("deny-in", networkingv1.PolicyTypeIngress))
	denies(t, client, server, false)
	dropObjects(r.policies...)
	denies(t, client, server, false)
	r.apply(t)
	r.check(t, [][2]*pod{{client, server}, {other, server}}, nil)
	denyIn := netpolrows.DenyPortGroup(r.net.ovnName(), r.net.namespace, true)
	if got := server.node.NB().Must(t, "--bare", "--columns=name", "find", "Port_Group", "name="+denyIn); got != "" {
		t.Fatalf("%s's zone still has the ingress default-deny port group %s after the policies went", server.node.Name, got)
	}
}

// TestMultiNetworkPolicy sends packets through the ACLs udnkit's
// NetworkPolicy controller writes, with MultiNetworkPolicies on, for a
// dual-stack Secondary Layer2 UDN programmed in three zones (udnkit's pod
// controller writes its switch and ports), from MultiNetworkPolicy,
// Namespace and Pod objects; the pods' namespaces hold only their
// interface on the Secondary network: a NetworkPolicy and a
// MultiNetworkPolicy whose policy-for names another NAD leave it alone; a
// default-deny MultiNetworkPolicy whose policy-for names the network's NAD
// drops traffic to the server, and allow rules by pod label and by ipBlock
// admit the client only; removing it restores traffic. Each check has a
// mutation of a row udnkit wrote that must break it.
func TestMultiNetworkPolicy(t *testing.T) {
	r := newPolicyRun(t, needCluster(t), newLayer2Network(t, udnv1.NetworkRoleSecondary, "tenant-mnp", "side", 15, "10.171.0.0/16", "fd00:171::/64"))
	server, client, other := r.server, r.client, r.other
	in, nad := networkingv1.PolicyTypeIngress, r.net.key()

	t.Run("without a policy every pod reaches every other (ICMP and TCP)", func(t *testing.T) {
		r.check(t, [][2]*pod{{client, server}, {other, server}, {server, client}}, nil)
	})
	t.Run("a NetworkPolicy, and a MultiNetworkPolicy for another NAD, leave the Secondary network alone", func(t *testing.T) {
		r.apply(t, r.netpol("deny-in", in), multi(t, r.netpol("deny-elsewhere", in), r.net.namespace+"/elsewhere"))
		r.check(t, [][2]*pod{{client, server}, {other, server}}, nil)
	})
	t.Run("a default-deny MultiNetworkPolicy drops new connections to the pods it selects", func(t *testing.T) {
		r.apply(t, multi(t, r.netpol("deny-in", in), r.net.name))
		// Unlike on a Primary network, replies to the server's own
		// connections are dropped too: the switch has no allow-related ACL
		// (upstream writes the cluster port group's hairpin ACLs only for
		// NetworkPolicies, not MultiNetworkPolicies), so ovn-northd sends
		// none of its traffic through conntrack and the drop ACL sees
		// every packet to the server. That is not checked here.
		r.check(t, nil, [][2]*pod{{client, server}, {other, server}})
		r.withoutDrop(t, true)
	})
	t.Run("an allow rule by pod label admits the labelled client and not the other", func(t *testing.T) {
		r.apply(t, multi(t, r.netpol("allow-client", in, labelPeer(client)), nad))
		r.check(t, [][2]*pod{{client, server}}, [][2]*pod{{other, server}})
		r.withoutSelectorSets(t)
	})
	t.Run("an allow rule by ipBlock admits the client's /32 and /128 and not the other", func(t *testing.T) {
		r.apply(t, multi(t, r.netpol("allow-block", in, hostBlocks(client)), nad))
		r.check(t, [][2]*pod{{client, server}}, [][2]*pod{{other, server}})
		r.withoutPolicyACLs(t, "allow-block", client)
	})
	t.Run("removing the MultiNetworkPolicy restores traffic", func(t *testing.T) {
		r.apply(t)
		r.check(t, [][2]*pod{{client, server}, {other, server}}, nil)
	})
	t.Run("removing the pods from the API state deletes their Secondary ports in every zone", func(t *testing.T) {
		removePods(t, r.c, server, client, other)
	})
}
