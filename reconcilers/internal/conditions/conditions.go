// Package conditions computes the conditions the UDN and CUDN reconcilers
// write, keeping each one's lastTransitionTime while its status holds.
package conditions

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
)

// managed are the condition types the network reconcilers write
// (other writers, such as the node reconciler's HostSubnetsAllocated, own
// theirs through server-side apply).
var managed = []string{udnv1.ConditionNetworkCreated, udnv1.ConditionTransportAccepted, udnv1.ConditionUplinksReady}

// Changed is the one place the reconcilers compute conditions:
// each wanted condition gets observedGeneration gen and keeps the
// lastTransitionTime it has in have while its status holds (now otherwise).
// It reports whether any differs from have, or have holds a managed
// condition type that want drops; other writers' conditions do not count.
func Changed(have []metav1.Condition, gen int64, want []metav1.Condition) ([]metav1.Condition, bool) {
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	out := make([]metav1.Condition, 0, len(want))
	changed := false
	for _, h := range have {
		if slices.Contains(managed, h.Type) && !slices.ContainsFunc(want, func(w metav1.Condition) bool { return w.Type == h.Type }) {
			changed = true
		}
	}
	for _, c := range want {
		c.ObservedGeneration, c.LastTransitionTime = gen, now
		if old := meta.FindStatusCondition(have, c.Type); old != nil && old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
			changed = changed || old.Reason != c.Reason || old.Message != c.Message || old.ObservedGeneration != gen
		} else {
			changed = true
		}
		out = append(out, c)
	}
	return out, changed
}
