package main

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/internal/testenv"
)

// A Node make run ZONES=n publishes gets its addresses even when a manager
// annotates it between its creation and the status write (as the host
// subnet allocator does at once), and the manager's annotation stays.
func TestPublishNodeWhileAManagerAnnotatesIt(t *testing.T) {
	testenv.Real(t, "kube-apiserver")
	env, err := envtest.Start(envtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	base, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	// A manager's write lands right after each create.
	c := interceptor.NewClient(base, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := c.Create(ctx, obj, opts...); err != nil {
				return err
			}
			other := &corev1.Node{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), other); err != nil {
				return err
			}
			patch := client.MergeFrom(other.DeepCopy())
			other.Annotations = map[string]string{"k8s.ovn.org/node-subnets": `{"default":["10.244.0.0/24"]}`}
			return c.Patch(ctx, other, patch)
		},
	})
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.10"}}}}
	if err := publishNode(ctx, c, node); err != nil {
		t.Fatalf("publishing the node: %v", err)
	}
	got := &corev1.Node{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "node-a"}, got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Addresses) != 1 || got.Status.Addresses[0].Address != "192.0.2.10" {
		t.Errorf("node addresses %v, want the InternalIP 192.0.2.10", got.Status.Addresses)
	}
	if got.Annotations["k8s.ovn.org/node-subnets"] == "" {
		t.Errorf("the manager's annotation is gone: %v", got.Annotations)
	}
}
