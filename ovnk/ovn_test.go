package ovnk

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// k8s.ovn.org/node-chassis-id as upstream's ParseNodeChassisIDAnnotation
// (go-controller/pkg/util/node_annotations.go) reads it: absent means not
// yet; an empty value names no chassis and is refused.
func TestDecodeNodeChassisID(t *testing.T) {
	node := func(annotations map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Annotations: annotations}}
	}
	if got, ok, err := DecodeNodeChassisID(node(map[string]string{AnnotationNodeChassisID: "b1f96182-2bdd-42b6-88f9-9a1fc1c85ece"})); err != nil || !ok ||
		got != "b1f96182-2bdd-42b6-88f9-9a1fc1c85ece" {
		t.Errorf("published chassis: %q %v %v", got, ok, err)
	}
	if got, ok, err := DecodeNodeChassisID(node(nil)); err != nil || ok || got != "" {
		t.Errorf("no annotation: %q %v %v, want not yet", got, ok, err)
	}
	if _, ok, err := DecodeNodeChassisID(node(map[string]string{AnnotationNodeChassisID: " "})); ok || err == nil ||
		!strings.Contains(err.Error(), "node node-a annotation k8s.ovn.org/node-chassis-id is empty") {
		t.Errorf("empty annotation: %v %v, want a refusal naming it", ok, err)
	}
}

// The transit router's port keys of upstream's pkg/ovn/transit_router.go
// (transitRouterPortFirstTunnelKey = 10, transitRouterToSwitchTunnelKey = 1).
func TestTransitRouterPortTunnelKeys(t *testing.T) {
	if TransitRouterToSwitchTunnelKey != 1 || TransitRouterPortTunnelKey(2) != 12 || TransitRouterPortTunnelKey(FirstNodeID) != 10+FirstNodeID {
		t.Errorf("keys: trtos- %d, trtor- of node 2 %d", TransitRouterToSwitchTunnelKey, TransitRouterPortTunnelKey(2))
	}
}
