package networkpolicy

import (
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

const upMulti = "pkg/ovn/base_network_controller_multipolicy.go"

func TestPolicyFor(t *testing.T) {
	keys := map[string]bool{"tenant-red/back": true}
	for v, want := range map[string]bool{
		"back":                       true, // the policy's namespace
		"tenant-red/back":            true,
		"other/back":                 false,
		"front, tenant-red/back":     true, // blanks removed, any of the list
		"front":                      false,
		"tenant-red/back/extra/more": false,
	} {
		if got := PolicyFor("tenant-red", map[string]string{AnnotationPolicyFor: v}, keys); got != want {
			t.Errorf("policy-for %q: %v, upstream %v (%s shouldApplyMultiPolicy)", v, got, want, upMulti)
		}
	}
	if PolicyFor("tenant-red", nil, keys) {
		t.Errorf("a policy without policy-for applies (%s shouldApplyMultiPolicy)", upMulti)
	}
}

func TestConvertMultiNetworkPolicy(t *testing.T) {
	u := map[string]any{
		"apiVersion": "k8s.cni.cncf.io/v1beta1", "kind": "MultiNetworkPolicy",
		"metadata": map[string]any{"namespace": "tenant-red", "name": "db", "annotations": map[string]any{AnnotationPolicyFor: "back"}},
		"spec": map[string]any{
			"podSelector": map[string]any{"matchLabels": map[string]any{"app": "db"}},
			"policyTypes": []any{"Ingress"},
			"ingress": []any{map[string]any{
				"ports": []any{map[string]any{"protocol": "TCP", "port": int64(5432)}},
				"from":  []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.50.0.0/16", "except": []any{"10.50.1.0/24"}}}},
			}},
		},
	}
	np, err := ConvertMultiNetworkPolicy(u)
	if err != nil {
		t.Fatal(err)
	}
	if np.Namespace != "tenant-red" || np.Name != "db" || np.Annotations[AnnotationPolicyFor] != "back" ||
		np.Spec.PodSelector.MatchLabels["app"] != "db" || len(np.Spec.PolicyTypes) != 1 ||
		np.Spec.Ingress[0].Ports[0].Port.IntVal != 5432 || np.Spec.Ingress[0].From[0].IPBlock.Except[0] != "10.50.1.0/24" {
		t.Errorf("converted %+v (%s convertMultiNetPolicyToNetPolicy)", np, upMulti)
	}
	if _, err := ConvertMultiNetworkPolicy(map[string]any{"spec": "nope"}); err == nil {
		t.Errorf("a malformed MultiNetworkPolicy converted")
	}
}

// A Secondary network without IPAM takes ipBlock peers and refuses
// selector peers (convertMultiNetPolicyToNetPolicy's allowPeerSelectors).
func TestSecondaryWithoutIPAM(t *testing.T) {
	n := Network{Name: "tenant-red_phys", Topology: ovnk.TopologyLocalnet, Namespaces: []Namespace{{Name: "tenant-red"}},
		Pods: []Pod{{Namespace: "tenant-red", Name: "p1", Port: "tenant.red.phys_tenant-red_p1"}}}
	block := networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-red", Name: "cidr"},
		Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "192.168.0.0/24"}}}}}}}
	sel := block
	sel.Name = "sel"
	sel.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}}}
	n.Policies = []networkingv1.NetworkPolicy{block, sel}
	d, err := Build(n)
	if err == nil || !strings.Contains(err.Error(), "tenant-red/sel") {
		t.Errorf("error %v, want the selector policy refused (%s)", err, upMulti)
	}
	pg := group(t, d, ovnk.HashForOVN("tenant-red_phys-network-controller:NetworkPolicy:tenant-red:cidr"))
	a := aclByID(t, pg, "tenant-red_phys-network-controller:NetworkPolicy:tenant-red:cidr:Ingress:0:None:-2")
	check(t, "ipBlock match", a.Match, "ip4.src == 192.168.0.0/24 && outport == @"+pg.Row.Name, upGress+" getMatchFromIPBlock")
	check(t, "ports", strings.Join(pg.Ports, ","), "tenant.red.phys_tenant-red_p1", upGress)
	if d.Owner.Topology != ovnk.TopologyLocalnet {
		t.Errorf("owner topology %q", d.Owner.Topology)
	}
}

// A pod naming a Secondary NAD twice is two Pods of the network, one per
// pod-networks key: a MultiNetworkPolicy selecting it holds both ports in
// its port group and the namespace's default deny, and a peer selecting it
// puts both interfaces' addresses in the address set, as upstream's
// getNewLocalPolicyPorts and the pod selector address sets take every key
// getPodNADKeys gives (pkg/ovn/base_network_controller_policy.go,
// pkg/util/pod_annotation.go PodNADKeys, GetPodIPsOfNetwork). Without the
// second Pod only the first interface is there.
func TestAPodNamingANADTwiceIsTwoInterfaces(t *testing.T) {
	const net, ns, ctrl = "tenant-red_back", "tenant-red", "tenant-red_back-network-controller"
	db := map[string]string{"app": "db"}
	np := makeNP("db").ns(ns).selecting(db).types(networkingv1.PolicyTypeIngress).
		ingress(networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: db}}}}).obj()
	first := pod(ns, "db", "tenant.red.back_tenant-red_db", db, "10.50.0.4")
	second := pod(ns, "db", "tenant.red.back.1_tenant-red_db", db, "10.50.0.5")
	build := func(pods ...Pod) (ports, deny, set string) {
		d := mustBuild(t, Network{Name: net, Topology: base.TopologyLayer2, IPv4: true, Policies: []networkingv1.NetworkPolicy{np},
			Namespaces: []Namespace{{Name: ns}}, Pods: pods})
		pg := group(t, d, ovnk.HashForOVN(ctrl+":NetworkPolicy:tenant-red:db"))
		in := group(t, d, ovnk.HashForOVN(ctrl+":NetpolNamespace:tenant-red:Ingress"))
		as := setOf(t, d, ovnk.HashForOVN(ctrl+":PodSelector:tenant-red_LS{ML:{app: db,},}:v4"))
		return strings.Join(pg.Ports, ","), strings.Join(in.Ports, ","), strings.Join(as.Addresses, ",")
	}
	ports, deny, set := build(first, second)
	both := "tenant.red.back.1_tenant-red_db,tenant.red.back_tenant-red_db"
	check(t, "policy port group ports", ports, both, upPolicy+" getNewLocalPolicyPorts (each of getPodNADKeys)")
	check(t, "ingress default-deny members", deny, both, upPolicy+" denyPGAddPorts")
	check(t, "peer address set", set, "10.50.0.4,10.50.0.5", "pkg/util/pod_annotation.go GetPodIPsOfNetwork (every NAD key of the pod)")
	ports, deny, set = build(first)
	check(t, "ports without the second interface", ports+" "+deny, "tenant.red.back_tenant-red_db tenant.red.back_tenant-red_db", upPolicy)
	check(t, "address set without the second interface", set, "10.50.0.4", upPolicy)
}
