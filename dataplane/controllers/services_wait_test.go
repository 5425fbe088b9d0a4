package controllers

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/ovnk"
)

// A zone node whose gateway router the topology has not written yet
// (node-b has no node ID yet, so the Layer2 topology leaves it out) holds
// back its own per-node load balancers only, without a failed reconcile:
// the cluster-wide one and node-a's are applied, and the services
// controller waits for node-b's router (requeued after zone.TopologyWait)
// as the other controllers wait for their topology. Once node-b has its
// node ID, its gateway router is written and the NodePort Service's
// per-node load balancers land on both nodes' routers.
func TestServiceLoadBalancersWaitForTheGatewayRouter(t *testing.T) {
	s, _ := policyStack(t, false)
	gw := strings.NewReplacer("node1", "node-b", "192.0.2.2/24", "192.0.2.3/24", "2001:db8::2/64", "2001:db8::3/64",
		"0a:58:c0:00:02:02", "0a:58:c0:00:02:03").Replace(node1Gateway)
	nodeB := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b", Annotations: map[string]string{
		ovnk.AnnotationLayer2TopologyVersion: "2.0", ovnk.AnnotationNodeChassisID: "chassis-node-b", ovnk.AnnotationL3GatewayConfig: gw,
		ovnk.AnnotationHostCIDRs: `["192.0.2.3/24","2001:db8::3/64"]`}}}
	s.create(nodeB)
	before, _ := reconcileErrors(t, "dataplane-services")
	np := lbService("ns1", "np", "10.0.0.102", "fd00:10:96::102")
	np.Spec.Type, np.Spec.Ports[0].NodePort = corev1.ServiceTypeNodePort, 30081
	s.create(np, mirroredSlice("ns1", "np-v4", "np", blueNet, discoveryv1.AddressTypeIPv4, "node-a", "203.203.0.5"))
	failures := func() string {
		n, _ := reconcileErrors(t, "dataplane-services")
		return fmt.Sprint(n)
	}
	s.consistently("the services controller's reconcile errors while node-b's router is missing", 3*time.Second, fmt.Sprint(before), failures)
	grA, grB := "GR_ns1_tenant.blue_node-a", "GR_ns1_tenant.blue_node-b"
	nodeALB := "ns1_tenant.blue_Service_ns1/np_TCP_node_router+switch_node-a"
	s.eventually("the cluster-wide and node-a's load balancers while node-b's router is missing", func() bool {
		return s.lbList("ns1_tenant.blue_Service_ns1/np_TCP_cluster") != "" && slices.Equal(s.lbsOn("Logical_Router", grA), []string{nodeALB})
	})
	if got := s.column("Load_Balancer", "name"); slices.ContainsFunc(got, func(n string) bool { return strings.HasSuffix(n, "node-b") }) {
		t.Errorf("node-b's load balancers applied before its router: %v", got)
	}

	var cur corev1.Node
	if err := s.c.Get(s.ctx, client.ObjectKeyFromObject(nodeB), &cur); err != nil {
		t.Fatal(err)
	}
	cur.Annotations[ovnk.AnnotationNodeID] = "3"
	if err := s.c.Update(s.ctx, &cur); err != nil {
		t.Fatal(err)
	}
	s.eventually("the per-node load balancers on node-a's and node-b's routers", func() bool {
		return slices.Equal(s.lbsOn("Logical_Router", grA), []string{nodeALB}) &&
			len(s.lbsOn("Logical_Router", grB)) == 1
	})
	if got := failures(); got != fmt.Sprint(before) {
		t.Errorf("the services controller's reconcile errors went from %v to %s", before, got)
	}
}
