package controllers

import (
	"strings"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udnkit/udnkit/ovnk"
)

// A network whose reconcile is held up (here: its lock held, as a long
// Apply of a large network holds a worker) does not hold up another
// network's: the other is programmed meanwhile, and the first one once it
// is let go. With one worker the second network would wait in the queue.
func TestStuckNetworkReconcileDoesNotHoldOthers(t *testing.T) {
	s := newStack(t)
	r, err := Setup(s.ctx, s.mgr, s.opts())
	if err != nil {
		t.Fatal(err)
	}
	s.start()
	s.create(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1", Annotations: map[string]string{ovnk.AnnotationNodeID: "2"}}},
		namespace("ns1"), namespace("ns2"))
	nad := func(ns, name, config string) *nadv1.NetworkAttachmentDefinition {
		return &nadv1.NetworkAttachmentDefinition{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
				Labels:      map[string]string{ovnk.LabelUserDefinedNetwork: ""},
				Annotations: map[string]string{ovnk.AnnotationNetworkID: "1", ovnk.AnnotationTunnelKeys: "[16711685,16715780]"}},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: config},
		}
	}
	const blue, red = "ns1_tenant-blue", "ns2_tenant-red"
	release := r.Layer2.Networks.Lock(blue)
	released := false
	defer func() {
		if !released {
			release()
		}
	}()
	s.createNAD(nad("ns1", "tenant-blue", l2Config))
	s.eventually("a worker waits to reconcile the blue network", func() bool { return r.Layer2.Networks.Waiting(blue) > 0 })

	s.createNAD(nad("ns2", "tenant-red", redConfig))
	routers := func() string { return s.nbctl("--bare", "--columns=name", "list", "Logical_Router") }
	s.eventually("the red network is programmed while the blue one's reconcile waits", func() bool {
		return strings.Contains(routers(), "ns2_tenant.red_transit_router")
	})
	if strings.Contains(routers(), "ns1_tenant.blue_transit_router") {
		t.Fatal("the blue network was programmed while its reconcile was held")
	}
	release()
	released = true
	s.eventually("the blue network is programmed once let go", func() bool {
		return strings.Contains(routers(), "ns1_tenant.blue_transit_router")
	})
}
