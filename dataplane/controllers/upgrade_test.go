package controllers

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/testobj/ovnkrows"
	"github.com/udnkit/udnkit/ovnk"
)

// The old Layer2 topology's rows in node1's zone as OVN-Kubernetes writes
// them (gateway.go gatewayInit without a transit router, addExternalSwitch,
// updateGWRouterNAT, CreateDummyGWMacBindings; base_network_controller.go
// syncNodeManagementPort), some of them stale against node1's
// l3-gateway-config (no IPv6 address on rtoe-, a wrong static MAC, an
// IPv4-only management port), and rows that are not the old topology's:
// an EgressIP-like SNAT on the GR, a pod's port, another node's external
// switch.
const (
	oldGR     = "GR_ns1_tenant.blue_node1"
	oldRTOE   = "rtoe-" + oldGR
	oldEXT    = "ext_ns1_tenant.blue_node1"
	oldSwitch = "ns1_tenant.blue_ovn_layer2_switch"
	oldMgmt   = "k8s-ns1_tenant.blue_node1"
	oldLN     = "breth0_ns1_tenant.blue_node1"
	oldETOR   = "etor-" + oldGR
	oldRTOS   = "rtos-" + oldSwitch
	otherEXT  = "ext_ns1_tenant.blue_node2"
)

func writeOldLayer2(t *testing.T, s *stack) {
	t.Helper()
	nb := ovnkrows.NB(s.db.NB.Address())
	net := ovnkrows.Network{Name: "ns1_tenant-blue", Topology: "layer2"}
	if err := ovnkrows.WriteGateway(nb, ovnkrows.Gateway{Network: net, Node: "node1", Chassis: chassisOf("node1"),
		MAC: "0a:58:c0:00:02:02", IPs: []netip.Prefix{netip.MustParsePrefix("192.0.2.2/24")},
		NextHops:      []netip.Addr{netip.MustParseAddr("192.0.2.1")},
		MasqueradeIPs: []netip.Addr{netip.MustParseAddr("169.254.0.11"), netip.MustParseAddr("fd69::b")},
		SNAT:          []netip.Prefix{netip.MustParsePrefix("203.203.0.0/24"), netip.MustParsePrefix("2010:100:200::/60")},
		JoinIPs:       []netip.Addr{netip.MustParseAddr("100.65.0.2")}}); err != nil {
		t.Fatal(err)
	}
	ids := net.IDs()
	child := func(table, parentTable, parent, column string, cols ...string) {
		nb.Must(t, append(append([]string{"--", "--id=@c", "create", table}, append(cols, ids...)...),
			"--", "add", parentTable, parent, column, "@c")...)
	}
	child("Logical_Router_Static_Route", "Logical_Router", oldGR, "static_routes",
		`ip_prefix="169.254.0.0/17"`, `nexthop="169.254.0.4"`, "output_port="+oldRTOE)
	child("NAT", "Logical_Router", oldGR, "nat", "type=snat", `logical_ip="203.203.0.0/24"`, `external_ip="169.254.0.12"`,
		"logical_port="+oldRTOS)
	child("NAT", "Logical_Router", oldGR, "nat", "type=snat", `logical_ip="203.203.0.5"`, `external_ip="172.18.0.100"`)
	nb.Must(t, "create", "Static_MAC_Binding", "logical_port="+oldRTOE, `ip="169.254.0.4"`, `mac="0a:58:a9:fe:00:99"`,
		"override_dynamic_mac=true")
	nb.Must(t, append([]string{"ls-add", oldSwitch, "--", "set", "Logical_Switch", oldSwitch, "other_config:requested-tnl-key=16711685"}, ids...)...)
	nb.Must(t, append([]string{"ls-add", otherEXT, "--", "set", "Logical_Switch", otherEXT}, ids...)...)
	nb.Must(t, append([]string{"lrp-add", oldGR, oldRTOS, "0a:58:64:41:00:02", "100.65.0.2/16", "203.203.0.1/24",
		"--", "set", "Logical_Router_Port", oldRTOS}, ids...)...)
	nb.Must(t, append([]string{"lsp-add", oldSwitch, "stor-" + oldSwitch, "--", "lsp-set-type", "stor-" + oldSwitch, "router",
		"--", "lsp-set-addresses", "stor-" + oldSwitch, "router", "--", "lsp-set-options", "stor-" + oldSwitch, "router-port=" + oldRTOS,
		"--", "set", "Logical_Switch_Port", "stor-" + oldSwitch}, ids...)...)
	if _, err := ovnkrows.WriteManagementPort(nb, net.Name, "node1", netip.MustParseAddr("203.203.0.2")); err != nil {
		t.Fatal(err)
	}
	if err := ovnkrows.WritePodPort(nb, ovnkrows.PodPort{Network: net, NAD: "ns1/tenant-blue", Switch: oldSwitch,
		Namespace: "ns1", Pod: "pod-b", Chassis: chassisOf("node2"), Addresses: "0a:58:cb:cb:00:07 203.203.0.7", TunnelID: 7,
		Remote: true}); err != nil {
		t.Fatal(err)
	}
}

// startUpgrade starts the dataplane for node1's zone (adopt:
// --adopt-legacy-layer2) over the old rows, with node1 drained and not yet
// on the transit-router topology and node2 moved.
func startUpgrade(t *testing.T, s *stack, adopt bool) {
	t.Helper()
	o := s.dualStackOpts("node1")
	o.Layer2.AdoptLegacy = adopt
	if _, err := Setup(s.ctx, s.mgr, o); err != nil {
		t.Fatal(err)
	}
	s.start()
	s.create(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1", Annotations: map[string]string{ovnk.AnnotationNodeID: "2",
		ovnk.AnnotationL3GatewayConfig: node1Gateway}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node2", Annotations: map[string]string{ovnk.AnnotationNodeID: "3",
			ovnk.AnnotationLayer2TopologyVersion: ovnk.Layer2TopologyVersionTransitRouter}}},
		namespace("ns1"))
	s.createNAD(&nadv1.NetworkAttachmentDefinition{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "tenant-blue",
			Labels:      map[string]string{ovnk.LabelUserDefinedNetwork: ""},
			Annotations: map[string]string{ovnk.AnnotationNetworkID: "1", ovnk.AnnotationTunnelKeys: "[16711685,16715780]"}},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: l2Config},
	})
}

// uuid is the UUID of the one row of table matching conds ("": none).
func (s *stack) uuid(table string, conds ...string) string {
	s.t.Helper()
	out := s.nbctl(append([]string{"--bare", "--columns=_uuid", "find", table}, conds...)...)
	if strings.Contains(out, "\n") {
		s.t.Fatalf("more than one %s row matches %v:\n%s", table, conds, out)
	}
	return out
}

// With --adopt-legacy-layer2 the drained node1's zone moves to the
// transit-router topology over OVN-Kubernetes' old rows: udnkit adopts the
// gateway rows it now writes (the same rows, by UUID, marked as its own)
// and converges them to node1's l3-gateway-config; it removes the old
// GR-to-switch port, its switch port and the management-port SNAT, which
// moves to the transit router; rows that are not the old topology's stay
// byte for byte.
func TestLayer2UpgradeAdoptsTheGatewayRows(t *testing.T) {
	s := newStack(t)
	writeOldLayer2(t, s)
	adopted := map[string][]string{ // what -> table, conditions
		"the GR":                 {"Logical_Router", "name=" + oldGR},
		"the rtoe- port":         {"Logical_Router_Port", "name=" + oldRTOE},
		"the external switch":    {"Logical_Switch", "name=" + oldEXT},
		"the etor- port":         {"Logical_Switch_Port", "name=" + oldETOR},
		"the localnet port":      {"Logical_Switch_Port", "name=" + oldLN},
		"the management port":    {"Logical_Switch_Port", "name=" + oldMgmt},
		"the layer2 switch":      {"Logical_Switch", "name=" + oldSwitch},
		"the join SNAT":          {"NAT", `logical_ip="100.65.0.2"`},
		"the subnet SNAT":        {"NAT", `logical_ip="203.203.0.0/24"`, `external_ip="169.254.0.11"`},
		"the default route":      {"Logical_Router_Static_Route", `ip_prefix="0.0.0.0/0"`},
		"the masquerade route":   {"Logical_Router_Static_Route", `ip_prefix="169.254.0.0/17"`},
		"the static MAC binding": {"Static_MAC_Binding", `ip="169.254.0.4"`},
	}
	before := map[string]string{}
	for what, q := range adopted {
		if before[what] = s.uuid(q[0], q[1:]...); before[what] == "" {
			t.Fatalf("fixture: no %s", what)
		}
	}
	foreign := map[string]string{}
	for _, q := range [][]string{{"NAT", `external_ip="172.18.0.100"`}, {"Logical_Switch_Port", "name=" + ovnk.PodPortName("ns1/tenant-blue", "ns1", "pod-b")},
		{"Logical_Switch", "name=" + otherEXT}} {
		u := s.uuid(q[0], q[1:]...)
		if u == "" {
			t.Fatalf("fixture: no %v", q)
		}
		foreign[q[0]+" "+u] = s.nbctl("list", q[0], u)
	}

	startUpgrade(t, s, true)
	s.eventually("node1 moved: the old GR-to-switch port gone, the rtotr- port there", func() bool {
		return s.uuid("Logical_Router_Port", "name=rtotr-"+oldGR) != "" && s.uuid("Logical_Router_Port", "name="+oldRTOS) == "" &&
			s.uuid("Logical_Router", "name="+oldGR, `external_ids:"`+ovnk.ExternalIDPiece+`"="transit-router"`) != ""
	})
	for what, q := range adopted {
		u := s.uuid(q[0], q[1:]...)
		if u != before[what] {
			t.Errorf("%s: now row %q, want OVN-Kubernetes' %s adopted", what, u, before[what])
			continue
		}
		if q[0] == "Static_MAC_Binding" {
			continue // no external_ids: it follows its port
		}
		if piece := s.nbctl("get", q[0], u, "external_ids:"+ovnk.ExternalIDPiece); piece == "" {
			t.Errorf("%s (%s) is not marked udnkit's", what, u)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "Logical_Router", oldGR, "external_ids:physical_ips"}, `"192.0.2.2,2001:db8::2,169.254.0.11,fd69::b"`},
		{[]string{"get", "Logical_Router_Port", oldRTOE, "networks"}, `["169.254.0.11/32", "192.0.2.2/24", "2001:db8::2/64", "fd69::b/128"]`},
		{[]string{"get", "Logical_Switch_Port", oldMgmt, "addresses"}, `["0a:58:cb:cb:00:02 203.203.0.2 2010:100:200::2"]`},
		{[]string{"get", "NAT", before["the subnet SNAT"], "match"}, `""`},
		{[]string{"get", "Static_MAC_Binding", before["the static MAC binding"], "mac"}, `"0a:58:a9:fe:00:04"`},
	} {
		if got := s.nbctl(c.args...); got != c.want {
			t.Errorf("%v = %s, want %s", c.args, got, c.want)
		}
	}
	routes := normalized(s.nbctl("lr-route-list", oldGR))
	for _, want := range []string{"::/0 2001:db8::1 dst-ip " + oldRTOE, "fd69::/112 fd69::4 dst-ip " + oldRTOE} {
		if !strings.Contains(routes, want) {
			t.Errorf("GR routes lack %q:\n%s", want, routes)
		}
	}
	if got := s.nbctl("--bare", "--columns=name", "find", "Logical_Switch_Port", "name=stor-"+oldSwitch); got != "" {
		t.Errorf("the old GR's switch port survived")
	}
	if nats := s.nbctl("lr-nat-list", oldGR); strings.Contains(nats, "169.254.0.12") {
		t.Errorf("the old management-port SNAT stayed on the GR:\n%s", nats)
	}
	for k, want := range foreign {
		f := strings.SplitN(k, " ", 2)
		if got := s.nbctl("list", f[0], f[1]); got != want {
			t.Errorf("a row that is not the old topology's changed:\nbefore:\n%s\nafter:\n%s", want, got)
		}
	}
	if nats := s.nbctl("lr-nat-list", oldGR); !strings.Contains(nats, "172.18.0.100") {
		t.Errorf("the EgressIP-like SNAT left the GR:\n%s", nats)
	}
}

// Without --adopt-legacy-layer2 the zone keeps the old topology byte for
// byte and the network's owner says which row is OVN-Kubernetes'.
func TestLayer2UpgradeWithoutAdoptionRefuses(t *testing.T) {
	s := newStack(t)
	writeOldLayer2(t, s)
	dump := func() string {
		var out []string
		for _, table := range []string{"Logical_Router", "Logical_Router_Port", "Logical_Switch", "Logical_Switch_Port",
			"Logical_Router_Static_Route", "Logical_Router_Policy", "NAT", "Static_MAC_Binding"} {
			out = append(out, s.nbctl("--format=csv", "--data=bare", "list", table))
		}
		return strings.Join(out, "\n")
	}
	before := dump()
	startUpgrade(t, s, false)
	condition := func() *metav1.Condition {
		var udn udnv1.UserDefinedNetwork
		if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: "ns1", Name: "tenant-blue"}, &udn); err != nil {
			t.Fatal(err)
		}
		return meta.FindStatusCondition(udn.Status.Conditions, udnv1.ConditionDataplaneProgrammed)
	}
	s.eventually("the owner says OVN-Kubernetes programs the network", func() bool { return condition() != nil })
	if c := condition(); c.Reason != udnv1.ReasonOwnedByOVNKubernetes ||
		!strings.Contains(c.Message, `logical switch "`+oldSwitch+`" exists but is not owned by network "ns1_tenant-blue"`) {
		t.Errorf("DataplaneProgrammed = %s %q, want OwnedByOVNKubernetes naming the old layer2 switch", c.Reason, c.Message)
	}
	time.Sleep(time.Second)
	if after := dump(); after != before {
		t.Errorf("the zone's rows changed without --adopt-legacy-layer2:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
