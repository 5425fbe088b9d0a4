package controllers

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/dataplane/topology/networkpolicy"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

const npCtrl = "tenant-blue_blue-network-controller"

// allowFrom is a policy of ns selecting pods labelled app=to, admitting TCP
// port from pods labelled app=from.
func allowFrom(ns, name, to, from string, port int32) *networkingv1.NetworkPolicy {
	tcp := corev1.ProtocolTCP
	p := intstr.FromInt32(port)
	return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": to}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &p}},
				From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": from}}}},
			}},
		}}
}

// pgPorts are the names of a port group's ports (nil: no such group), read
// in one command so that a group going meanwhile reads as gone.
func (s *stack) pgPorts(pg string) []string {
	s.t.Helper()
	lines := strings.SplitN(s.nbctl("--bare", "--columns=name,ports", "find", "Port_Group", "name="+pg), "\n", 2)
	if strings.TrimSpace(lines[0]) == "" {
		return nil
	}
	names := map[string]string{}
	var uuid string
	for _, l := range strings.Split(s.nbctl("--bare", "--columns=_uuid,name", "list", "Logical_Switch_Port"), "\n") {
		switch l = strings.TrimSpace(l); {
		case l == "":
		case uuid == "":
			uuid = l
		default:
			names[uuid], uuid = l, ""
		}
	}
	out := []string{}
	if len(lines) == 2 {
		for _, u := range strings.Fields(lines[1]) {
			if name, ok := names[u]; ok {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// aclColumn is one column of the ACL of upstream's k8s.ovn.org/id id ("":
// none).
func (s *stack) aclColumn(id, column string) string {
	s.t.Helper()
	return strings.Join(s.column("ACL", column, `external_ids:"k8s.ovn.org/id"="`+id+`"`), " ")
}

// A Primary Layer2 UDN's NetworkPolicy, its pods addressed by udnkit: the
// zone holds the policy's port group with node-a's selected pod, its allow
// ACL naming the peers' address sets (node-a's and node-b's web pods'
// addresses), and the namespace's default-deny groups with node-a's pod;
// a removed port group heals; a pod's label change, a new peer and the
// policies' removal are followed (the default deny goes with the
// namespace's last policy). A policy of a namespace without a Primary UDN
// writes nothing.
func TestNetworkPolicyOnAPrimaryLayer2Network(t *testing.T) {
	s := primaryLayer2Stack(t, "tenant-blue", "blue", "10.100.0.0/16", "fd00:100::/64")
	const nad = "tenant-blue/blue"
	db := testobj.MakePod("tenant-blue", "db1").Node("node-a").Running().Labels(map[string]string{"app": "db"}).Obj()
	web1 := testobj.MakePod("tenant-blue", "web1").Node("node-a").Running().Labels(map[string]string{"app": "web"}).Obj()
	web2 := testobj.MakePod("tenant-blue", "web2").Node("node-b").Running().Labels(map[string]string{"app": "web"}).Obj()
	s.create(db, web1, web2)
	dbPort, web1Port := ovnk.PodPortName(nad, "tenant-blue", "db1"), ovnk.PodPortName(nad, "tenant-blue", "web1")
	s.eventually("the pods' ports", func() bool { return s.hasPort(dbPort) && s.hasPort(web1Port) })
	w1, w2 := podIPs2(s, web1, nad), podIPs2(s, web2, nad)

	s.create(allowFrom("tenant-blue", "allow-web", "db", "web", 5432), namespace("plain"), allowFrom("plain", "ignored", "db", "web", 80))
	pg := networkpolicy.PolicyPortGroup("tenant-blue_blue", "tenant-blue", "allow-web")
	s.eventually("the policy's port group with db1", func() bool { return slices.Equal(s.pgPorts(pg), []string{dbPort}) })

	key := "tenant-blue_LS{ML:{app: web,},}"
	v4 := ovnk.HashForOVN(npCtrl + ":PodSelector:" + key + ":v4")
	v6 := ovnk.HashForOVN(npCtrl + ":PodSelector:" + key + ":v6")
	setAddrs := func(name string) string {
		return strings.Join(strings.Fields(strings.ReplaceAll(s.nbctl("--bare", "--columns=addresses", "find", "Address_Set", "name="+name), ",", " ")), " ")
	}
	want4 := strings.Join(sorted(w1[0], w2[0]), " ")
	s.eventually("the v4 peer set with web1 and web2", func() bool { return setAddrs(v4) == want4 })
	if got, want := setAddrs(v6), strings.Join(sorted(w1[1], w2[1]), " "); got != want {
		t.Errorf("v6 peer set %q, want %q", got, want)
	}
	acl := npCtrl + ":NetworkPolicy:tenant-blue:allow-web:Ingress:0:tcp:-1"
	if got, want := s.aclColumn(acl, "match"), `(ip4.src == {$`+v4+`} || ip6.src == {$`+v6+`}) && tcp && tcp.dst==5432 && outport == @`+pg; got != want {
		t.Errorf("allow ACL match %s, want %s", got, want)
	}
	for col, want := range map[string]string{"action": "allow-related", "priority": "1001", "tier": "2", "direction": "to-lport",
		"name": "NP:tenant-blue:allow-web:Ingress:0", "meter": "acl-logging"} {
		if got := s.aclColumn(acl, col); got != want {
			t.Errorf("allow ACL %s = %s, want %s", col, got, want)
		}
	}
	in, out := networkpolicy.DenyPortGroup("tenant-blue_blue", "tenant-blue", true), networkpolicy.DenyPortGroup("tenant-blue_blue", "tenant-blue", false)
	if got := s.pgPorts(in); !slices.Equal(got, []string{dbPort}) {
		t.Errorf("ingress default deny holds %q, want db1's port", got)
	}
	if got := s.pgPorts(out); got == nil || len(got) != 0 {
		t.Errorf("egress default deny holds %q, want an empty group", got)
	}
	if got := s.aclColumn(npCtrl+":NetpolNamespace:tenant-blue:Ingress:defaultDeny", "match"); got != "outport == @"+in {
		t.Errorf("default deny match %s", got)
	}
	if got := s.column("Port_Group", "name", `external_ids:"k8s.ovn.org/name"="plain"`); len(got) != 0 {
		t.Errorf("a namespace without a Primary UDN got default-deny groups %q", got)
	}
	if got := s.column("Port_Group", "name", `external_ids:"k8s.ovn.org/name"="plain:ignored"`); len(got) != 0 {
		t.Errorf("a policy of a namespace without a Primary UDN got port groups %q", got)
	}

	s.nbctl("pg-del", pg)
	s.eventually("the removed port group healed", func() bool { return slices.Equal(s.pgPorts(pg), []string{dbPort}) })

	web3 := testobj.MakePod("tenant-blue", "web3").Node("node-a").Running().Labels(map[string]string{"app": "web"}).Obj()
	s.create(web3)
	w3 := podIPs2(s, web3, nad)
	s.eventually("the new peer in the v4 set", func() bool { return setAddrs(v4) == strings.Join(sorted(w1[0], w2[0], w3[0]), " ") })

	var cur corev1.Pod
	if err := s.c.Get(s.ctx, client.ObjectKeyFromObject(db), &cur); err != nil {
		t.Fatal(err)
	}
	cur.Labels["app"] = "cache"
	if err := s.c.Update(s.ctx, &cur); err != nil {
		t.Fatal(err)
	}
	s.eventually("the relabelled pod out of the policy's and the default-deny groups", func() bool {
		return len(s.pgPorts(pg)) == 0 && len(s.pgPorts(in)) == 0
	})

	s.create(allowFrom("tenant-blue", "second", "web", "db", 80))
	s.eventually("the second policy's port group", func() bool {
		return len(s.pgPorts(networkpolicy.PolicyPortGroup("tenant-blue_blue", "tenant-blue", "second"))) == 2
	})
	if err := s.c.Delete(s.ctx, &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-blue", Name: "allow-web"}}); err != nil {
		t.Fatal(err)
	}
	s.eventually("the deleted policy's port group and peer sets gone", func() bool {
		return s.pgPorts(pg) == nil && len(s.column("Address_Set", "name", "name="+v4)) == 0
	})
	if s.aclColumn(acl, "match") != "" {
		t.Errorf("the deleted policy's ACL stayed")
	}
	if s.pgPorts(in) == nil || s.pgPorts(out) == nil {
		t.Errorf("the default-deny groups went while a policy remains")
	}
	if err := s.c.Delete(s.ctx, &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-blue", Name: "second"}}); err != nil {
		t.Fatal(err)
	}
	s.eventually("the default-deny groups gone with the last policy", func() bool { return s.pgPorts(in) == nil && s.pgPorts(out) == nil })
	if !s.hasPort(dbPort) || !s.hasPort(web1Port) {
		t.Errorf("the pods' ports went with the policies")
	}
}

func sorted(s ...string) []string {
	slices.Sort(s)
	return s
}

// multiPolicyStack is a running stack of zone node-a with
// --enable-multi-networkpolicy, the MultiNetworkPolicy kind served, nodes
// node-a and node-b, and the Secondary Layer2 NAD tenant-red/back
// (10.50.0.0/16).
func multiPolicyStack(t *testing.T) *stack {
	s := newStack(t)
	o := s.opts()
	o.Zone, o.Local, o.Cluster.MTU = "node-a", zone.InZone("node-a"), ovnk.DefaultMTU
	o.NetworkPolicy.MultiNetworkPolicy = true
	if _, err := Setup(s.ctx, s.mgr, o); err != nil {
		t.Fatal(err)
	}
	s.start()
	s.create(namespace("tenant-red"), testobj.MakeNode("node-a").Obj(), testobj.MakeNode("node-b").Obj())
	s.createNAD(labeledNAD("tenant-red", "back", redL2Conf, map[string]string{ovnk.AnnotationNetworkID: "3"}))
	return s
}

// multiPolicy is MultiNetworkPolicy tenant-red/name for policyFor,
// selecting app=db pods, its ingress from peers.
func multiPolicy(name, policyFor string, from []any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.cni.cncf.io/v1beta1", "kind": "MultiNetworkPolicy",
		"metadata": map[string]any{"namespace": "tenant-red", "name": name, "annotations": map[string]any{"k8s.v1.cni.cncf.io/policy-for": policyFor}},
		"spec": map[string]any{
			"podSelector": map[string]any{"matchLabels": map[string]any{"app": "db"}},
			"policyTypes": []any{"Ingress"},
			"ingress":     []any{map[string]any{"from": from}},
		},
	}}
}

// A MultiNetworkPolicy whose policy-for names a Secondary Layer2 NAD, with
// --enable-multi-networkpolicy: the network gets the policy's port group
// (node-a's selected pod), its ipBlock ACL and the namespace's default
// deny, named and keyed as upstream's network controller of the network;
// one naming another NAD writes nothing; deleting the policy removes them.
func TestMultiNetworkPolicyOnASecondaryNetwork(t *testing.T) {
	s := multiPolicyStack(t)
	db := testobj.MakePod("tenant-red", "db").Node("node-a").Running().Labels(map[string]string{"app": "db"}).PodNetworks(
		`{"tenant-red/back":{"ip_addresses":["10.50.0.4/16"],"mac_address":"0a:58:0a:32:00:04","tunnel_id":10,"role":"secondary"}}`).Obj()
	s.create(db)
	const dbPort = "tenant.red.back_tenant-red_db"
	s.eventually("the pod's port", func() bool { return s.hasPort(dbPort) })

	block := []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.50.7.0/24"}}}
	mnp := func(name, policyFor string) *unstructured.Unstructured { return multiPolicy(name, policyFor, block) }
	s.create(mnp("other", "tenant-red/front"), mnp("db", "back"))
	pg := networkpolicy.PolicyPortGroup("tenant-red_back", "tenant-red", "db")
	s.eventually("the policy's port group with the pod", func() bool { return slices.Equal(s.pgPorts(pg), []string{dbPort}) })
	const ctrl = "tenant-red_back-network-controller"
	if got, want := s.aclColumn(ctrl+":NetworkPolicy:tenant-red:db:Ingress:0:None:-2", "match"), "ip4.src == 10.50.7.0/24 && outport == @"+pg; got != want {
		t.Errorf("ipBlock ACL match %q, want %q", got, want)
	}
	in := networkpolicy.DenyPortGroup("tenant-red_back", "tenant-red", true)
	if got := s.pgPorts(in); !slices.Equal(got, []string{dbPort}) {
		t.Errorf("ingress default deny holds %q", got)
	}
	if got := s.pgPorts(networkpolicy.PolicyPortGroup("tenant-red_back", "tenant-red", "other")); got != nil {
		t.Errorf("a policy for another NAD got a port group with %q", got)
	}
	// Another client deletes the policy's port group: the network is re-applied.
	s.nbctl("pg-del", pg)
	s.healsWithin("the MultiNetworkPolicy port group", 10*time.Second, func() bool { return slices.Equal(s.pgPorts(pg), []string{dbPort}) })
	if err := s.c.Delete(s.ctx, mnp("db", "back")); err != nil {
		t.Fatal(err)
	}
	s.eventually("the policy's rows gone", func() bool { return s.pgPorts(pg) == nil && s.pgPorts(in) == nil })
}

// twicePolicy is a multiPolicyStack with pods naming the Secondary NAD
// tenant-red/back twice ("back,back", pod-networks keys tenant-red/back
// and tenant-red/back/1): db on node-a (10.50.0.4, .5) and web on node-b
// (.6, .7), and the MultiNetworkPolicy "db" for back selecting db with web
// as its ingress peer.
type twicePolicy struct {
	*stack
	db, web       *corev1.Pod
	first, second string // db's ports
	pg, in        string // the policy's port group, the ingress default deny
	set           string // the peer address set
}

// newTwicePolicy returns a twicePolicy once the policy's port group and
// default deny hold both of db's ports and the peer set both of web's
// addresses, as upstream's network policy takes every key getPodNADKeys
// gives (pkg/ovn/base_network_controller_policy.go getNewLocalPolicyPorts;
// pkg/util/pod_annotation.go PodNADKeys, GetPodIPsOfNetwork).
func newTwicePolicy(t *testing.T) *twicePolicy {
	const nad = "tenant-red/back"
	s := &twicePolicy{stack: multiPolicyStack(t)}
	twice := func(name, node, app, ip0, ip1 string) *corev1.Pod {
		return testobj.MakePod("tenant-red", name).Node(node).Running().Labels(map[string]string{"app": app}).
			Annotation(ovnk.AnnotationNetworks, "back,back").Annotation(ovnk.AnnotationPodNetworks, backEntries(ip0, ip1)).Obj()
	}
	s.db, s.web = twice("db", "node-a", "db", "10.50.0.4", "10.50.0.5"), twice("web", "node-b", "web", "10.50.0.6", "10.50.0.7")
	s.create(s.db, s.web)
	s.first, s.second = ovnk.PodPortName(nad, "tenant-red", "db"), ovnk.PodPortName(nad+"/1", "tenant-red", "db")
	s.eventually("both of db's ports", func() bool { return s.hasPort(s.first) && s.hasPort(s.second) })

	s.create(multiPolicy("db", "back", []any{map[string]any{"podSelector": map[string]any{"matchLabels": map[string]any{"app": "web"}}}}))
	s.pg = networkpolicy.PolicyPortGroup("tenant-red_back", "tenant-red", "db")
	s.in = networkpolicy.DenyPortGroup("tenant-red_back", "tenant-red", true)
	s.set = ovnk.HashForOVN("tenant-red_back-network-controller:PodSelector:tenant-red_LS{ML:{app: web,},}:v4")
	both := sorted(s.first, s.second)
	s.eventually("the policy's port group with both of db's ports", func() bool { return slices.Equal(s.pgPorts(s.pg), both) })
	if got := s.pgPorts(s.in); !slices.Equal(got, both) {
		t.Errorf("ingress default deny holds %q, want %q", got, both)
	}
	s.eventually("the peer set with both of web's interfaces", func() bool { return s.addrs() == "10.50.0.6 10.50.0.7" })
	return s
}

// addrs are the peer set's addresses, space-separated.
func (s *twicePolicy) addrs() string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s.nbctl("--bare", "--columns=addresses", "find", "Address_Set", "name="+s.set), ",", " ")), " ")
}

// annotate sets the pod's annotations kv, as its user or the address
// allocator would.
func (s *twicePolicy) annotate(p *corev1.Pod, kv map[string]string) {
	s.t.Helper()
	var cur corev1.Pod
	if err := s.c.Get(s.ctx, client.ObjectKeyFromObject(p), &cur); err != nil {
		s.t.Fatal(err)
	}
	maps.Copy(cur.Annotations, kv)
	if err := s.c.Update(s.ctx, &cur); err != nil {
		s.t.Fatal(err)
	}
}

// dbHoldsOnlyItsFirstPort waits for the policy's groups to hold db's first
// port alone, and checks that the port itself stayed.
func (s *twicePolicy) dbHoldsOnlyItsFirstPort() {
	s.t.Helper()
	s.eventually("db's second port out of the groups", func() bool {
		return slices.Equal(s.pgPorts(s.pg), []string{s.first}) && slices.Equal(s.pgPorts(s.in), []string{s.first})
	})
	if !s.hasPort(s.first) {
		s.t.Errorf("db's first port went with its second interface")
	}
}

// A pod naming the Secondary NAD tenant-red/back twice has two interfaces:
// a MultiNetworkPolicy selecting it holds both of its ports in its port
// group and the namespace's default deny, and a peer selecting such a pod
// on another node puts both interfaces' addresses in the address set
// (newTwicePolicy). The second interface leaving the annotation takes only
// its address and port out; the pods' deletion empties both.
func TestMultiNetworkPolicyOfANADNamedTwice(t *testing.T) {
	s := newTwicePolicy(t)
	s.annotate(s.web, map[string]string{ovnk.AnnotationNetworks: "back", ovnk.AnnotationPodNetworks: backEntries("10.50.0.6")})
	s.eventually("web's second interface out of the peer set", func() bool { return s.addrs() == "10.50.0.6" })
	s.annotate(s.db, map[string]string{ovnk.AnnotationNetworks: "back", ovnk.AnnotationPodNetworks: backEntries("10.50.0.4")})
	s.dbHoldsOnlyItsFirstPort()

	for _, p := range []*corev1.Pod{s.db, s.web} {
		if err := s.c.Delete(s.ctx, p, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
	}
	s.eventually("the pods' ports and addresses gone", func() bool {
		return len(s.pgPorts(s.pg)) == 0 && len(s.pgPorts(s.in)) == 0 && s.addrs() == ""
	})
}

// A pod's k8s.v1.cni.cncf.io/networks may change while it runs, and the
// address allocator only adds pod-networks entries: "back,back" made
// "back" leaves the tenant-red/back/1 entry. As upstream's PodNADKeys reads
// a Secondary network's keys from the selection, the repeat is no member:
// web's second address leaves the peer set and db's second port the
// policy's port group and default deny (the pod-port controller removes
// the port), each pod's first interface staying.
func TestMultiNetworkPolicyOfARepeatDroppedFromTheSelection(t *testing.T) {
	s := newTwicePolicy(t)
	s.annotate(s.web, map[string]string{ovnk.AnnotationNetworks: "back"})
	s.eventually("web's dropped repeat out of the peer set", func() bool { return s.addrs() == "10.50.0.6" })
	s.annotate(s.db, map[string]string{ovnk.AnnotationNetworks: "back"})
	s.dbHoldsOnlyItsFirstPort()
	s.eventually("db's dropped repeat's port removed", func() bool { return !s.hasPort(s.second) })
	for _, p := range []*corev1.Pod{s.db, s.web} {
		var cur corev1.Pod
		if err := s.c.Get(s.ctx, client.ObjectKeyFromObject(p), &cur); err != nil {
			t.Fatal(err)
		}
		if pn, err := podannotation.DecodePodNetwork(cur.Annotations, "tenant-red/back/1"); err != nil || pn == nil {
			t.Errorf("%s's repeat entry left pod-networks (%v); this test no longer shows the readers' own filtering", p.Name, err)
		}
	}
}

// backEntries is a k8s.ovn.org/pod-networks value with one entry of
// tenant-red/back per address, keyed as a pod naming the NAD once per
// address has them (podannotation.IndexedNADKey).
func backEntries(ips ...string) string {
	pn := podannotation.PodNetworks{}
	for i, ip := range ips {
		a := netip.MustParseAddr(ip).As4()
		pn[podannotation.IndexedNADKey("tenant-red/back", i)] = podannotation.PodNetwork{IPAddresses: []string{ip + "/16"},
			MACAddress: fmt.Sprintf("0a:58:%02x:%02x:%02x:%02x", a[0], a[1], a[2], a[3]), TunnelID: 10 + i, Role: podannotation.RoleSecondary}
	}
	v, err := pn.Encode()
	if err != nil {
		panic(err)
	}
	return v
}

// A flood of 500 NetworkPolicies in one Primary namespace does not hold
// up another namespace's network: its one policy, created half-way through
// the flood, has its port group within seconds, and the flood's 500 groups
// all follow.
func TestNetworkPolicyFloodHoldsUpNoOtherNamespace(t *testing.T) {
	s := primaryLayer2Stack(t, "tenant-a", "blue", "10.100.0.0/16")
	s.create(testobj.MakeNamespace("tenant-b").Primary().Obj(),
		testobj.MakeUDN("tenant-b", "green").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.101.0.0/16")).Obj(),
		testobj.MakePod("tenant-a", "db").Node("node-a").Running().Labels(map[string]string{"app": "db"}).Obj(),
		testobj.MakePod("tenant-b", "db").Node("node-a").Running().Labels(map[string]string{"app": "db"}).Obj())
	s.eventually("both pods' ports", func() bool {
		return s.hasPort(ovnk.PodPortName("tenant-a/blue", "tenant-a", "db")) && s.hasPort(ovnk.PodPortName("tenant-b/green", "tenant-b", "db"))
	})
	const flood = 500
	start := time.Now()
	half, done := make(chan struct{}), make(chan error, 1)
	go func() {
		for i := range flood {
			if err := s.c.Create(s.ctx, allowFrom("tenant-a", fmt.Sprintf("np%d", i), "db", "web", int32(1000+i))); err != nil {
				done <- err
				return
			}
			if i == flood/2 {
				close(half)
			}
		}
		done <- nil
	}()
	<-half
	s.create(allowFrom("tenant-b", "one", "db", "web", 80))
	other := time.Now()
	pg := networkpolicy.PolicyPortGroup("tenant-b_green", "tenant-b", "one")
	s.eventually("the other namespace's policy", func() bool { return len(s.pgPorts(pg)) == 1 })
	otherTook := time.Since(other)
	floodGroups := func() int {
		return len(s.column("Port_Group", "name", `external_ids:"k8s.ovn.org/owner-controller"="tenant-a_blue-network-controller"`,
			`external_ids:"k8s.ovn.org/owner-type"=NetworkPolicy`))
	}
	atOther := floodGroups()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	created := time.Since(start)
	s.eventually("the flood's port groups", func() bool { return floodGroups() == flood })
	t.Logf("%d policies created in %v; the other namespace's programmed in %v (the flood had %d groups then); the flood's all in %v",
		flood, created, otherTook, atOther, time.Since(start))
	if otherTook > 15*time.Second {
		t.Errorf("the other namespace's policy took %v behind the flood", otherTook)
	}
}

// A policy whose peer selects namespaces follows its namespace's labels
// and ACL logging (the reconcile gets the namespaces it reads by name, and
// a namespace's change queues the networks whose rows read it): the peer's
// address set is empty while no namespace has team=red, holds the
// namespace's pods once its namespace has the label and none once the
// label is gone again; the namespace's acl-logging annotation sets the
// severities of the policy's and its default deny's ACLs.
func TestNetworkPolicyFollowsItsNamespace(t *testing.T) {
	s := primaryLayer2Stack(t, "tenant-blue", "blue", "10.101.0.0/16")
	const nad = "tenant-blue/blue"
	db := testobj.MakePod("tenant-blue", "db1").Node("node-a").Running().Labels(map[string]string{"app": "db"}).Obj()
	web := testobj.MakePod("tenant-blue", "web1").Node("node-a").Running().Labels(map[string]string{"app": "web"}).Obj()
	s.create(db, web)
	ips := append(podIPs2(s, db, nad), podIPs2(s, web, nad)...)
	red := map[string]string{"team": "red"}
	s.create(&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-blue", Name: "from-red"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: red}}}}},
		}})
	set := ovnk.HashForOVN(npCtrl + ":PodSelector:LS{ML:{team: red,},}_LS{}_LNM:v4")
	addrs := func() string {
		return strings.Join(strings.Fields(strings.ReplaceAll(s.nbctl("--bare", "--columns=addresses", "find", "Address_Set", "name="+set), ",", " ")), " ")
	}
	exists := func() bool { return len(s.column("Address_Set", "name", "name="+set)) == 1 }
	s.eventually("the peer's empty address set", func() bool { return exists() && addrs() == "" })

	namespace := func(change func(*corev1.Namespace)) {
		s.eventually("the namespace updated", func() bool {
			var ns corev1.Namespace
			if err := s.c.Get(s.ctx, client.ObjectKey{Name: "tenant-blue"}, &ns); err != nil {
				return false
			}
			change(&ns)
			return s.c.Update(s.ctx, &ns) == nil
		})
	}
	namespace(func(ns *corev1.Namespace) { ns.Labels["team"] = "red" })
	s.eventually("the peer's set with the relabelled namespace's pods", func() bool { return addrs() == strings.Join(sorted(ips...), " ") })

	namespace(func(ns *corev1.Namespace) {
		if ns.Annotations == nil {
			ns.Annotations = map[string]string{}
		}
		ns.Annotations[ovnk.AnnotationACLLogging] = `{"deny":"alert","allow":"info"}`
	})
	deny := npCtrl + ":NetpolNamespace:tenant-blue:Ingress:defaultDeny"
	allow := npCtrl + ":NetworkPolicy:tenant-blue:from-red:Ingress:0:None:-1"
	s.eventually("the ACLs logged at the namespace's severities", func() bool {
		return s.aclColumn(deny, "severity") == "alert" && s.aclColumn(allow, "severity") == "info"
	})

	namespace(func(ns *corev1.Namespace) { delete(ns.Labels, "team") })
	s.eventually("the peer's set empty once the label is gone", func() bool { return exists() && addrs() == "" })
}
