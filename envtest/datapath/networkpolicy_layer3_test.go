package datapath_test

import (
	"net/netip"
	"strconv"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	netpolrows "github.com/udnkit/udnkit/dataplane/topology/networkpolicy"
)

// TestNetworkPolicyLayer3 sends packets through the ACLs udnkit's
// NetworkPolicy controller writes for a Primary Layer3 UDN (IPv4)
// programmed in three zones by udnkit's Layer3 reconciler, from
// NetworkPolicy, Namespace and Pod objects, with the server on node-b's
// switch, a client labelled role=client on node-a's and another pod on
// node-c's, so every packet crosses the cluster routers and the transit
// switch: without a policy both reach the server; an ingress default-deny
// policy on the server drops both while the server still opens its own
// connections, and an egress one on the client stops that client's new
// connections only; an allow rule by pod label admits the labelled client and
// not the other; a rule whose only port is a named one opens TCP to every
// port of the server, as upstream writes it; removing the policies
// restores traffic. Each check has a
// mutation of a row udnkit wrote in the server's zone that must break it,
// after which the reconciler's next pass heals it. The pods' ports are
// udnkit's (layer3Pods), deleted in every zone once the pods are gone.
func TestNetworkPolicyLayer3(t *testing.T) {
	c := needCluster(t)
	net := newLayer3Network(t, "tenant-pol3", "pol3", 17, "10.172.0.0/16")
	nodes := []l3node{
		{c.Node("node-a"), 2, netip.MustParsePrefix("10.172.2.0/24")},
		{c.Node("node-b"), 3, netip.MustParsePrefix("10.172.3.0/24")},
		{c.Node("node-c"), 4, netip.MustParsePrefix("10.172.4.0/24")},
	}
	r := startPolicyRun(t, c, layer3Pods(nodes),
		&pod{net: net, name: "server", node: c.Node("node-b"), index: 5, labels: map[string]string{"app": "server"}},
		&pod{net: net, name: "client", node: c.Node("node-a"), index: 5, labels: map[string]string{"role": "client"}},
		&pod{net: net, name: "other", node: c.Node("node-c"), index: 5, labels: map[string]string{"role": "other"}})
	server, client, other := r.server, r.client, r.other
	in := networkingv1.PolicyTypeIngress

	t.Run("without a policy pods on other nodes reach the server (ICMP and TCP)", func(t *testing.T) {
		r.check(t, [][2]*pod{{client, server}, {other, server}, {server, client}}, nil)
	})
	t.Run("an ingress default-deny policy drops new connections from other nodes to the pod it selects", func(t *testing.T) {
		r.apply(t, r.netpol("deny-in", in))
		r.check(t, [][2]*pod{{server, client}, {other, client}}, [][2]*pod{{client, server}, {other, server}})
		r.withoutDrop(t, true)
	})
	t.Run("an egress default-deny policy drops new connections from the pod it selects to other nodes", func(t *testing.T) {
		r.apply(t, r.netpol("deny-out", networkingv1.PolicyTypeEgress))
		r.check(t, [][2]*pod{{server, client}, {other, server}}, [][2]*pod{{client, server}, {client, other}})
		r.withoutDrop(t, false)
	})
	t.Run("an allow rule by pod label admits the labelled client and not the other", func(t *testing.T) {
		r.apply(t, r.netpol("allow-client", in, labelPeer(client)))
		r.check(t, [][2]*pod{{client, server}}, [][2]*pod{{other, server}})
		r.withoutSelectorSets(t)
	})
	t.Run("a named port opens the rule's whole protocol, as upstream's addPortPolicy does (TCP to any port, not ICMP)", func(t *testing.T) {
		r.namedPort(t)
	})
	t.Run("removing the policies restores traffic", func(t *testing.T) {
		r.apply(t)
		r.check(t, [][2]*pod{{client, server}, {other, server}}, nil)
	})
	t.Run("removing the pods from the API state deletes their ports in every zone", func(t *testing.T) {
		removePods(t, c, server, client, other)
	})
}

// namedPort checks a rule whose only port is the named port "http":
// upstream's addPortPolicy reads Port.IntVal, 0 for a name, so the rule
// allows the protocol on every port (it resolves named ports only for
// AdminNetworkPolicies), and udnkit's builder does the same. Mutation: the
// rule's ACL narrowed to the server's port 8080 in the server's zone, as a
// builder resolving the name would write it, closes the other port until
// the reconciler's next pass.
func (r *policyRun) namedPort(t *testing.T) {
	t.Helper()
	server, client := r.server, r.client
	stop, err := server.datapath.ServeTCP(tcpPort + 1)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	np := r.netpol("allow-http", networkingv1.PolicyTypeIngress, nil)
	http := intstr.FromString("http")
	np.Spec.Ingress[0].Ports = []networkingv1.NetworkPolicyPort{{Port: &http}}
	r.apply(t, np)
	otherPort := func(open bool) {
		t.Helper()
		err := client.datapath.TCPEcho(server.ip(false), tcpPort+1, reachTimeout)
		if open && err != nil {
			t.Fatalf("the named-port rule did not open TCP port %d: %v", tcpPort+1, err)
		}
		if !open && err == nil {
			t.Fatalf("the client completed a TCP echo with port %d, which the narrowed ACL does not open", tcpPort+1)
		}
	}
	if err := client.datapath.TCPEcho(server.ip(false), tcpPort, reachTimeout); err != nil {
		t.Fatal(err)
	}
	otherPort(true)
	unreachable(t, client, server.ip(false))

	nb := server.node.NB()
	pg := netpolrows.PolicyPortGroup(r.net.ovnName(), r.net.namespace, "allow-http")
	acls := strings.Fields(nb.Must(t, "--bare", "--columns=acls", "list", "Port_Group", pg))
	if len(acls) != 1 {
		t.Fatalf("port group %s has ACLs %v, want the rule's one", pg, acls)
	}
	match := nb.Must(t, "--bare", "--columns=match", "list", "ACL", acls[0])
	narrowed := strings.Replace(match, " && tcp && ", " && tcp && tcp.dst=="+strconv.Itoa(tcpPort)+" && ", 1)
	if narrowed == match {
		t.Fatalf("the rule's ACL match %q is not the whole of TCP", match)
	}
	nb.Must(t, "set", "ACL", acls[0], "match="+strconv.Quote(narrowed))
	settle(t, r.c)
	otherPort(false)
	r.program(t)
	otherPort(true)
}
