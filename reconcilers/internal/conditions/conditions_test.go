package conditions

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
)

func TestChanged(t *testing.T) {
	then := metav1.Unix(1000, 0)
	created := metav1.Condition{Type: udnv1.ConditionNetworkCreated, Status: metav1.ConditionTrue, Reason: "NetworkAttachmentDefinitionCreated", Message: "m", ObservedGeneration: 2, LastTransitionTime: then}
	hosts := metav1.Condition{Type: "HostSubnetsAllocated", Status: metav1.ConditionTrue, Reason: "r", ObservedGeneration: 2, LastTransitionTime: then}
	want := []metav1.Condition{{Type: created.Type, Status: created.Status, Reason: created.Reason, Message: created.Message}}

	// Another writer's condition beside ours is no change (a restart does not
	// rewrite every network's status).
	out, changed := Changed([]metav1.Condition{created, hosts}, 2, want)
	if changed || out[0].LastTransitionTime != then {
		t.Errorf("unchanged status reported changed=%v, lastTransitionTime %v", changed, out[0].LastTransitionTime)
	}
	// A new generation, a new message, a new status, a dropped managed condition: changes.
	if _, changed := Changed([]metav1.Condition{created}, 3, want); !changed {
		t.Error("a new generation is not a change")
	}
	msg := append([]metav1.Condition(nil), want...)
	msg[0].Message = "other"
	if out, changed := Changed([]metav1.Condition{created}, 2, msg); !changed || out[0].LastTransitionTime != then {
		t.Error("a new message is not a change, or moved lastTransitionTime though the status held")
	}
	flipped := append([]metav1.Condition(nil), want...)
	flipped[0].Status = metav1.ConditionFalse
	if out, changed := Changed([]metav1.Condition{created}, 2, flipped); !changed || out[0].LastTransitionTime == then {
		t.Error("a new status is not a change, or kept the old lastTransitionTime")
	}
	transport := metav1.Condition{Type: udnv1.ConditionTransportAccepted, Status: metav1.ConditionFalse, Reason: "x", ObservedGeneration: 2}
	if _, changed := Changed([]metav1.Condition{created, transport}, 2, want); !changed {
		t.Error("dropping a managed condition is not a change")
	}
}
