package datapath_test

import (
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	netpolrows "github.com/udnkit/udnkit/dataplane/topology/networkpolicy"
)

// TestNetworkPolicyLayer3 sends packets through the ACLs udnkit's
// NetworkPolicy controller writes for a Primary Layer3 UDN (IPv4)
// programmed in three zones by udnkit's Layer3 reconciler, from
// NetworkPolicy, Namespace and Pod objects, with the server on node-b's
// switch, a client labelled role=client on node-a's and another pod on
// node-c's, so every packet crosses the cluster routers and the transit
// switch: the checks every Primary network shares (primaryScenario) and,
// between them, a rule whose only port is a named one opens TCP to every
// port of the server, as upstream writes it (namedPort). The pods' ports
// are udnkit's (layer3Pods).
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
	r.primaryScenario(t, policyCheck{
		"a named port opens the rule's whole protocol, as upstream's addPortPolicy does (TCP to any port, not ICMP)", r.namedPort})
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
	defer r.portRule(t, "allow-http", intstr.FromString("http"))()
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
