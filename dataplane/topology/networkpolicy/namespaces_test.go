package networkpolicy

import (
	"reflect"
	"slices"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udnkit/udnkit/ovnk"
)

// namespacesCase is a network whose rows read namespaces: every one logs
// its ACLs, "other" and "third" carry team labels a selector may match, and
// "unrelated" is neither a policy's nor a pod's namespace.
func namespacesCase(nps ...networkingv1.NetworkPolicy) Network {
	n := network(nps...)
	logging := ovnk.ACLLogging{Allow: "info", Deny: "alert"}
	n.Namespaces = []Namespace{
		{Name: "other", Labels: map[string]string{"team": "red"}, Logging: logging},
		{Name: tNS, Labels: map[string]string{"team": "blue"}, Logging: logging},
		{Name: "third", Labels: map[string]string{"team": "red"}, Logging: logging},
		{Name: "unrelated", Labels: map[string]string{"team": "red"}, Logging: logging},
	}
	n.Pods = append(n.Pods, pod("third", "web4", "", map[string]string{"app": "web"}, "10.100.0.9", "fd00:100::9"))
	return n
}

// only keeps the namespaces named in names.
func only(n Network, names []string) Network {
	n.Namespaces = slices.DeleteFunc(slices.Clone(n.Namespaces), func(ns Namespace) bool { return !slices.Contains(names, ns.Name) })
	return n
}

// Build reads only the namespaces NamespacesRead names: given only those it
// writes the same rows as given every namespace, and each of them matters
// (without it some row changes), so that a reconcile can get these few by
// name instead of listing the cluster's.
func TestNamespacesReadAreThoseBuildReads(t *testing.T) {
	red := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "red"}}
	web := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	for _, c := range []struct {
		name string
		nps  []networkingv1.NetworkPolicy
		want []string
	}{
		{"no policy", nil, []string{}},
		{"a pod selector peer: the policy's namespace only", []networkingv1.NetworkPolicy{
			makeNP("from-web").types(networkingv1.PolicyTypeIngress).ingress(networkingv1.NetworkPolicyIngressRule{
				From: []networkingv1.NetworkPolicyPeer{{PodSelector: web}}}).obj()}, []string{tNS}},
		{"an ingress namespace selector: the pods' namespaces too", []networkingv1.NetworkPolicy{
			makeNP("from-red").types(networkingv1.PolicyTypeIngress).ingress(networkingv1.NetworkPolicyIngressRule{
				From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: red}}}).obj()}, []string{"other", tNS, "third"}},
		{"an egress namespace and pod selector", []networkingv1.NetworkPolicy{
			makeNP("to-red-web").types(networkingv1.PolicyTypeEgress).egress(networkingv1.NetworkPolicyEgressRule{
				To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: red, PodSelector: web}}}).obj()}, []string{"other", tNS, "third"}},
		{"policies of two namespaces", []networkingv1.NetworkPolicy{
			makeNP("deny").types(networkingv1.PolicyTypeIngress).obj(),
			makeNP("deny").ns("other").types(networkingv1.PolicyTypeEgress).obj()}, []string{"other", tNS}},
	} {
		n := namespacesCase(c.nps...)
		got := n.NamespacesRead()
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: NamespacesRead %q, want %q", c.name, got, c.want)
		}
		all := mustBuild(t, n)
		if d := mustBuild(t, only(n, got)); !reflect.DeepEqual(d, all) {
			t.Errorf("%s: the rows built from %q differ from those built from every namespace", c.name, got)
		}
		for _, name := range got {
			without := only(n, slices.DeleteFunc(slices.Clone(got), func(s string) bool { return s == name }))
			if reflect.DeepEqual(mustBuild(t, without), all) {
				t.Errorf("%s: namespace %s is read but leaving it out changes no row", c.name, name)
			}
		}
	}
}
