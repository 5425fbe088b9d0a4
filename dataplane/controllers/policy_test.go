package controllers

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/dataplane/topology/policy"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/ovnk"
)

// The policy world: node-a with its subnets of the default network and of
// the Layer3 network, its host addresses and its gateway config; a
// dual-stack primary Layer2 network ns1_tenant-blue, whose switch and
// management port the Layer2 controller writes; a dual-stack primary
// Layer3 network ns2_tenant-green, whose node switch and management port
// the Layer3 controller writes (the policy defaults wait for udnkit's
// topology of a network: where OVN-Kubernetes programs it, it writes them).
const (
	greenNet    = "ns2_tenant-green"
	greenSwitch = "ns2_tenant.green_node-a"
	greenMgmt   = "k8s-ns2_tenant.green_node-a"
	greenRouter = "ns2_tenant.green_ovn_cluster_router"
	greenConfig = `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns2_tenant-green","netAttachDefName":"ns2/tenant-green",
 "topology":"layer3","role":"primary","subnets":"10.200.0.0/16/24,2001:db8:200::/48/64"}`
	blueNet    = "ns1_tenant-blue"
	blueSwitch = "ns1_tenant.blue_ovn_layer2_switch"
	blueRouter = "ns1_tenant.blue_transit_router"
)

// policyStack starts the dataplane with EgressIP on or off in a
// dual-stack cluster and creates the world; it returns the Layer3 NAD.
func policyStack(t *testing.T, egressIP bool) (*stack, *nadv1.NetworkAttachmentDefinition) {
	return policyStackWith(t, func(o *Options) { o.Policy.EgressIP = egressIP })
}

// policyStackWith is policyStack with Setup's options changed by opt.
func policyStackWith(t *testing.T, opt func(*Options)) (*stack, *nadv1.NetworkAttachmentDefinition) {
	s := newStackWith(t, envtest.Options{ServiceClusterIPRange: "10.0.0.0/24,fd00:10:96::/112"})
	o := s.opts()
	o.Cluster = ovnk.DefaultClusterConfig()
	o.Cluster.ClusterSubnets = []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16"), netip.MustParsePrefix("fd00:10:244::/48")}
	opt(&o)
	if _, err := Setup(s.ctx, s.mgr, o); err != nil {
		t.Fatal(err)
	}
	s.start()
	s.create(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Annotations: map[string]string{
		ovnk.AnnotationNodeID: "2", ovnk.AnnotationLayer2TopologyVersion: "2.0", ovnk.AnnotationNodeChassisID: "chassis-node-a",
		ovnk.AnnotationL3GatewayConfig: strings.ReplaceAll(node1Gateway, "node1", "node-a"),
		ovnk.AnnotationNodeSubnets: `{"default":["10.244.2.0/24","fd00:10:244:3::/64"],` +
			`"ns2_tenant-green":["10.200.1.0/24","2001:db8:200:2::/64"]}`,
		ovnk.AnnotationHostCIDRs: `["192.0.2.2/24","2001:db8::2/64"]`,
	}}}, namespace("ns1"), namespace("ns2"))
	s.createNAD(&nadv1.NetworkAttachmentDefinition{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "tenant-blue", Labels: map[string]string{ovnk.LabelUserDefinedNetwork: ""},
			Annotations: map[string]string{ovnk.AnnotationNetworkID: "1", ovnk.AnnotationTunnelKeys: "[16711685,16715780]"}},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: l2Config},
	})
	nad := &nadv1.NetworkAttachmentDefinition{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns2", Name: "tenant-green", Labels: map[string]string{ovnk.LabelUserDefinedNetwork: ""},
			Annotations: map[string]string{ovnk.AnnotationNetworkID: "2"}},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: greenConfig},
	}
	s.createNAD(nad)
	return s, nad
}

// column lists one column of a table's rows (bare, sorted).
func (s *stack) column(table, column string, conds ...string) []string {
	s.t.Helper()
	args := append([]string{"--bare", "--columns=" + column, "find", table}, conds...)
	var out []string
	for _, l := range strings.Split(s.nbctl(args...), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}

// The defaults of two networks and of the zone with EgressIP on, against
// a real apiserver and ovsdb-server: every row upstream writes for them
// appears (the Layer2 network's with the management port the Layer2
// controller writes); a deleted port group and deleted switch ACLs come
// back; the Layer3 network's rows go with its NAD, the Layer2 network's
// and the zone's stay.
func TestPolicyDefaultsFromAPIState(t *testing.T) {
	s, nad := policyStack(t, true)
	groups := func(nets ...string) []string {
		out := []string{policy.IsolationPortGroup()}
		for _, n := range nets {
			out = append(out, policy.ClusterPortGroup(n), policy.ClusterRouterPortGroup(n))
		}
		slices.Sort(out)
		return out
	}
	// mine is a router's EgressIP policies of this package: Pod-To-Join,
	// Pod-To-Node and Pod-To-CDN-Svc of each family.
	mine := func(router string, join4, join6 string) bool {
		if len(s.column("Logical_Router", "name", "name="+router)) == 0 {
			return false
		}
		pols := normalized(s.nbctl("lr-policy-list", router))
		return strings.Count(pols, "\n102 (") == 4 && strings.Contains(pols, "102 "+join4+" allow") && strings.Contains(pols, "102 "+join6+" allow")
	}
	greenJoin4, greenJoin6 := "ip4.src == 10.200.0.0/16 && ip4.dst == 100.64.0.0/16", "ip6.src == 2001:db8:200::/48 && ip6.dst == fd98::/64"
	blueJoin4, blueJoin6 := "ip4.src == 203.203.0.0/24 && ip4.dst == 100.64.0.0/16", "ip6.src == 2010:100:200::/60 && ip6.dst == fd98::/64"
	all := func() bool {
		return slices.Equal(s.column("Port_Group", "name"), groups(blueNet, greenNet)) &&
			len(s.column("ACL", "_uuid")) == 13 && len(s.column("QoS", "_uuid")) == 4 && len(s.column("Address_Set", "name")) == 10 &&
			mine(greenRouter, greenJoin4, greenJoin6) && mine(blueRouter, blueJoin4, blueJoin6)
	}
	s.eventually("both networks' and the zone's defaults", all)
	for router, subnets := range map[string][]string{greenRouter: {"10.200.0.0/16", "2001:db8:200::/48"}, blueRouter: {"203.203.0.0/24", "2010:100:200::/60"}} {
		got := normalized(s.nbctl("lr-policy-list", router))
		for _, want := range noReroutes(subnets...) {
			if !strings.Contains(got, want) {
				t.Errorf("%s's policies lack EgressIP's %q:\n%s", router, want, got)
			}
		}
	}
	if got := s.catchAllRoutes(greenRouter, "10.200.0.0/16", "2001:db8:200::/48"); len(got) != 2 {
		t.Errorf("%s's EgressIP catch-all routes %v, want one per cluster subnet", greenRouter, got)
	}

	for net, port := range map[string]string{greenNet: greenMgmt, blueNet: "k8s-ns1_tenant.blue_node-a"} {
		got := s.column("Port_Group", "ports", "name="+policy.ClusterPortGroup(net))
		if len(got) != 1 || s.nbctl("get", "Logical_Switch_Port", port, "_uuid") != got[0] {
			t.Errorf("%s's cluster port group ports %v, want its management port %s", net, got, port)
		}
	}
	for sw, want := range map[string]string{
		greenSwitch: "to-lport 1001 (ip4.src==10.200.1.2) allow-related\nto-lport 1001 (ip6.src==2001:db8:200:2::2) allow-related",
		blueSwitch:  "to-lport 1001 (ip4.src==203.203.0.2) allow-related\nto-lport 1001 (ip6.src==2010:100:200::2) allow-related",
	} {
		if got := normalized(s.nbctl("acl-list", sw)); got != want {
			t.Errorf("%s ACLs:\n%s\nwant\n%s", sw, got, want)
		}
		if got := normalized(s.nbctl("qos-list", sw)); strings.Count(got, "mark=42") != 2 {
			t.Errorf("%s QoS rules:\n%s", sw, got)
		}
	}
	if got := s.column("ACL", "match", "external_ids:k8s.ovn.org/name=AllowHostPrimaryUDN"); len(got) != 1 ||
		!strings.HasSuffix(got[0], "(ip4.src==10.244.2.2 || ip6.src==fd00:10:244:3::2)") {
		t.Errorf("isolation allow-from-host ACL match %v", got)
	}
	if got := s.column("Meter", "name", "name=acl-logging"); len(got) != 1 {
		t.Errorf("acl-logging meter: %v", got)
	}
	if got := s.column("Address_Set", "addresses", "external_ids:k8s.ovn.org/name=node-ips"); !slices.Equal(got, []string{"192.0.2.2", "2001:db8::2"}) {
		t.Errorf("node-ips addresses %v", got)
	}
	var api corev1.Service
	if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: "default", Name: "kubernetes"}, &api); err != nil {
		t.Fatal(err)
	}
	if got := s.column("Address_Set", "addresses", "external_ids:k8s.ovn.org/name=udn-enabled-svc-cluster-ips"); !slices.Contains(got, api.Spec.ClusterIP) {
		t.Errorf("udn-enabled-svc addresses %v, want the API service's %s", got, api.Spec.ClusterIP)
	}

	// Foreign edits heal: a cluster port group deleted, a switch's ACLs removed.
	s.nbctl("pg-del", policy.ClusterPortGroup(greenNet))
	s.nbctl("acl-del", blueSwitch)
	s.eventually("the deleted port group and ACLs back", all)

	if err := s.c.Delete(s.ctx, nad); err != nil {
		t.Fatal(err)
	}
	// (the Layer3 topology's node switch goes with the network, its ACLs with it)
	s.eventually("the Layer3 network's rows gone, the Layer2 network's and the zone's kept", func() bool {
		return slices.Equal(s.column("Port_Group", "name"), groups(blueNet)) &&
			len(s.column("ACL", "_uuid")) == 9 && len(s.column("QoS", "_uuid")) == 2 && len(s.column("Address_Set", "name")) == 8 &&
			len(s.column("Logical_Switch", "name", "name="+greenSwitch)) == 0 && mine(blueRouter, blueJoin4, blueJoin6)
	})
	// The cluster router three pieces shared (topology, subnet policies,
	// EgressIP defaults) goes with the last of them, whichever created it.
	s.eventually("the Layer3 cluster router gone", func() bool {
		return len(s.column("Logical_Router", "name", "name="+greenRouter)) == 0
	})
}

// With EgressIP off (the default) the network gets its network-policy
// defaults and no EgressIP row, as upstream (whose controllers write them
// only with --enable-egress-ip: ensureRouterPoliciesForNetwork, the
// EgressIP catch-all of CreateDefaultRouteToExternal): no address set, QoS
// rule or no-reroute policy of EgressIP, no priority-102 policy at all on
// either network's router, and no catch-all route on the Layer3 cluster
// router, whose topology is otherwise there.
func TestPolicyDefaultsWithoutEgressIP(t *testing.T) {
	s, _ := policyStack(t, false)
	s.eventually("the network's port groups and ACLs", func() bool {
		return len(s.column("Port_Group", "name")) == 5 && len(s.column("ACL", "_uuid")) == 13
	})
	s.eventually("the Layer3 topology's host-subnet route", func() bool {
		return len(s.catchAllRoutes(greenRouter, "10.200.1.0/24")) == 1
	})
	for _, router := range []string{greenRouter, blueRouter} {
		if got := normalized(s.nbctl("lr-policy-list", router)); strings.Contains(got, "\n102 ") {
			t.Errorf("%s has priority-102 policies without EgressIP:\n%s", router, got)
		}
	}
	if got := s.catchAllRoutes(greenRouter, "10.200.0.0/16", "2001:db8:200::/48"); len(got) != 0 {
		t.Errorf("%s's EgressIP catch-all routes without EgressIP: %v", greenRouter, got)
	}
	if got := s.column("Address_Set", "name"); len(got) != 0 {
		t.Errorf("address sets without EgressIP: %v", got)
	}
	if got := s.column("QoS", "_uuid"); len(got) != 0 {
		t.Errorf("QoS rules without EgressIP: %v", got)
	}
	for _, name := range []string{policy.NoReroutePodToJoin, policy.NoReroutePodToNode, policy.NoReroutePodToCDNSvc} {
		if got := s.column("Logical_Router_Policy", "match", "external_ids:k8s.ovn.org/name="+name); len(got) != 0 {
			t.Errorf("%s policies without EgressIP: %v", name, got)
		}
	}
}

// noReroutes are the lr-policy-list lines of the Layer2 and Layer3
// topologies' EgressIP policies (Pod-To-Pod and reply-traffic) for a
// network of subnets.
func noReroutes(subnets ...string) []string {
	out := []string{"102 pkt.mark == 42 allow"}
	for _, sub := range subnets {
		f := "ip4"
		if strings.Contains(sub, ":") {
			f = "ip6"
		}
		out = append(out, "102 "+f+".src == "+sub+" && "+f+".dst == "+sub+" allow")
	}
	slices.Sort(out)
	return out
}

// catchAllRoutes are a router's src-ip routes of the subnets, normalized.
func (s *stack) catchAllRoutes(router string, subnets ...string) []string {
	var out []string
	for _, l := range strings.Split(normalized(s.nbctl("lr-route-list", router)), "\n") {
		for _, sub := range subnets {
			if strings.HasPrefix(l, sub+" ") && strings.HasSuffix(l, " src-ip") {
				out = append(out, l)
			}
		}
	}
	return out
}
