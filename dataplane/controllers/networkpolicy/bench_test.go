package networkpolicy

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/dataplane/controllers/internal/benchzone"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/dataplane/topology/networkpolicy"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/ovnk"
)

// Benchmark500NetworkPolicies programs a namespace's 500 NetworkPolicies on
// its Primary Layer2 UDN, over 500 pods on the zone's node (their ports
// exist): each policy selects the pods of one of 50 labels and admits its
// own TCP port from the next label's pods (500 port groups and the
// namespace's two default-deny ones, their ACLs, 50 address sets). udnkit:
// the networkpolicy Reconciler driven directly (reading a real apiserver
// through the cache, applying to a real Northbound), into an empty policy
// piece each time; baseline-raw-transaction: the same port groups, ACLs and
// address sets written in one raw libovsdb transaction to an equivalent
// Northbound. Both end with the same rows.
func Benchmark500NetworkPolicies(b *testing.B) {
	const ns, network = "bench", "bench_blue"
	z := benchzone.Start(b, envtest.Options{})
	nad := z.Layer2(ns, "blue", network, "10.128.0.0/16")
	nadKey := ns + "/blue"
	ports := rows.Switch{Row: nbdb.LogicalSwitch{Name: ovnk.NamesFor(network).Switch()}, Ref: true}
	var objs []client.Object
	for i := range 500 {
		name := fmt.Sprintf("p%d", i)
		ip := fmt.Sprintf("10.128.%d.%d", i/250, i%250+2)
		ports.Ports = append(ports.Ports, nbdb.LogicalSwitchPort{Name: ovnk.PodPortName(nadKey, ns, name)})
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{"app": fmt.Sprintf("a%d", i%50)},
			Annotations: map[string]string{ovnk.AnnotationPodNetworks: fmt.Sprintf(
				`{%q:{"ip_addresses":["%s/16"],"mac_address":"0a:58:0a:80:%02x:%02x","role":"primary"}}`, nadKey, ip, i/250, i%250+2)}},
			Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "c", Image: "pause"}}}},
			benchPolicy(ns, i))
	}
	z.Apply(&rows.Desired{Owner: rows.Owner{Network: network, Topology: base.TopologyLayer2, Piece: "bench-pods"},
		Switches: []rows.Switch{ports}})
	z.Create(objs...)
	z.Cached(&corev1.PodList{}, 500, client.InNamespace(ns))
	z.Cached(&networkingv1.NetworkPolicyList{}, 500, client.InNamespace(ns))

	r := &Reconciler{Client: z.Client, OVN: z.OVN}
	net, primary, ok, err := r.networkOf(nad)
	if err != nil || !ok || !primary {
		b.Fatalf("network: primary=%v ok=%v err=%v", primary, ok, err)
	}
	if err := r.read(z.Ctx, &net, primary); err != nil {
		b.Fatal(err)
	}
	d, err := networkpolicy.Build(net)
	if err != nil {
		b.Fatal(err)
	}
	acls := 0
	for _, g := range d.PortGroups {
		acls += len(g.ACLs)
	}
	report := func(b *testing.B) {
		b.ReportMetric(float64(len(d.PortGroups)), "port-groups/op")
		b.ReportMetric(float64(acls), "acls/op")
	}
	z.ProgramAgainstRaw(b, r, nad, d, nbdb.ACLTable, acls, report)
	z.SameRows(nbdb.PortGroupTable, "name", "external_ids")
	z.SameMembers(nbdb.PortGroupTable, "ports", nbdb.LogicalSwitchPortTable)
	z.SameRows(nbdb.ACLTable, "name", "priority", "direction", "match", "action", "tier", "log", "meter", "severity", "options", "external_ids")
	z.SameRows(nbdb.AddressSetTable, "name", "addresses", "external_ids")
}

// benchPolicy is policy np<i>: the pods labelled app=a<i%50> admit TCP
// port 1000+i from those labelled app=a<(i+1)%50>.
func benchPolicy(ns string, i int) *networkingv1.NetworkPolicy {
	port := intstr.FromInt32(int32(1000 + i))
	tcp := corev1.ProtocolTCP
	return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("np%d", i)},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("a%d", i%50)}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}},
				From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("a%d", (i+1)%50)}}}},
			}},
		}}
}
