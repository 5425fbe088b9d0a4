package networkpolicy

import (
	"context"
	"fmt"
	"slices"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/udnkit/udnkit/dataplane/controllers/internal/ctrltest"
	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/dataplane/topology/networkpolicy"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
)

func nad(config string) *nadv1.NetworkAttachmentDefinition {
	return &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "n"},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: config}}
}

// Which NADs carry policies: Primary Layer2 and Layer3 networks always,
// Secondary ones only with MultiNetworkPolicy; the families are the
// subnets'.
func TestNetworkOf(t *testing.T) {
	const (
		primaryL3 = `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns_green","topology":"layer3","role":"primary","subnets":"10.200.0.0/16/24"}`
		secondL2  = `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns_back","topology":"layer2","role":"secondary","subnets":"fd00:50::/64"}`
		noIPAM    = `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns_phys","topology":"localnet","role":"secondary"}`
		primaryNo = `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns_bad","topology":"layer2","role":"primary"}`
	)
	off, on := &Reconciler{}, &Reconciler{MultiNetworkPolicy: true}
	if n, primary, ok, err := off.networkOf(nad(primaryL3)); err != nil || !ok || !primary || n.Name != "ns_green" || !n.IPv4 || n.IPv6 {
		t.Errorf("Primary Layer3: %+v primary=%v ok=%v err=%v", n, primary, ok, err)
	}
	if _, _, ok, _ := off.networkOf(nad(secondL2)); ok {
		t.Errorf("a Secondary network carries policies without --enable-multi-networkpolicy")
	}
	if n, primary, ok, err := on.networkOf(nad(secondL2)); err != nil || !ok || primary || n.IPv4 || !n.IPv6 {
		t.Errorf("Secondary Layer2 with MultiNetworkPolicy: %+v primary=%v ok=%v err=%v", n, primary, ok, err)
	}
	if n, _, ok, err := on.networkOf(nad(noIPAM)); err != nil || !ok || n.IPv4 || n.IPv6 {
		t.Errorf("a Localnet network without IPAM: %+v ok=%v err=%v", n, ok, err)
	}
	if _, _, ok, err := on.networkOf(nad(primaryNo)); ok || err == nil {
		t.Errorf("a Primary network without subnets: ok=%v err=%v", ok, err)
	}
	if _, _, ok, err := on.networkOf(nad("{")); ok || err == nil {
		t.Errorf("a malformed config: ok=%v err=%v", ok, err)
	}
}

// A pod's addresses and port: a finished pod and one without an entry
// have none; a pod of another zone's node has addresses and no port.
func TestPodsOf(t *testing.T) {
	entry := `{"ns/n":{"ip_addresses":["10.50.0.4/16","fd00:50::4/64"],"mac_address":"0a:58:0a:32:00:04","role":"secondary"}}`
	local := map[string]bool{"node-a": true}
	ctx := context.Background()
	one := func(q *corev1.Pod) (networkpolicy.Pod, bool) {
		ps := podsOf(ctx, q, []string{"ns/n"}, true, local)
		if len(ps) > 1 {
			t.Errorf("%d interfaces of one entry: %+v", len(ps), ps)
		}
		if len(ps) == 0 {
			return networkpolicy.Pod{}, false
		}
		return ps[0], true
	}
	p, ok := one(policyPod("node-a", corev1.PodRunning, entry))
	if !ok || p.Port != ovnk.PodPortName("ns/n", "ns", "p") || len(p.IPs) != 2 || p.IPs[0].String() != "10.50.0.4" || p.Labels["app"] != "db" {
		t.Errorf("a local pod: %+v ok=%v", p, ok)
	}
	if p, ok := one(policyPod("node-b", corev1.PodRunning, entry)); !ok || p.Port != "" || len(p.IPs) != 2 {
		t.Errorf("another zone's pod: %+v ok=%v", p, ok)
	}
	for name, q := range map[string]*corev1.Pod{
		"finished":     policyPod("node-a", corev1.PodSucceeded, entry),
		"no entry":     policyPod("node-a", corev1.PodRunning, ""),
		"other NAD":    policyPod("node-a", corev1.PodRunning, `{"ns/other":{"ip_addresses":["10.1.0.4/16"],"mac_address":"0a:58:0a:01:00:04"}}`),
		"bad entry":    policyPod("node-a", corev1.PodRunning, `{"ns/n":{"ip_addresses":["nope"]}}`),
		"bad document": policyPod("node-a", corev1.PodRunning, `nope`),
	} {
		if p, ok := one(q); ok {
			t.Errorf("%s: %+v", name, p)
		}
	}
	if keys := sortedKeys(map[string]bool{"b": true, "a": true}); !slices.Equal(keys, []string{"a", "b"}) {
		t.Errorf("sortedKeys %v", keys)
	}
}

// A pod naming a NAD twice is two interfaces, each with its key's port
// (ns.n.1_ns_p) and addresses, as upstream's getPodNADKeys gives
// getNewLocalPolicyPorts and GetPodIPsOfNetwork every indexed key
// (pkg/ovn/base_network_controller_policy.go, pkg/util/pod_annotation.go
// PodNADKeys); an entry of the second that does not parse leaves only the
// second out, and a pod's interfaces through two NADs of the network are
// all taken in.
func TestPodsOfANADNamedTwice(t *testing.T) {
	const twice = `{"ns/n":{"ip_addresses":["10.50.0.4/16"],"mac_address":"0a:58:0a:32:00:04","role":"secondary"},` +
		`"ns/n/1":{"ip_addresses":["10.50.0.5/16"],"mac_address":"0a:58:0a:32:00:05","role":"secondary"},` +
		`"ns/m":{"ip_addresses":["10.50.0.6/16"],"mac_address":"0a:58:0a:32:00:06","role":"secondary"}}`
	local := map[string]bool{"node-a": true}
	ctx := context.Background()
	summary := func(ps []networkpolicy.Pod) []string {
		var out []string
		for _, p := range ps {
			out = append(out, fmt.Sprintf("%s %v", p.Port, p.IPs))
		}
		return out
	}
	got := summary(podsOf(ctx, policyPod("node-a", corev1.PodRunning, twice), []string{"ns/n"}, true, local))
	want := []string{"ns.n_ns_p [10.50.0.4]", "ns.n.1_ns_p [10.50.0.5]"}
	if !slices.Equal(got, want) {
		t.Errorf("a pod naming ns/n twice: %q, want %q", got, want)
	}
	got = summary(podsOf(ctx, policyPod("node-a", corev1.PodRunning, twice), []string{"ns/m", "ns/n"}, true, local))
	if want := append([]string{"ns.m_ns_p [10.50.0.6]"}, want...); !slices.Equal(got, want) {
		t.Errorf("a pod on two NADs of the network: %q, want %q", got, want)
	}
	got = summary(podsOf(ctx, policyPod("node-b", corev1.PodRunning, twice), []string{"ns/n"}, true, local))
	if want := []string{" [10.50.0.4]", " [10.50.0.5]"}; !slices.Equal(got, want) {
		t.Errorf("another zone's pod naming ns/n twice: %q, want %q", got, want)
	}
	bad := `{"ns/n":{"ip_addresses":["10.50.0.4/16"],"mac_address":"0a:58:0a:32:00:04"},"ns/n/1":{"ip_addresses":["nope"]}}`
	got = summary(podsOf(ctx, policyPod("node-a", corev1.PodRunning, bad), []string{"ns/n"}, true, local))
	if want := []string{"ns.n_ns_p [10.50.0.4]"}; !slices.Equal(got, want) {
		t.Errorf("a second interface whose entry does not parse: %q, want only the first %q", got, want)
	}
}

// policyPod is pod ns/p labelled app=db on node in phase, with ann as its
// k8s.ovn.org/pod-networks ("": none) and the k8s.v1.cni.cncf.io/networks
// selection naming its Secondary entries (testobj.PodNetworkAnnotations).
func policyPod(node string, phase corev1.PodPhase, ann string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: map[string]string{"app": "db"}},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
	if ann != "" {
		p.Annotations = testobj.PodNetworkAnnotations(ann)
	}
	return p
}

// A Secondary network's members are the keys the pod's
// k8s.v1.cni.cncf.io/networks still names (podannotation.AttachedKeys), as
// upstream's PodNADKeys reads a Secondary network's keys from the
// selection: "n,n" made "n" leaves the ns/n/1 entry, which the address
// allocator does not remove, out of the policies; an entry the selection
// never named is no member either. A Primary network's members are its
// pod-networks entries whatever the selection says, and a selection that
// does not decode keeps every entry a member (the pod-port controller
// keeps the ports it last built).
func TestPodsOfReadsASecondaryNetworksKeysFromTheSelection(t *testing.T) {
	const twice = `{"ns/n":{"ip_addresses":["10.50.0.4/16"],"mac_address":"0a:58:0a:32:00:04","role":"secondary"},` +
		`"ns/n/1":{"ip_addresses":["10.50.0.5/16"],"mac_address":"0a:58:0a:32:00:05","role":"secondary"}}`
	local := map[string]bool{"node-a": true}
	ports := func(networks string, secondary bool) []string {
		p := policyPod("node-a", corev1.PodRunning, twice)
		if networks == "" {
			delete(p.Annotations, ovnk.AnnotationNetworks)
		} else {
			p.Annotations[ovnk.AnnotationNetworks] = networks
		}
		var out []string
		for _, m := range podsOf(context.Background(), p, []string{"ns/n"}, secondary, local) {
			out = append(out, m.Port)
		}
		return out
	}
	both := []string{"ns.n_ns_p", "ns.n.1_ns_p"}
	for _, c := range []struct {
		networks  string
		secondary bool
		want      []string
	}{
		{"n,n", true, both},
		{"n", true, both[:1]},
		{`[{"name":"n","interface":"net1"}]`, true, both[:1]},
		{"other", true, nil},
		{"", true, nil},
		{"n", false, both},
		{"", false, both},
		{`[{"name":`, true, both},
	} {
		if got := ports(c.networks, c.secondary); !slices.Equal(got, c.want) {
			t.Errorf("selection %q secondary %v: member ports %q, want %q", c.networks, c.secondary, got, c.want)
		}
	}
}

// The policy sweep reads a network's NADs through zone.AnyNetworkField:
// networkName must name each NAD as the index keys it, with and without
// MultiNetworkPolicy.
func TestNetworkNameAgreesWithTheIndex(t *testing.T) {
	ctrltest.AgreesWithIndex(t, "networkName", (&Reconciler{}).networkName, zone.AnyNetwork)
	ctrltest.AgreesWithIndex(t, "networkName with MultiNetworkPolicy", (&Reconciler{MultiNetworkPolicy: true}).networkName, zone.AnyNetwork)
}

// A pod's change queues the NADs of its namespace and, once each, the NADs
// of other namespaces its k8s.ovn.org/pod-networks names: an indexed key
// ("other/red/1") names its NAD, not a NAD "red/1".
func TestPodNADsOfIndexedKeys(t *testing.T) {
	own := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "blue",
		Labels: map[string]string{ovnk.LabelUserDefinedNetwork: ""}}}
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(ctrltest.NADScheme(t)).WithObjects(own).Build()}
	p := policyPod("node-a", corev1.PodRunning, `{"other/red":{},"other/red/1":{},"ns/blue":{},"third/green/2":{},"default":{}}`)
	var got []string
	for _, req := range r.podNADs(context.Background(), p) {
		got = append(got, req.String())
	}
	slices.Sort(got)
	if want := []string{"ns/blue", "other/red", "third/green"}; !slices.Equal(got, want) {
		t.Errorf("queued %q, want %q", got, want)
	}
}

// The namespaces a network's rows read are got by name: one that does not
// exist is left out, each one's labels and decoded ACL logging are taken
// as they are now (a relabelled namespace, a changed annotation, a deleted
// namespace show at the next read), and a logging that does not decode is
// none.
func TestNamespacesAreReadByName(t *testing.T) {
	mk := func(name, logging string, labels map[string]string) *corev1.Namespace {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
		if logging != "" {
			ns.Annotations = map[string]string{ovnk.AnnotationACLLogging: logging}
		}
		return ns
	}
	c := fake.NewClientBuilder().WithObjects(
		mk("a", `{"deny":"alert","allow":"info"}`, map[string]string{"team": "red"}),
		mk("b", `nope`, map[string]string{"team": "blue"}),
		mk("unread", `{"deny":"alert"}`, nil)).Build()
	r := &Reconciler{Client: c}
	ctx := context.Background()
	read := func() string {
		t.Helper()
		got, err := r.namespaces(ctx, []string{"a", "b", "missing"})
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%+v", got)
	}
	if got, want := read(), "[{Name:a Labels:map[team:red] Logging:{Allow:info Deny:alert}} {Name:b Labels:map[team:blue] Logging:{Allow: Deny:}}]"; got != want {
		t.Errorf("read\n %s\nwant\n %s", got, want)
	}
	var a corev1.Namespace
	if err := c.Get(ctx, client.ObjectKey{Name: "a"}, &a); err != nil {
		t.Fatal(err)
	}
	a.Labels["team"] = "green"
	a.Annotations[ovnk.AnnotationACLLogging] = `{"deny":"warning"}`
	if err := c.Update(ctx, &a); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, mk("b", "", nil)); err != nil {
		t.Fatal(err)
	}
	if got, want := read(), "[{Name:a Labels:map[team:green] Logging:{Allow: Deny:warning}}]"; got != want {
		t.Errorf("after a relabel, a new logging and a deletion, read\n %s\nwant\n %s", got, want)
	}
}

// A namespace's change queues the NADs whose rows read it: its own
// namespace's (its policies' logging) and those of the namespaces with a
// NetworkPolicy that selects namespaces, not the NADs of a namespace whose
// policies select pods only, nor of one without policies.
func TestANamespaceQueuesTheNetworksThatReadIt(t *testing.T) {
	var objs []client.Object
	for _, ns := range []string{"changed", "selecting", "pods-only", "no-policy"} {
		objs = append(objs, &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "net",
			Labels: map[string]string{ovnk.LabelUserDefinedNetwork: ""}}})
	}
	red := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "red"}}
	objs = append(objs,
		&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "selecting", Name: "from-red"},
			Spec: networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: red}}}}}},
		&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "pods-only", Name: "from-web"},
			Spec: networkingv1.NetworkPolicySpec{Egress: []networkingv1.NetworkPolicyEgressRule{{
				To: []networkingv1.NetworkPolicyPeer{{PodSelector: red}}}}}})
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(ctrltest.NADScheme(t)).WithObjects(objs...).Build()}
	var got []string
	for _, req := range r.namespaceNADs(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "changed"}}) {
		got = append(got, req.String())
	}
	if want := []string{"changed/net", "selecting/net"}; !slices.Equal(got, want) {
		t.Errorf("queued %q, want %q", got, want)
	}
}
