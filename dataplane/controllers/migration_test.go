package controllers

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/dataplane/controllers/migration"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/kubevirt"
	"github.com/udnkit/udnkit/ovnk/podannotation"
	"github.com/udnkit/udnkit/reconcilers"
	"github.com/udnkit/udnkit/reconcilers/addresses"
)

// The whole chain in one manager, as cmd/udnkit runs it: a primary Layer2
// UDN (NAD, tunnel keys and node IDs from the reconcilers), a KubeVirt VM's
// addresses (addresses), and its migration to node-b, after which the
// transit router routes the VM's IP via its switch port and reroutes its
// traffic to node-b's gateway router; when the target pod goes the VM is
// back on its owner node and both rows go.
func TestLiveMigrationRoutesFromAPIState(t *testing.T) {
	s := newStack(t)
	if err := reconcilers.SetupWithManager(s.mgr, reconcilers.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	if err := addresses.SetupWithManager(s.mgr, ovnk.DefaultClusterConfig()); err != nil {
		t.Fatal(err)
	}
	o := s.opts()
	o.Policy.EgressIP = true // the transit router's 102 policies, which must outlive the migration's, are EgressIP's
	if _, err := Setup(s.ctx, s.mgr, o); err != nil {
		t.Fatal(err)
	}
	s.start()

	ns := namespace("tenant-vm")
	ns.Labels = map[string]string{ovnk.LabelPrimaryUserDefinedNetwork: ""}
	udn := &udnv1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-vm", Name: "vmnet"},
		Spec: udnv1.UserDefinedNetworkSpec{Topology: udnv1.NetworkTopologyLayer2,
			Layer2: &udnv1.Layer2Config{Role: udnv1.NetworkRolePrimary, Subnets: udnv1.DualStackCIDRs{"10.150.0.0/16", "fd00:150::/64"}}}}
	s.create(ns, udn,
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}})
	const tr, sw = "tenant.vm_vmnet_transit_router", "tenant.vm_vmnet_ovn_layer2_switch"
	s.eventually("both nodes on the transit router", func() bool {
		show := s.nbctl("show")
		return strings.Contains(show, "trtor-GR_tenant.vm_vmnet_node-a") && strings.Contains(show, "trtor-GR_tenant.vm_vmnet_node-b")
	})

	vmPod := func(name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-vm", Name: name,
			Labels:      map[string]string{kubevirt.LabelVM: "vm1"},
			Annotations: map[string]string{kubevirt.AnnotationAllowLiveMigration: ""}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	}
	src, dst := vmPod("virt-launcher-vm1-src", "node-a"), vmPod("virt-launcher-vm1-dst", "node-b")
	s.create(src)
	ips := podIPs(s, src)
	s.create(dst)
	_ = podIPs(s, dst) // the target shares the allocation

	routes := func() string { return normalized(s.nbctl("lr-route-list", tr)) }
	policies := func() string { return normalized(s.nbctl("lr-policy-list", tr)) }
	time.Sleep(time.Second) // a negative check: the VM still runs on its owner node
	if strings.Contains(routes(), ips[0]+" "+ips[0]) || strings.Contains(policies(), "reroute") {
		t.Fatalf("routes before the migration:\n%s\n%s", routes(), policies())
	}

	// kubevirt marks the target: the VM runs on node-b now.
	if err := s.c.Get(s.ctx, client.ObjectKeyFromObject(dst), dst); err != nil {
		t.Fatal(err)
	}
	dst.Labels[kubevirt.KeyNodeName] = "node-b"
	if err := s.c.Update(s.ctx, dst); err != nil {
		t.Fatal(err)
	}
	var nodeB corev1.Node
	if err := s.c.Get(s.ctx, client.ObjectKey{Name: "node-b"}, &nodeB); err != nil {
		t.Fatal(err)
	}
	id, err := strconv.Atoi(nodeB.Annotations[ovnk.AnnotationNodeID])
	if err != nil {
		t.Fatal(err)
	}
	// OKEP-5094: node-b's transit peer subnets start at 2·ID; the GR takes the odd address.
	grV4, grV6 := fmt.Sprintf("100.88.0.%d", 2*id+1), fmt.Sprintf("fd97::%x", 2*id+1)
	wantRoutes := []string{ips[0] + " " + ips[0] + " dst-ip trtos-" + sw, ips[1] + " " + ips[1] + " dst-ip trtos-" + sw}
	wantPolicies := []string{"10 ip4.src == " + ips[0] + " reroute " + grV4, "10 ip6.src == " + ips[1] + " reroute " + grV6}
	s.eventually("the migrated VM's route and reroute policy", func() bool {
		r, p := routes(), policies()
		for _, w := range wantRoutes {
			if !strings.Contains(r, w) {
				return false
			}
		}
		for _, w := range wantPolicies {
			if !strings.Contains(p, w) {
				return false
			}
		}
		return true
	})

	// A NAD with udnkit's label and no owner names the network, and a pod of
	// its namespace poses as a VM migrated to node-b with an address of the
	// network: the dataplane ignores the NAD, so no route or reroute is
	// programmed for it on the network's transit router.
	var victimNAD nadv1.NetworkAttachmentDefinition
	if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: "tenant-vm", Name: "vmnet"}, &victimNAD); err != nil {
		t.Fatal(err)
	}
	beforeRoutes, beforePolicies := routes(), policies()
	forgedVM := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "attacker", Name: "virt-launcher-evil",
		Labels: map[string]string{kubevirt.LabelVM: "evil", kubevirt.KeyNodeName: "node-b"},
		Annotations: map[string]string{kubevirt.AnnotationAllowLiveMigration: "", kubevirt.AnnotationAddressOwnerNode: "node-a",
			ovnk.AnnotationPodNetworks: `{"attacker/evil":{"ip_addresses":["10.150.0.200/16"],"mac_address":"0a:58:0a:96:00:c8","role":"primary"}}`}},
		Spec: corev1.PodSpec{NodeName: "node-b", Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	s.create(namespace("attacker"), labeledNAD("attacker", "evil", l2Conf("tenant-vm_vmnet", "attacker/evil", "10.150.0.0/16", ""),
		idAnnotations(victimNAD.Annotations[ovnk.AnnotationNetworkID], victimNAD.Annotations[ovnk.AnnotationTunnelKeys])), forgedVM)
	s.consistently("the transit router's routes with a forged NAD's VM pod", 2*time.Second, beforeRoutes+beforePolicies,
		func() string { return routes() + policies() })

	// The target pod goes: the VM is back in its source pod on node-a.
	if err := s.c.Delete(s.ctx, dst, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	s.eventually("routes removed when the VM is back", func() bool {
		r, p := routes(), policies()
		return !strings.Contains(r, ips[0]+" "+ips[0]) && !strings.Contains(r, ips[1]+" "+ips[1]) && !strings.Contains(p, " reroute ")
	})
	if !strings.Contains(policies(), "102 ") {
		t.Errorf("the Layer2 topology's own policies went with the migration rows:\n%s", policies())
	}

	// The VM moves to a node that has no node ID (no Node object at all):
	// no route can be programmed, and its pod says why.
	ghost := vmPod("virt-launcher-vm1-ghost", "node-ghost")
	s.create(ghost)
	_ = podIPs(s, ghost)
	if err := s.c.Get(s.ctx, client.ObjectKeyFromObject(ghost), ghost); err != nil {
		t.Fatal(err)
	}
	ghost.Labels[kubevirt.KeyNodeName] = "node-ghost"
	if err := s.c.Update(s.ctx, ghost); err != nil {
		t.Fatal(err)
	}
	s.eventually("a Warning Event on the VM's pod", func() bool {
		var evs eventsv1.EventList
		if s.c.List(s.ctx, &evs, client.InNamespace("tenant-vm")) != nil {
			return false
		}
		for _, e := range evs.Items {
			if e.Regarding.Name == ghost.Name && e.Reason == migration.ReasonLiveMigrationWaiting && e.Type == corev1.EventTypeWarning &&
				strings.Contains(e.Note, "runs on node node-ghost, which has no k8s.ovn.org/node-id yet") {
				return true
			}
		}
		return false
	})
	if strings.Contains(policies(), " reroute ") {
		t.Errorf("a reroute was programmed for a node without a node ID:\n%s", policies())
	}
}

// podIPs waits for the pod's addresses on tenant-vm/vmnet and returns them without prefix length.
func podIPs(s *stack, pod *corev1.Pod) []string {
	s.t.Helper()
	var ips []string
	s.eventually("pod "+pod.Name+" addressed", func() bool {
		var p corev1.Pod
		if s.c.Get(s.ctx, client.ObjectKeyFromObject(pod), &p) != nil {
			return false
		}
		all, err := podannotation.DecodePodNetworks(p.Annotations)
		if err != nil {
			return false
		}
		ips = nil
		for _, a := range all["tenant-vm/vmnet"].IPAddresses {
			ips = append(ips, strings.Split(a, "/")[0])
		}
		return len(ips) == 2
	})
	return ips
}
