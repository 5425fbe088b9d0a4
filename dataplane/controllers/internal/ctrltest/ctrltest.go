// Package ctrltest holds the fixtures the dataplane controllers' tests
// share across their packages (zone, the controllers and their wiring).
package ctrltest

import (
	"slices"
	"strings"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/ovnk"
)

// NADScheme is client-go's scheme with NetworkAttachmentDefinitions, for
// fake clients.
func NADScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := nadv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

// FactsNode is OKEP-5535's node-a with every node annotation udnkit or
// OVN-Kubernetes writes, and an InternalIP.
func FactsNode() *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a", Annotations: map[string]string{
			ovnk.AnnotationNodeID: "6", ovnk.AnnotationNodeEncapIPs: `["10.0.0.2","10.0.0.3","10.0.0.4"]`,
			ovnk.AnnotationNodeChassisID:                  "5e1f0c1a-node-a",
			ovnk.AnnotationNodeTransitSwitchPortTunnelIDs: "[6,7,8]",
			ovnk.AnnotationNodeSubnets:                    `{"default":["10.244.1.0/24"],"tenant.green_green":["10.200.3.0/24"]}`,
			ovnk.AnnotationLayer2TopologyVersion:          ovnk.Layer2TopologyVersionTransitRouter,
			ovnk.AnnotationZoneName:                       "zone-a",
			"example.com/unrelated":                       "x",
		}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "172.18.0.2"}}},
	}
}

// NetworkNADs are udnkit NADs of every shape a dataplane controller's
// network function meets: Primary and Secondary networks of each topology
// (a Primary Layer2 one with and without its tunnel keys), a network
// without a name, another CNI's config and a malformed one.
func NetworkNADs() []*nadv1.NetworkAttachmentDefinition {
	ids := map[string]string{ovnk.AnnotationNetworkID: "1", ovnk.AnnotationTunnelKeys: "[16711685,16715780]"}
	conf := func(name, topology, role, subnets string) string {
		return `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"` + name + `","topology":"` + topology +
			`","role":"` + role + `","subnets":"` + subnets + `","netAttachDefName":"ns/nad"}`
	}
	var out []*nadv1.NetworkAttachmentDefinition
	for i, c := range []struct {
		config      string
		annotations map[string]string
	}{
		{conf("ns_blue", "layer2", "primary", "10.100.0.0/16,fd00:100::/64"), ids},
		{conf("ns_waiting", "layer2", "primary", "10.101.0.0/16"), nil},
		{conf("ns_green", "layer3", "primary", "10.200.0.0/16/24"), nil},
		{conf("ns_back", "layer2", "secondary", "fd00:50::/64"), nil},
		{conf("ns_back3", "layer3", "secondary", "10.210.0.0/16/24"), nil},
		{conf("ns_phys", "localnet", "secondary", "10.220.0.0/24"), nil},
		{conf("", "layer2", "primary", "10.102.0.0/16"), ids},
		{`{"cniVersion":"1.0.0","type":"bridge","name":"ns_br"}`, nil},
		{"{", nil},
	} {
		out = append(out, &nadv1.NetworkAttachmentDefinition{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nad" + string(rune('a'+i)), Annotations: c.annotations,
				Labels: map[string]string{ovnk.LabelUserDefinedNetwork: ""}},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: c.config}})
	}
	return out
}

// IndexDisagreements lists the NetworkNADs whose network, as network reads
// it, index does not key the NAD under: a sweep reading a network's NADs
// through that index would miss them and remove a live network's rows. A
// NAD network names "" is left out (a sweep asks the whole list for it).
func IndexDisagreements(network func(*nadv1.NetworkAttachmentDefinition) (string, bool), index func(client.Object) []string) []string {
	var out []string
	for _, nad := range NetworkNADs() {
		n, ok := network(nad)
		if ok && n != "" && !slices.Contains(index(nad), n) {
			out = append(out, nad.Name+" names "+n+", indexed under "+strings.Join(index(nad), ","))
		}
	}
	return out
}

// AgreesWithIndex fails t when network names none of the NetworkNADs (the
// check would prove nothing) or names one otherwise than index keys it.
func AgreesWithIndex(t *testing.T, what string, network func(*nadv1.NetworkAttachmentDefinition) (string, bool), index func(client.Object) []string) {
	t.Helper()
	named := 0
	for _, nad := range NetworkNADs() {
		if n, ok := network(nad); ok && n != "" {
			named++
		}
	}
	if named == 0 {
		t.Errorf("%s names none of the NADs: the check proves nothing", what)
	}
	if bad := IndexDisagreements(network, index); len(bad) != 0 {
		t.Errorf("%s disagrees with the index: %v", what, bad)
	}
}
