package addresses_test

import (
	"time"

	ipamclaimsv1alpha1 "github.com/k8snetworkplumbingwg/ipamclaims/pkg/crd/ipamclaims/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/kubevirt"
	"github.com/udnkit/udnkit/ovnk/podannotation"
	"github.com/udnkit/udnkit/reconcilers/addresses"
	"github.com/udnkit/udnkit/reconcilers/addresses/ipalloc"
)

func persistent() *udnv1.IPAMConfig {
	return &udnv1.IPAMConfig{Lifecycle: udnv1.IPAMLifecyclePersistent}
}

func persistentLayer2(subnets ...string) udnv1.NetworkSpec {
	spec := secondaryLayer2(subnets...)
	spec.Layer2.IPAM = persistent()
	return spec
}

// naming is a pod's k8s.v1.cni.cncf.io/networks naming one NAD with an
// ipam-claim-reference.
func naming(nad, claim string) podOpt {
	return annotated(ovnk.AnnotationNetworks, `[{"name":"`+nad+`","ipam-claim-reference":"`+claim+`"}]`)
}

// vmAndFiller fills the /30 network of NAD ns/nad (two addresses): the pod
// of VM claim takes one for IPAMClaim claim, a pod of no VM the other. It
// returns the claim's.
func vmAndFiller(ns, nad, claim string) []string {
	createClaim(ns, claim, ns+"_"+nad)
	createPod(ns, claim+"-launcher", naming(nad, claim), labelled(kubevirt.LabelVMName, claim))
	held := podNetwork(ns, claim+"-launcher", ns+"/"+nad).IPAddresses
	createPod(ns, nad+"-filler", annotated(ovnk.AnnotationNetworks, nad))
	podNetwork(ns, nad+"-filler", ns+"/"+nad)
	return held
}

// deleteClaim deletes the IPAMClaim and waits until it is gone.
func deleteClaim(ns, name string) {
	c := &ipamclaimsv1alpha1.IPAMClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	Expect(k8s.Delete(ctx, c)).To(Succeed())
	Eventually(func() bool { return apiNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(c), c)) }).Should(BeTrue())
}

// Upstream's cluster manager allocates a Secondary Layer2 or Localnet pod's
// addresses through the IPAMClaim its NetworkSelectionElement names when the
// network allows persistent IPs (allocatePodAnnotationWithRollback in
// pkg/allocator/pod/pod_annotation.go: hasPersistentIPs, FindIPAMClaim, the
// claim's status.ips reused by the next pod), writes the claim's status once
// (IPAMClaimReconciler.Reconcile and UpdateIPAMClaimStatus in
// pkg/persistentips/allocator.go: ips, ownerPod, IPsAllocated True with
// reason SuccessfulAllocation), keeps the addresses when the pod goes
// (pkg/clustermanager/pod/allocator.go: doReleaseIPs is false with a claim)
// and releases them with the claim (the claim's delete event).
var _ = Describe("IPAMClaims on Secondary networks with persistent IPs", Ordered, func() {
	const ns = "sec-claims"
	BeforeAll(func() {
		networkWithNAD(ns, "vmnet", persistentLayer2("10.70.0.0/24"))
		cudnWithNAD(ns, "flatnet", udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLocalnet, Localnet: &udnv1.LocalnetConfig{
			Role: udnv1.NetworkRoleSecondary, PhysicalNetworkName: "physnet", Subnets: as[udnv1.CIDR]([]string{"10.71.0.0/24"}), IPAM: persistent()}})
		networkWithNAD(ns, "tiny", persistentLayer2("10.73.0.0/30"))
		networkWithNAD(ns, "tiny2", persistentLayer2("10.74.0.0/30"))
		networkWithNAD(ns, "plain", secondaryLayer2("10.72.0.0/24"))
	})

	It("records the allocation in the claim and gives the VM's migration target the same addresses, on Layer2 and Localnet", func() {
		createClaim(ns, "vm-a.net1", ns+"_vmnet")
		createClaim(ns, "vm-a.net2", "cluster_udn_flatnet")
		nets := annotated(ovnk.AnnotationNetworks, `[{"name":"vmnet","ipam-claim-reference":"vm-a.net1"},{"name":"flatnet","ipam-claim-reference":"vm-a.net2"}]`)
		createPod(ns, "launcher-1", nets, labelled(kubevirt.LabelVMName, "vm-a"))
		src := podNetwork(ns, "launcher-1", ns+"/vmnet")
		Expect(src.IPAddresses).To(Equal([]string{"10.70.0.1/24"}))
		Expect(podNetwork(ns, "launcher-1", ns+"/flatnet").IPAddresses).To(Equal([]string{"10.71.0.1/24"}))
		for claim, ips := range map[string][]string{"vm-a.net1": {"10.70.0.1/24"}, "vm-a.net2": {"10.71.0.1/24"}} {
			c, cond := claimWith(ns, claim, metav1.ConditionTrue, ovnk.ReasonSuccessfulAllocation)
			Expect(c.Status.IPs).To(Equal(ips), claim)
			Expect(c.Status.OwnerPod).To(HaveField("Name", "launcher-1"), claim)
			Expect(cond.ObservedGeneration).To(Equal(c.Generation))
		}

		// Another pod gets other addresses meanwhile.
		createPod(ns, "other", annotated(ovnk.AnnotationNetworks, "vmnet"))
		Expect(podNetwork(ns, "other", ns+"/vmnet").IPAddresses).To(Equal([]string{"10.70.0.2/24"}))

		// The migration target: the claim's addresses and MAC, its own tunnel_id.
		createPod(ns, "launcher-2", nets, labelled(kubevirt.LabelVMName, "vm-a"), onNode("node-b"))
		dst := podNetwork(ns, "launcher-2", ns+"/vmnet")
		Expect(dst.IPAddresses).To(Equal(src.IPAddresses))
		Expect(dst.MACAddress).To(Equal(src.MACAddress))
		Expect(dst.TunnelID).NotTo(Equal(src.TunnelID))
		Expect(podNetwork(ns, "launcher-2", ns+"/flatnet").IPAddresses).To(Equal([]string{"10.71.0.1/24"}))
		// The status is written once: it stays the source's.
		c, _ := claimWith(ns, "vm-a.net1", metav1.ConditionTrue, ovnk.ReasonSuccessfulAllocation)
		Expect(c.Status.OwnerPod).To(HaveField("Name", "launcher-1"))
	})

	It("keeps a claim's addresses when its pods go and across a restart, and frees them when the claim goes", func() {
		held := vmAndFiller(ns, "tiny", "vm-t")
		deletePod(ns, "vm-t-launcher")
		stopManager()
		startManager(featureOn())

		createPod(ns, "squatter", annotated(ovnk.AnnotationNetworks, "tiny"))
		Expect(warning(ns, "squatter", ipalloc.ReasonSubnetExhausted)).To(ContainSubstring("tiny"))
		noEntry(ns, "squatter", ns+"/tiny")
		deletePod(ns, "squatter")

		// The VM starts again: its claim's addresses.
		createPod(ns, "vm-t-launcher-2", naming("tiny", "vm-t"), labelled(kubevirt.LabelVMName, "vm-t"))
		Expect(podNetwork(ns, "vm-t-launcher-2", ns+"/tiny").IPAddresses).To(Equal(held))
		deletePod(ns, "vm-t-launcher-2")

		deleteClaim(ns, "vm-t")
		createPod(ns, "newcomer", annotated(ovnk.AnnotationNetworks, "tiny"))
		Expect(podNetwork(ns, "newcomer", ns+"/tiny").IPAddresses).To(Equal(held))
	})

	It("frees a deleted claim's addresses when its last pod goes, not before", func() {
		held := vmAndFiller(ns, "tiny2", "vm-u")
		deleteClaim(ns, "vm-u")

		// The VM's pod still uses the addresses.
		createPod(ns, "squatter-2", annotated(ovnk.AnnotationNetworks, "tiny2"))
		Expect(warning(ns, "squatter-2", ipalloc.ReasonSubnetExhausted)).To(ContainSubstring("tiny2"))
		deletePod(ns, "squatter-2")

		deletePod(ns, "vm-u-launcher")
		createPod(ns, "newcomer-2", annotated(ovnk.AnnotationNetworks, "tiny2"))
		Expect(podNetwork(ns, "newcomer-2", ns+"/tiny2").IPAddresses).To(Equal(held))
	})

	It("gives a pod its addresses when the claim it named is created", func() {
		createPod(ns, "early", naming("vmnet", "later"))
		Expect(warning(ns, "early", addresses.ReasonIPAMClaimNotFound)).To(ContainSubstring("sec-claims/later"))
		createClaim(ns, "later", ns+"_vmnet")
		// The claim's creation revisits the pod, well before the retry 30 s
		// after the warning.
		Eventually(func(g Gomega) {
			entry, err := podannotation.DecodePodNetwork(getPod(ns, "early").Annotations, ns+"/vmnet")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(entry).NotTo(BeNil())
		}).WithTimeout(10 * time.Second).Should(Succeed())
		c, _ := claimWith(ns, "later", metav1.ConditionTrue, ovnk.ReasonSuccessfulAllocation)
		Expect(c.Status.IPs).To(Equal(podNetwork(ns, "early", ns+"/vmnet").IPAddresses))
	})

	// Upstream ignores a reference on a network without persistent IPs
	// ("referencing an IPAMClaim on network %q which does not honor it",
	// pkg/allocator/pod/pod_annotation.go): the pod gets addresses of its
	// own and the claim is not touched.
	It("ignores a claim named on a network without persistent IPs", func() {
		createClaim(ns, "ignored", ns+"_plain")
		createPod(ns, "on-plain", naming("plain", "ignored"))
		createPod(ns, "on-plain-2", naming("plain", "ignored"))
		Expect(podNetwork(ns, "on-plain", ns+"/plain").IPAddresses).NotTo(Equal(podNetwork(ns, "on-plain-2", ns+"/plain").IPAddresses))
		Consistently(func(g Gomega) {
			var c ipamclaimsv1alpha1.IPAMClaim
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ignored"}, &c)).To(Succeed())
			g.Expect(c.Status.IPs).To(BeEmpty())
			g.Expect(c.Status.Conditions).To(BeEmpty())
		}, "1s", "200ms").Should(Succeed())
	})

	It("refuses a missing claim, another VM's claim and a claim for another network", func() {
		createPod(ns, "no-claim", naming("vmnet", "nope"))
		Expect(warning(ns, "no-claim", addresses.ReasonIPAMClaimNotFound)).To(ContainSubstring("IPAMClaim sec-claims/nope referenced by the pod does not exist"))
		noEntry(ns, "no-claim", ns+"/vmnet")

		Expect(k8s.Create(ctx, &ipamclaimsv1alpha1.IPAMClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vm-c.net1",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: "vm-c", UID: "00000000-0000-0000-0000-0000000000c2"}}},
			Spec: ipamclaimsv1alpha1.IPAMClaimSpec{Network: ns + "_vmnet", Interface: "net1"}})).To(Succeed())
		createPod(ns, "launcher-d", naming("vmnet", "vm-c.net1"), labelled(kubevirt.LabelVMName, "vm-d"))
		Expect(warning(ns, "launcher-d", addresses.ReasonIPAMClaimInUse)).To(ContainSubstring("IPAMClaim sec-claims/vm-c.net1 belongs to VM vm-c; this pod runs VM vm-d"))
		noEntry(ns, "launcher-d", ns+"/vmnet")

		createClaim(ns, "vm-e.net1", ns+"_vmnet")
		createPod(ns, "launcher-e", naming("vmnet", "vm-e.net1"), labelled(kubevirt.LabelVMName, "vm-e"))
		podNetwork(ns, "launcher-e", ns+"/vmnet")
		createPod(ns, "launcher-f", naming("vmnet", "vm-e.net1"), labelled(kubevirt.LabelVMName, "vm-f"))
		Expect(warning(ns, "launcher-f", addresses.ReasonIPAMClaimInUse)).To(ContainSubstring(
			"IPAMClaim sec-claims/vm-e.net1 is held by pod launcher-e of VM vm-e; only the pods of one VM may share a claim, and this pod runs VM vm-f"))
		noEntry(ns, "launcher-f", ns+"/vmnet")

		createClaim(ns, "elsewhere", ns+"_plain")
		createPod(ns, "mismatch", naming("vmnet", "elsewhere"))
		Expect(warning(ns, "mismatch", ipalloc.ReasonInvalidRequest)).To(ContainSubstring(`IPAMClaim sec-claims/elsewhere is for network "sec-claims_plain", not "sec-claims_vmnet"`))
		noEntry(ns, "mismatch", ns+"/vmnet")
	})
})

// Upstream releases a Primary Layer2 claim's addresses on the claim's
// delete event too (the same IPAMClaimReconciler.Reconcile(claim, nil),
// pkg/clustermanager/network_cluster_controller.go's delete handler).
var _ = It("frees a Primary Layer2 claim's addresses when the claim is deleted", func() {
	const ns = "claim-release"
	createUDN(ns, "tenant", primaryLayer2("10.37.0.0/24"))
	createClaim(ns, "vm-r", ns+"_tenant")
	createPod(ns, "launcher", requesting([]string{"10.37.0.9"}, "", "vm-r"), labelled(kubevirt.LabelVMName, "vm-r"))
	Expect(podNetwork(ns, "launcher", ns+"/tenant").IPAddresses).To(Equal([]string{"10.37.0.9/24"}))
	deletePod(ns, "launcher")
	createPod(ns, "taker", requesting([]string{"10.37.0.9"}, "", ""))
	Expect(warning(ns, "taker", ipalloc.ReasonIPAddressConflict)).To(ContainSubstring("10.37.0.9"))
	deletePod(ns, "taker")

	deleteClaim(ns, "vm-r")
	// Within the default wait (60 s): a reconcile that still met the claim's
	// hold retries after 30 s; with the hold kept forever it would never.
	createPod(ns, "taker-2", requesting([]string{"10.37.0.9"}, "", ""))
	Expect(podNetwork(ns, "taker-2", ns+"/tenant").IPAddresses).To(Equal([]string{"10.37.0.9/24"}))
})
