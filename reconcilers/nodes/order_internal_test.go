package nodes

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestOlderNodeOrdersByCreationThenName: the older node comes first
// whatever its name; nodes created in the same second (creation timestamps
// have whole seconds) come in name order.
func TestOlderNodeOrdersByCreationThenName(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Second))
	node := func(name string, created metav1.Time) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{Name: name, CreationTimestamp: created}
	}
	for _, c := range []struct {
		name string
		a, b *metav1.ObjectMeta
		want int
	}{
		{"older first, though its name sorts last", node("z", t0), node("a", t1), -1},
		{"younger last, though its name sorts first", node("a", t1), node("z", t0), 1},
		{"same second: by name", node("a", t0), node("b", t0), -1},
		{"same second: by name, reversed", node("b", t0), node("a", t0), 1},
		{"the same node", node("a", t0), node("a", t0), 0},
	} {
		if got := olderNode(c.a, c.b); got != c.want {
			t.Errorf("%s: olderNode(%s@%s, %s@%s) = %d, want %d", c.name, c.a.Name, c.a.CreationTimestamp, c.b.Name, c.b.CreationTimestamp, got, c.want)
		}
	}
}
