// Package ctrltest holds the fixtures the dataplane controllers' tests
// share across their packages (zone, the controllers and their wiring).
package ctrltest

import (
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

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
