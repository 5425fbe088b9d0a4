package addresses_test

import (
	"context"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrlmanager "sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/udnkit/udnkit/internal/testmgr"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
	"github.com/udnkit/udnkit/reconcilers/addresses"
)

// otherWriter is OVN-Kubernetes' ovnkube-controller writing the default
// network's pod-networks entry of a pod of its zone: in the live comparison
// it wrote web-node-a's between the cluster manager's read and its
// resourceVersion-guarded write of the UDN's entry, whose write failed.
// Upstream's cluster manager then released the pod's addresses and tunnel ID
// (pkg/allocator/pod/pod_annotation.go) and its round-robin allocator gave
// the pod .5 and tunnel ID 12 after the next pod's .4 and 11; udnkit keeps
// what it allocated and writes it again.
type otherWriter struct {
	ns, pod string

	mu        sync.Mutex
	wrote     bool
	writeErr  error // of the other writer's own update
	patchErr  error // of udnkit's write that lost the race
	defaultPN podannotation.PodNetwork
}

// intercept runs the other writer's update right before udnkit's first
// pod-networks write of w.pod, then lets udnkit's write go ahead.
func (w *otherWriter) intercept(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Namespace != w.ns || pod.Name != w.pod {
		return c.Patch(ctx, obj, patch, opts...)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wrote {
		return c.Patch(ctx, obj, patch, opts...)
	}
	w.wrote = true
	var current corev1.Pod
	w.writeErr = k8s.Get(ctx, client.ObjectKeyFromObject(pod), &current)
	if w.writeErr == nil {
		var value string
		value, w.writeErr = podannotation.WithPodNetwork(current.Annotations, ovnk.DefaultNetworkName, w.defaultPN)
		if w.writeErr == nil {
			if current.Annotations == nil {
				current.Annotations = map[string]string{}
			}
			current.Annotations[ovnk.AnnotationPodNetworks] = value
			w.writeErr = k8s.Update(ctx, &current)
		}
	}
	w.patchErr = c.Patch(ctx, obj, patch, opts...)
	return w.patchErr
}

// startManagerIntercepting is startManager with the manager's client
// patching through patch.
func startManagerIntercepting(patch func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error) {
	fast := rest.CopyConfig(env.Config)
	fast.QPS, fast.Burst = 1000, 2000
	opts := testmgr.Options(env.Scheme)
	opts.NewClient = func(cfg *rest.Config, o client.Options) (client.Client, error) {
		c, err := client.NewWithWatch(cfg, o)
		if err != nil {
			return nil, err
		}
		return interceptor.NewClient(c, interceptor.Funcs{Patch: patch}), nil
	}
	mgr, err := ctrlmanager.New(fast, opts)
	Expect(err).NotTo(HaveOccurred())
	Expect(addresses.SetupWithManager(mgr, featureOn())).To(Succeed())
	running = testmgr.Run(ctx, mgr)
}

var _ = Describe("a pod-networks write that loses a race with the default network's writer", func() {
	It("keeps the pod's addresses and tunnel ID, and the other writer's entry", func() {
		const ns = "write-race"
		key := ns + "/tenant"
		w := &otherWriter{ns: ns, pod: "first", defaultPN: podannotation.PodNetwork{
			IPAddresses: []string{"10.244.1.3/24"}, MACAddress: "0a:58:0a:f4:01:03",
			GatewayIPs: []string{"10.244.1.1"}, IPAddress: "10.244.1.3/24", GatewayIP: "10.244.1.1",
			Role: "infrastructure-locked",
		}}
		stopManager()
		startManagerIntercepting(w.intercept)
		DeferCleanup(func() {
			stopManager()
			startManager(featureOn())
		})
		createUDN(ns, "tenant", primaryLayer2("10.60.0.0/16", "fd00:60::/60"))
		createPod(ns, "first")
		first := podNetwork(ns, "first", key)

		w.mu.Lock()
		wrote, writeErr, patchErr := w.wrote, w.writeErr, w.patchErr
		w.mu.Unlock()
		Expect(wrote).To(BeTrue(), "udnkit never wrote the pod's pod-networks")
		Expect(writeErr).NotTo(HaveOccurred(), "the other writer's update")
		Expect(apierrors.IsConflict(patchErr)).To(BeTrue(), "udnkit's first write should have lost the race, got %v", patchErr)

		Expect(first.IPAddresses).To(Equal([]string{"10.60.0.3/16", "fd00:60::3/60"}),
			"the retry writes the addresses allocated before the failed write")
		Expect(first.MACAddress).To(Equal("0a:58:0a:3c:00:03"))
		Expect(first.TunnelID).To(Equal(podannotation.FirstPodTunnelID))
		def, err := podannotation.DecodePodNetwork(getPod(ns, "first").Annotations, ovnk.DefaultNetworkName)
		Expect(err).NotTo(HaveOccurred())
		Expect(def).To(HaveValue(Equal(w.defaultPN)), "the default network's entry survives udnkit's write")

		createPod(ns, "second", onNode(nodeNames[1]))
		second := podNetwork(ns, "second", key)
		Expect(second.IPAddresses).To(Equal([]string{"10.60.0.4/16", "fd00:60::4/60"}))
		Expect(second.TunnelID).To(Equal(podannotation.FirstPodTunnelID + 1))
	})
})
