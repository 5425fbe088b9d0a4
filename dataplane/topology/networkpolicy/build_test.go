package networkpolicy

import (
	"net/netip"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// Upstream files the expected values are read from.
const (
	upPolicy  = "pkg/ovn/base_network_controller_policy.go"
	upGress   = "pkg/ovn/gress_policy.go"
	upACL     = "pkg/libovsdb/util/acl.go"
	upAddrSet = "pkg/ovn/addresssetmanager/addressset_manager.go"
	upTypes   = "pkg/libovsdb/ops/db_object_types.go"
)

const (
	tNet  = "tenant-blue_blue"
	tCtrl = "tenant-blue_blue-network-controller"
	tNS   = "tenant-blue"
)

// The test's objects: a small builder per kind keeps each case short.
type npb struct{ np networkingv1.NetworkPolicy }

func makeNP(name string) *npb {
	return &npb{np: networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: tNS, Name: name}}}
}
func (b *npb) ns(ns string) *npb { b.np.Namespace = ns; return b }
func (b *npb) selecting(l map[string]string) *npb {
	b.np.Spec.PodSelector = metav1.LabelSelector{MatchLabels: l}
	return b
}
func (b *npb) types(ts ...networkingv1.PolicyType) *npb { b.np.Spec.PolicyTypes = ts; return b }
func (b *npb) ingress(r networkingv1.NetworkPolicyIngressRule) *npb {
	b.np.Spec.Ingress = append(b.np.Spec.Ingress, r)
	return b
}
func (b *npb) egress(r networkingv1.NetworkPolicyEgressRule) *npb {
	b.np.Spec.Egress = append(b.np.Spec.Egress, r)
	return b
}
func (b *npb) obj() networkingv1.NetworkPolicy { return b.np }

func tcp(port intstr.IntOrString) networkingv1.NetworkPolicyPort {
	p := corev1.ProtocolTCP
	return networkingv1.NetworkPolicyPort{Protocol: &p, Port: &port}
}

func pod(ns, name, port string, labels map[string]string, ips ...string) Pod {
	p := Pod{Namespace: ns, Name: name, Port: port, Labels: labels}
	for _, ip := range ips {
		p.IPs = append(p.IPs, netip.MustParseAddr(ip))
	}
	return p
}

func network(nps ...networkingv1.NetworkPolicy) Network {
	return Network{Name: tNet, Topology: base.TopologyLayer2, IPv4: true, IPv6: true, Policies: nps,
		Namespaces: []Namespace{{Name: tNS, Labels: map[string]string{"team": "blue"}}, {Name: "other", Labels: map[string]string{"team": "red"}}},
		Pods: []Pod{
			pod(tNS, "web1", "tenant.blue.blue_tenant-blue_web1", map[string]string{"app": "web"}, "10.100.0.5", "fd00:100::5"),
			pod(tNS, "db1", "tenant.blue.blue_tenant-blue_db1", map[string]string{"app": "db"}, "10.100.0.6", "fd00:100::6"),
			pod(tNS, "web2", "", map[string]string{"app": "web"}, "10.100.0.7", "fd00:100::7"), // another zone's
			pod("other", "web3", "", map[string]string{"app": "web"}, "10.100.0.8", "fd00:100::8"),
		}}
}

func mustBuild(t *testing.T, n Network) *rows.Desired {
	t.Helper()
	d, err := Build(n)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	return d
}

func group(t *testing.T, d *rows.Desired, name string) rows.PortGroup {
	t.Helper()
	for _, g := range d.PortGroups {
		if g.Row.Name == name {
			return g
		}
	}
	t.Fatalf("no port group %q", name)
	return rows.PortGroup{}
}

func aclByID(t *testing.T, g rows.PortGroup, id string) nbdb.ACL {
	t.Helper()
	for _, a := range g.ACLs {
		if a.ExternalIDs[ovnk.ExternalIDObjectID] == id {
			return a
		}
	}
	var ids []string
	for _, a := range g.ACLs {
		ids = append(ids, a.ExternalIDs[ovnk.ExternalIDObjectID])
	}
	t.Fatalf("port group %s: no ACL %q among %q", g.Row.Name, id, ids)
	return nbdb.ACL{}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func check(t *testing.T, what, got, want, upstream string) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %q, upstream writes %q (%s)", what, got, want, upstream)
	}
}

func TestDefaultDeny(t *testing.T) {
	d := mustBuild(t, network(makeNP("deny-all").types(networkingv1.PolicyTypeIngress).obj()))
	pgName := ovnk.HashForOVN(tCtrl + ":NetworkPolicy:tenant-blue:deny-all")
	pg := group(t, d, pgName)
	check(t, "policy port group k8s.ovn.org/name", pg.Row.ExternalIDs[ovnk.ExternalIDObjectName], "tenant-blue:deny-all", upPolicy+" getNetworkPolicyPortGroupDbIDs")
	check(t, "policy port group owner", pg.Row.ExternalIDs[ovnk.ExternalIDOwnerType], "NetworkPolicy", upTypes+" PortGroupNetworkPolicy")
	check(t, "policy port group ports", strings.Join(pg.Ports, ","), "tenant.blue.blue_tenant-blue_db1,tenant.blue.blue_tenant-blue_web1",
		upPolicy+" getNewLocalPolicyPorts (the zone's pods only)")
	if len(pg.ACLs) != 0 {
		t.Errorf("a policy without rules has %d ACLs, upstream none (%s buildNetworkPolicyACLs)", len(pg.ACLs), upPolicy)
	}
	in := group(t, d, ovnk.HashForOVN(tCtrl+":NetpolNamespace:tenant-blue:Ingress"))
	out := group(t, d, ovnk.HashForOVN(tCtrl+":NetpolNamespace:tenant-blue:Egress"))
	check(t, "ingress default-deny members", strings.Join(in.Ports, ","), strings.Join(pg.Ports, ","), upPolicy+" denyPGAddPorts (isIngress)")
	check(t, "egress default-deny members", strings.Join(out.Ports, ","), "", upPolicy+" denyPGAddPorts (an Ingress-only policy)")
	deny := aclByID(t, in, tCtrl+":NetpolNamespace:tenant-blue:Ingress:defaultDeny")
	check(t, "deny match", deny.Match, "outport == @"+in.Row.Name, upACL+" GetACLMatch")
	check(t, "deny action", string(deny.Action), "drop", upPolicy+" buildDenyACLs")
	check(t, "deny priority", itoa(deny.Priority), "1000", "pkg/types/const.go DefaultDenyPriority")
	check(t, "deny tier", itoa(deny.Tier), "2", "pkg/types/const.go DefaultACLTier")
	check(t, "deny name", deref(deny.Name), "NP:tenant-blue:Ingress", upACL+" GetACLName (ACLNetpolNamespace)")
	check(t, "deny direction", string(deny.Direction), "to-lport", upACL+" LportIngress")
	check(t, "deny meter", deref(deny.Meter), "acl-logging", upACL+" BuildACL (types.OvnACLLoggingMeter)")
	arp := aclByID(t, in, tCtrl+":NetpolNamespace:tenant-blue:Ingress:arpAllow")
	check(t, "arp match", arp.Match, "outport == @"+in.Row.Name+" && (arp || nd)", upPolicy+" arpAllowPolicyMatch")
	check(t, "arp action", string(arp.Action), "allow", upPolicy+" buildDenyACLs")
	check(t, "arp priority", itoa(arp.Priority), "1001", "pkg/types/const.go DefaultAllowPriority")
	edeny := aclByID(t, out, tCtrl+":NetpolNamespace:tenant-blue:Egress:defaultDeny")
	check(t, "egress deny match", edeny.Match, "inport == @"+out.Row.Name, upACL+" GetACLMatch")
	check(t, "egress deny direction", string(edeny.Direction), "from-lport", upACL+" LportEgressAfterLB")
	check(t, "egress deny apply-after-lb", edeny.Options["apply-after-lb"], "true", upACL+" BuildACL")
	check(t, "deny type id", edeny.ExternalIDs[ovnk.ExternalIDType], "defaultDeny", upTypes+" ACLNetpolNamespace")
	if len(d.AddressSets) != 0 {
		t.Errorf("a policy without peers has %d address sets", len(d.AddressSets))
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// setName is the name upstream gives a pod-selector address set of key and
// family (buildAddressSet of GetPodSelectorAddrSetDbIDs).
func setName(key, fam string) string {
	return ovnk.HashForOVN(tCtrl + ":PodSelector:" + key + ":" + fam)
}

func setOf(t *testing.T, d *rows.Desired, name string) nbdb.AddressSet {
	t.Helper()
	for _, a := range d.AddressSets {
		if a.Name == name {
			return a
		}
	}
	t.Fatalf("no address set %q", name)
	return nbdb.AddressSet{}
}

func TestAllowByPodLabel(t *testing.T) {
	np := makeNP("allow-web").selecting(map[string]string{"app": "db"}).types(networkingv1.PolicyTypeIngress).
		ingress(networkingv1.NetworkPolicyIngressRule{
			Ports: []networkingv1.NetworkPolicyPort{tcp(intstr.FromInt32(5432))},
			From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}},
		}).obj()
	d := mustBuild(t, network(np))
	key := "tenant-blue_LS{ML:{app: web,},}"
	v4, v6 := setOf(t, d, setName(key, "v4")), setOf(t, d, setName(key, "v6"))
	check(t, "v4 set name key", v4.ExternalIDs[ovnk.ExternalIDObjectName], key, upAddrSet+" getPodSelectorKey, shortLabelSelectorString")
	check(t, "v4 set family", v4.ExternalIDs[ovnk.ExternalIDIPFamily], "v4", "pkg/ovn/address_set/address_set.go buildAddressSet")
	check(t, "v4 set owner", v4.ExternalIDs[ovnk.ExternalIDOwnerType], "PodSelector", upTypes+" AddressSetPodSelector")
	// web1 and web2 (another zone's) in the policy's namespace; web3 is in another.
	check(t, "v4 set addresses", strings.Join(v4.Addresses, ","), "10.100.0.5,10.100.0.7", upAddrSet+" reconcileAddressSet (static namespace)")
	check(t, "v6 set addresses", strings.Join(v6.Addresses, ","), "fd00:100::5,fd00:100::7", upAddrSet+" reconcileAddressSet")
	pg := group(t, d, PolicyPortGroup(tNet, tNS, "allow-web"))
	check(t, "policy ports", strings.Join(pg.Ports, ","), "tenant.blue.blue_tenant-blue_db1", upPolicy+" addLocalPodHandler (podSelector)")
	a := aclByID(t, pg, tCtrl+":NetworkPolicy:tenant-blue:allow-web:Ingress:0:tcp:-1")
	check(t, "allow match", a.Match, "(ip4.src == {$"+v4.Name+"} || ip6.src == {$"+v6.Name+"}) && tcp && tcp.dst==5432 && outport == @"+pg.Row.Name,
		upGress+" buildLocalPodACLs, getL3MatchFromAddressSet; "+upACL+" getL4Match")
	check(t, "allow action", string(a.Action), "allow-related", upGress+" buildLocalPodACLs")
	check(t, "allow priority", itoa(a.Priority), "1001", "pkg/types/const.go DefaultAllowPriority")
	check(t, "allow name", deref(a.Name), "NP:tenant-blue:allow-web:Ingress:0", upACL+" GetACLName (ACLNetworkPolicy)")
	check(t, "allow gress-index", a.ExternalIDs[ovnk.ExternalIDGressIndex], "0", upGress+" getNetpolACLDbIDs")
	check(t, "allow ip-block-index", a.ExternalIDs[ovnk.ExternalIDIPBlockIndex], "-1", upGress+" emptyIdx")
	check(t, "allow protocol", a.ExternalIDs[ovnk.ExternalIDPortPolicyProtocol], "tcp", upGress+" getNetpolACLDbIDs")
	if a.Log || a.Severity != nil {
		t.Errorf("a namespace without acl-logging logs the ACL (%s getLogSeverity)", upACL)
	}
	in := group(t, d, DenyPortGroup(tNet, tNS, true))
	check(t, "ingress deny members", strings.Join(in.Ports, ","), "tenant.blue.blue_tenant-blue_db1", upPolicy+" denyPGAddPorts")
}

func TestAllowByNamespaceLabel(t *testing.T) {
	np := makeNP("from-team").types(networkingv1.PolicyTypeIngress).ingress(networkingv1.NetworkPolicyIngressRule{
		From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "red"}}}},
	}).obj()
	n := network(np)
	n.IPv6 = false
	d := mustBuild(t, n)
	key := "LS{ML:{team: red,},}_LS{}_LNM"
	v4 := setOf(t, d, setName(key, "v4"))
	check(t, "set key", v4.ExternalIDs[ovnk.ExternalIDObjectName], key, upAddrSet+" getPodSelectorKey (legacy netpol mode: no pod selector)")
	check(t, "set addresses", strings.Join(v4.Addresses, ","), "10.100.0.8", upAddrSet+" getSelectedNamespaces")
	if len(d.AddressSets) != 1 {
		t.Errorf("an IPv4 network has %d address sets, upstream only the v4 one (%s EnsureAddressSet)", len(d.AddressSets), upAddrSet)
	}
	pg := group(t, d, PolicyPortGroup(tNet, tNS, "from-team"))
	a := aclByID(t, pg, tCtrl+":NetworkPolicy:tenant-blue:from-team:Ingress:0:None:-1")
	check(t, "match", a.Match, "ip4.src == {$"+v4.Name+"} && outport == @"+pg.Row.Name, upGress+" buildLocalPodACLs (UnspecifiedL4Match)")
}

func TestIPBlockWithExcept(t *testing.T) {
	np := makeNP("cidr").types(networkingv1.PolicyTypeIngress).ingress(networkingv1.NetworkPolicyIngressRule{
		From: []networkingv1.NetworkPolicyPeer{
			{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8", Except: []string{"10.1.0.0/16", "10.2.0.0/16"}}},
			{IPBlock: &networkingv1.IPBlock{CIDR: "fd00::/64"}},
		},
	}).obj()
	d := mustBuild(t, network(np))
	pg := group(t, d, PolicyPortGroup(tNet, tNS, "cidr"))
	if len(pg.ACLs) != 1 {
		t.Fatalf("%d ACLs, upstream one ipBlock ACL (%s ipBlockCombinedIdx)", len(pg.ACLs), upGress)
	}
	a := aclByID(t, pg, tCtrl+":NetworkPolicy:tenant-blue:cidr:Ingress:0:None:-2")
	check(t, "ipBlock match", a.Match,
		"((ip4.src == 10.0.0.0/8 && ip4.src != {10.1.0.0/16, 10.2.0.0/16}) || ip6.src == fd00::/64) && outport == @"+pg.Row.Name,
		upGress+" getMatchFromIPBlock")
	if len(d.AddressSets) != 0 {
		t.Errorf("ipBlocks made %d address sets", len(d.AddressSets))
	}
}

func TestNamedPortAllowsTheProtocol(t *testing.T) {
	udp := corev1.ProtocolUDP
	dns := intstr.FromString("dns")
	np := makeNP("named").types(networkingv1.PolicyTypeIngress).ingress(networkingv1.NetworkPolicyIngressRule{
		Ports: []networkingv1.NetworkPolicyPort{tcp(intstr.FromString("http")), tcp(intstr.FromInt32(80)), tcp(intstr.FromInt32(443)), {Protocol: &udp, Port: &dns}},
	}).obj()
	d := mustBuild(t, network(np))
	pg := group(t, d, PolicyPortGroup(tNet, tNS, "named"))
	a := aclByID(t, pg, tCtrl+":NetworkPolicy:tenant-blue:named:Ingress:0:tcp:-1")
	// Upstream's addPortPolicy reads Port.IntVal, 0 for a named port:
	// the named port adds nothing to the port list.
	check(t, "tcp match", a.Match, "(ip4 || ip6) && tcp && tcp.dst=={80,443} && outport == @"+pg.Row.Name, upGress+" addPortPolicy, allIPsMatch; "+upACL+" getL4Match")
	u := aclByID(t, pg, tCtrl+":NetworkPolicy:tenant-blue:named:Ingress:0:udp:-1")
	check(t, "udp match (named port only)", u.Match, "(ip4 || ip6) && udp && outport == @"+pg.Row.Name, upACL+" getL4Match (no port: the protocol)")
}

func TestEgressWithRange(t *testing.T) {
	end := int32(2000)
	p := tcp(intstr.FromInt32(1000))
	p.EndPort = &end
	np := makeNP("out").selecting(map[string]string{"app": "web"}).types(networkingv1.PolicyTypeEgress).egress(networkingv1.NetworkPolicyEgressRule{
		Ports: []networkingv1.NetworkPolicyPort{p, tcp(intstr.FromInt32(53))},
		To:    []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}, {IPBlock: &networkingv1.IPBlock{CIDR: "192.168.0.0/24"}}},
	}).obj()
	n := network(np)
	n.Namespaces[0].Logging = ovnk.ACLLogging{Allow: "notice", Deny: "alert"}
	d := mustBuild(t, n)
	pg := group(t, d, PolicyPortGroup(tNet, tNS, "out"))
	key := "tenant-blue_LS{ML:{app: db,},}"
	l4 := "tcp && (tcp.dst==53 || 1000<=tcp.dst<=2000)"
	sel := aclByID(t, pg, tCtrl+":NetworkPolicy:tenant-blue:out:Egress:0:tcp:-1")
	check(t, "egress selector match", sel.Match, "(ip4.dst == {$"+setName(key, "v4")+"} || ip6.dst == {$"+setName(key, "v6")+"}) && "+l4+" && inport == @"+pg.Row.Name,
		upGress+" buildLocalPodACLs (dst, inport); "+upACL+" getL4Match (ports, then ranges)")
	check(t, "egress direction", string(sel.Direction), "from-lport", upACL+" PolicyTypeToAclPipeline (LportEgressAfterLB)")
	check(t, "egress apply-after-lb", sel.Options["apply-after-lb"], "true", upACL+" BuildACL")
	check(t, "egress name", deref(sel.Name), "NP:tenant-blue:out:Egress:0", upACL+" GetACLName")
	check(t, "allow severity", deref(sel.Severity), "notice", upACL+" getLogSeverity (allow)")
	if !sel.Log {
		t.Errorf("allow ACL not logged with acl-logging allow=notice (%s getLogSeverity)", upACL)
	}
	blk := aclByID(t, pg, tCtrl+":NetworkPolicy:tenant-blue:out:Egress:0:tcp:-2")
	check(t, "egress ipBlock match", blk.Match, "ip4.dst == 192.168.0.0/24 && "+l4+" && inport == @"+pg.Row.Name, upGress+" getMatchFromIPBlock")
	out := group(t, d, DenyPortGroup(tNet, tNS, false))
	check(t, "egress deny members", strings.Join(out.Ports, ","), "tenant.blue.blue_tenant-blue_web1", upPolicy+" denyPGAddPorts (isEgress)")
	deny := aclByID(t, out, tCtrl+":NetpolNamespace:tenant-blue:Egress:defaultDeny")
	check(t, "deny severity", deref(deny.Severity), "alert", upACL+" getLogSeverity (drop: deny)")
	arp := aclByID(t, out, tCtrl+":NetpolNamespace:tenant-blue:Egress:arpAllow")
	if arp.Log || arp.Severity != nil {
		t.Errorf("the ARP allow ACL logs; upstream builds it with nil logging (%s buildDenyACLs)", upPolicy)
	}
	in := group(t, d, DenyPortGroup(tNet, tNS, true))
	if len(in.Ports) != 0 || len(in.ACLs) != 2 {
		t.Errorf("ingress default deny of an Egress-only policy: ports %q, %d ACLs; upstream: none, 2 (%s createDefaultDenyPGAndACLs)", in.Ports, len(in.ACLs), upPolicy)
	}
}

func TestSelectorStringIsCanonical(t *testing.T) {
	a := &metav1.LabelSelector{MatchLabels: map[string]string{"b": "2", "a": "1"}, MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "z", Operator: metav1.LabelSelectorOpIn, Values: []string{"y", "x"}}, {Key: "k", Operator: metav1.LabelSelectorOpExists}}}
	check(t, "selector", selectorString(a), "LS{ML:{a: 1,b: 2,},ME:{LSR{Key:k,Operator:Exists,Values:[],},LSR{Key:z,Operator:In,Values:[x y],}},}",
		upAddrSet+" shortLabelSelectorString, sortedLSRString")
	check(t, "nil selector", selectorString(nil), "nil", upAddrSet+" shortLabelSelectorString")
}

func TestRefusesWhatItCannotBuild(t *testing.T) {
	for name, n := range map[string]Network{
		"no name":          {Topology: base.TopologyLayer2, IPv4: true},
		"unknown topology": {Name: tNet, Topology: "layer4", IPv4: true},
	} {
		if d, err := Build(n); err == nil || d != nil {
			t.Errorf("%s: built", name)
		}
	}
	d := mustBuild(t, network())
	if !d.Empty() {
		t.Errorf("a network without policies has rows: %+v", d)
	}
}

// A policy that cannot be built has no rows (upstream's failed
// createNetworkPolicy cleans up), and holds up none of the others'.
func TestAPolicyThatCannotBeBuiltLeavesTheOthers(t *testing.T) {
	bad := makeNP("bad").types(networkingv1.PolicyTypeIngress).obj()
	bad.Spec.PodSelector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Nope"}}}
	d, err := Build(network(bad, makeNP("good").types(networkingv1.PolicyTypeIngress).obj()))
	if err == nil || !strings.Contains(err.Error(), "tenant-blue/bad") {
		t.Errorf("error %v, want one naming tenant-blue/bad", err)
	}
	if d == nil || len(d.PortGroups) != 3 || d.PortGroups[0].Row.Name != PolicyPortGroup(tNet, tNS, "good") {
		t.Fatalf("want the good policy's group and the namespace's two default-deny groups, got %+v", d)
	}
}
