package addresses_test

import (
	"crypto/sha256"
	"fmt"
	"net/netip"
	"strings"
	"time"

	ipamclaimsv1alpha1 "github.com/k8snetworkplumbingwg/ipamclaims/pkg/crd/ipamclaims/v1alpha1"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/kubevirt"
	"github.com/udnkit/udnkit/ovnk/podannotation"
	"github.com/udnkit/udnkit/reconcilers/addresses"
	"github.com/udnkit/udnkit/reconcilers/addresses/ipalloc"
)

// okepCase is OKEP-5233's usage example in one IP family, or both.
type okepCase struct {
	name                          string
	subnets, infra, reserved, gws []string
	request, requestWant          []string
	reservedRequest, reservedWant []string
	routes                        []podannotation.PodRoute
	lla                           string // ipv6_lla_gateway_ip
	autoCount                     int
	autoWant                      [][][2]string // per family, the automatic ranges in order
	exhaustedSubnet               string
}

func as[T ~string](in []string) []T {
	var out []T
	for _, s := range in {
		out = append(out, T(s))
	}
	return out
}

func addrRange(rs ...[2]string) []string {
	var out []string
	for _, r := range rs {
		for a := netip.MustParseAddr(r[0]); a.Compare(netip.MustParseAddr(r[1])) <= 0; a = a.Next() {
			out = append(out, a.String())
		}
	}
	return out
}

var (
	okepV4Auto = [][2]string{{"192.168.100.4", "192.168.100.199"}, {"192.168.100.208", "192.168.100.254"}}
	// IPv6 has no broadcast address: ::ff is a workload address.
	okepV6Auto = [][2]string{{"fd00:100::4", "fd00:100::c7"}, {"fd00:100::d0", "fd00:100::ff"}}
)

var _ = DescribeTable("the OKEP-5233 usage example end to end",
	func(tc okepCase) {
		ns, cudn := "okep-"+tc.name, "network-l2-"+tc.name
		namespace(ns, map[string]string{ovnk.LabelPrimaryUserDefinedNetwork: "", "network": cudn})
		l2 := primaryLayer2(tc.subnets...)
		l2.InfrastructureSubnets = as[udnv1.NetworkCIDR](tc.infra)
		l2.ReservedSubnets = as[udnv1.NetworkCIDR](tc.reserved)
		l2.DefaultGatewayIPs = as[udnv1.IP](tc.gws)
		Expect(k8s.Create(ctx, &udnv1.ClusterUserDefinedNetwork{
			ObjectMeta: metav1.ObjectMeta{Name: cudn},
			Spec: udnv1.ClusterUserDefinedNetworkSpec{
				NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"network": cudn}},
				Network:           udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2, Layer2: l2},
			},
		})).To(Succeed())
		key := ns + "/" + cudn

		// The migrated workload first, so the automatic ones cannot race it.
		createPod(ns, "migrated-app", requesting(tc.request, "00:1A:2B:3C:4D:5E", ""))
		pn := podNetwork(ns, "migrated-app", key)
		Expect(pn.IPAddresses).To(Equal(tc.requestWant))
		Expect(pn.MACAddress).To(Equal("00:1a:2b:3c:4d:5e"))
		Expect(pn.GatewayIPs).To(Equal(tc.gws))
		Expect(pn.Role).To(Equal("primary"))
		Expect(pn.Routes).To(Equal(tc.routes))
		Expect(pn.GatewayIPv6LLA).To(Equal(tc.lla))
		Expect(pn.TunnelID).To(Equal(podannotation.FirstPodTunnelID), "the first pod of the network gets the first pod tunnel ID")
		if len(tc.subnets) == 1 {
			Expect(pn.IPAddress).To(Equal(tc.requestWant[0]))
			Expect(pn.GatewayIP).To(Equal(tc.gws[0]))
		} else {
			Expect(pn.IPAddress).To(BeEmpty())
			Expect(pn.GatewayIP).To(BeEmpty())
		}

		names := seq("auto-", tc.autoCount)
		for _, n := range names {
			createPod(ns, n)
		}
		got := make([][]string, len(tc.subnets))
		tunnelIDs := map[int]string{}
		for _, n := range names {
			pn := podNetwork(ns, n, key)
			Expect(pn.TunnelID).To(BeNumerically(">=", podannotation.FirstPodTunnelID))
			Expect(tunnelIDs).NotTo(HaveKey(pn.TunnelID), "tunnel_id %d given to two pods", pn.TunnelID)
			tunnelIDs[pn.TunnelID] = n
			Expect(pn.IPAddresses).To(HaveLen(len(tc.subnets)))
			first := netip.MustParsePrefix(pn.IPAddresses[0]).Addr()
			Expect(pn.MACAddress).To(Equal(ovnk.MACFromIP(first).String()))
			for f, ip := range pn.IPAddresses {
				got[f] = append(got[f], netip.MustParsePrefix(ip).Addr().String())
			}
		}
		for f, ranges := range tc.autoWant {
			all := addrRange(ranges...)
			Expect(got[f]).To(ConsistOf(all[:tc.autoCount]), "family %d: the automatic pods must hold exactly the OKEP ranges", f)
		}

		// The next automatic pod finds the pool exhausted: an event, no annotation.
		createPod(ns, "one-too-many")
		Expect(warning(ns, "one-too-many", ipalloc.ReasonSubnetExhausted)).To(ContainSubstring(tc.exhaustedSubnet))
		expectNoAnnotation(ns, "one-too-many")
		// The reserved range still serves explicit requests.
		createPod(ns, "reserved-request", requesting(tc.reservedRequest, "", ""))
		Expect(podNetwork(ns, "reserved-request", key).IPAddresses).To(Equal(tc.reservedWant))

		// The CUDN's pool spans its namespaces: a second namespace sees the
		// same conflicts, without learning which pod of which tenant holds
		// the address (tenant-facing messages name only what the tenant may
		// read).
		ns2 := ns + "-2"
		namespace(ns2, map[string]string{ovnk.LabelPrimaryUserDefinedNetwork: "", "network": cudn})
		createPod(ns2, "copycat", requesting(tc.request, "", ""))
		Expect(warning(ns2, "copycat", ipalloc.ReasonIPAddressConflict)).To(And(
			ContainSubstring("is already in use by a workload in another namespace"),
			Not(ContainSubstring(ns+"/")), Not(ContainSubstring("migrated-app"))))
		expectNoAnnotation(ns2, "copycat")
	},
	Entry("IPv4", okepCase{
		name: "v4", subnets: []string{"192.168.100.0/24"}, infra: []string{"192.168.100.0/30"},
		reserved: []string{"192.168.100.200/29"}, gws: []string{"192.168.100.2"},
		request: []string{"192.168.100.205"}, requestWant: []string{"192.168.100.205/24"},
		reservedRequest: []string{"192.168.100.201"}, reservedWant: []string{"192.168.100.201/24"},
		routes:    []podannotation.PodRoute{{Dest: "10.96.0.0/16", NextHop: "192.168.100.2"}, {Dest: "100.65.0.0/16", NextHop: "192.168.100.2"}},
		autoCount: 243, autoWant: [][][2]string{okepV4Auto}, exhaustedSubnet: "192.168.100.0/24",
	}),
	Entry("IPv6", okepCase{
		name: "v6", subnets: []string{"fd00:100::/120"}, infra: []string{"fd00:100::/126"},
		reserved: []string{"fd00:100::c8/125"}, gws: []string{"fd00:100::2"},
		request: []string{"fd00:100::cd"}, requestWant: []string{"fd00:100::cd/120"},
		reservedRequest: []string{"fd00:100::c9"}, reservedWant: []string{"fd00:100::c9/120"},
		routes: []podannotation.PodRoute{{Dest: "fd00:10:96::/112", NextHop: "fd00:100::2"}, {Dest: "fd99::/64", NextHop: "fd00:100::2"}},
		// fd00:100::2's MAC is 0a:58 + sha256("fd00:100::2")[:4] = 0a:58:45:92:9e:61.
		lla:       "fe80::858:45ff:fe92:9e61",
		autoCount: 244, autoWant: [][][2]string{okepV6Auto}, exhaustedSubnet: "fd00:100::/120",
	}),
	Entry("dual-stack", okepCase{
		name: "ds", subnets: []string{"192.168.100.0/24", "fd00:100::/120"}, infra: []string{"192.168.100.0/30", "fd00:100::/126"},
		reserved: []string{"192.168.100.200/29", "fd00:100::c8/125"}, gws: []string{"192.168.100.2", "fd00:100::2"},
		request: []string{"192.168.100.205", "fd00:100::cd"}, requestWant: []string{"192.168.100.205/24", "fd00:100::cd/120"},
		reservedRequest: []string{"fd00:100::c9", "192.168.100.201"}, reservedWant: []string{"192.168.100.201/24", "fd00:100::c9/120"},
		routes: []podannotation.PodRoute{{Dest: "10.96.0.0/16", NextHop: "192.168.100.2"}, {Dest: "100.65.0.0/16", NextHop: "192.168.100.2"},
			{Dest: "fd00:10:96::/112", NextHop: "fd00:100::2"}, {Dest: "fd99::/64", NextHop: "fd00:100::2"}},
		// The router port's MAC comes from the IPv4 gateway: 0a:58:c0:a8:64:02.
		lla: "fe80::858:c0ff:fea8:6402",
		// IPv4 runs out first; IPv6 gives the first 243 of its automatic addresses.
		autoCount: 243, autoWant: [][][2]string{okepV4Auto, okepV6Auto}, exhaustedSubnet: "192.168.100.0/24",
	}),
)
var _ = Describe("requests through the default-network NetworkSelectionElement", func() {
	DescribeTable("IP-only, MAC-only and both, per IP family",
		func(ns string, subnets []string, ips []string, mac string, wantIPs []string, wantMAC string) {
			createUDN(ns, "tenant", primaryLayer2(subnets...))
			createPod(ns, "req", requesting(ips, mac, ""))
			pn := podNetwork(ns, "req", ns+"/tenant")
			if wantIPs != nil {
				Expect(pn.IPAddresses).To(Equal(wantIPs))
			}
			Expect(pn.IPAddresses).To(HaveLen(len(subnets)))
			if wantMAC == "derived" {
				wantMAC = ovnk.MACFromIP(netip.MustParsePrefix(pn.IPAddresses[0]).Addr()).String()
			}
			Expect(pn.MACAddress).To(Equal(wantMAC))
			Expect(pn.GatewayIPs).To(HaveLen(len(subnets)))
			if len(subnets) == 1 {
				Expect(pn.IPAddress).To(Equal(pn.IPAddresses[0]))
			} else {
				Expect(pn.IPAddress).To(BeEmpty(), "ip_address is only for single-stack pods")
			}
		},
		Entry("IPv4 IP only", "v4-ip", []string{"10.10.0.0/24"}, []string{"10.10.0.77"}, "", []string{"10.10.0.77/24"}, "0a:58:0a:0a:00:4d"),
		Entry("IPv4 MAC only", "v4-mac", []string{"10.11.0.0/24"}, nil, "02:00:00:00:00:11", []string{"10.11.0.3/24"}, "02:00:00:00:00:11"),
		Entry("IPv6 IP only", "v6-ip", []string{"fd00:12::/64"}, []string{"fd00:12::77/64"}, "", []string{"fd00:12::77/64"}, "derived"),
		Entry("IPv6 MAC only", "v6-mac", []string{"fd00:13::/64"}, nil, "02:00:00:00:00:13", []string{"fd00:13::3/64"}, "02:00:00:00:00:13"),
		Entry("dual-stack IPs and MAC", "ds-both", []string{"10.14.0.0/24", "fd00:14::/64"}, []string{"fd00:14::9", "10.14.0.9"}, "02:00:00:00:00:14", []string{"10.14.0.9/24", "fd00:14::9/64"}, "02:00:00:00:00:14"),
		Entry("dual-stack dynamic", "ds-dyn", []string{"10.15.0.0/24", "fd00:15::/64"}, nil, "", []string{"10.15.0.3/24", "fd00:15::3/64"}, "0a:58:0a:0f:00:03"),
	)

	It("writes encap_ip from the test mapping annotation", func() {
		const ns = "encap"
		createUDN(ns, "tenant", primaryLayer2("10.16.0.0/24"))
		createPod(ns, "p", annotated(ovnk.AnnotationEncapIPMapping, `{"encap/tenant": "172.18.0.9"}`))
		Expect(podNetwork(ns, "p", ns+"/tenant").EncapIP).To(Equal("172.18.0.9"))
	})
})

var _ = Describe("conflicts", func() {
	DescribeTable("a conflicting request gets a Warning event naming the address and no annotation",
		func(ns string, subnets []string, first, second []podOpt, reason, address string) {
			createUDN(ns, "tenant", primaryLayer2(subnets...))
			createPod(ns, "first", first...)
			podNetwork(ns, "first", ns+"/tenant")
			createPod(ns, "second", second...)
			note := warning(ns, "second", reason)
			Expect(note).To(ContainSubstring(address))
			expectNoAnnotation(ns, "second")
		},
		Entry("IPv4 IP", "c-v4-ip", []string{"10.20.0.0/24"},
			[]podOpt{requesting([]string{"10.20.0.50"}, "", "")}, []podOpt{requesting([]string{"10.20.0.50"}, "", "")},
			ipalloc.ReasonIPAddressConflict, "IP address 10.20.0.50 is already in use by pod/c-v4-ip/first"),
		Entry("IPv4 MAC", "c-v4-mac", []string{"10.21.0.0/24"},
			[]podOpt{requesting(nil, "02:aa:00:00:00:01", "")}, []podOpt{requesting(nil, "02:aa:00:00:00:01", "")},
			ipalloc.ReasonMACAddressConflict, "MAC address 02:aa:00:00:00:01 is already in use by pod/c-v4-mac/first"),
		Entry("a requested MAC equal to another pod's derived MAC", "c-derived", []string{"10.22.0.0/24"},
			nil, []podOpt{requesting(nil, "0a:58:0a:16:00:03", "")},
			ipalloc.ReasonMACAddressConflict, "0a:58:0a:16:00:03"),
		Entry("the gateway", "c-gw", []string{"10.23.0.0/24"},
			nil, []podOpt{requesting([]string{"10.23.0.1"}, "", "")},
			ipalloc.ReasonIPAddressConflict, "10.23.0.1 is already in use by network infrastructure"),
		Entry("IPv6 IP", "c-v6-ip", []string{"fd00:24::/64"},
			[]podOpt{requesting([]string{"fd00:24::50"}, "", "")}, []podOpt{requesting([]string{"fd00:24::50/64"}, "", "")},
			ipalloc.ReasonIPAddressConflict, "fd00:24::50"),
		Entry("dual-stack IPv6 half", "c-ds", []string{"10.25.0.0/24", "fd00:25::/64"},
			[]podOpt{requesting([]string{"10.25.0.50", "fd00:25::50"}, "", "")}, []podOpt{requesting([]string{"10.25.0.51", "fd00:25::50"}, "", "")},
			ipalloc.ReasonIPAddressConflict, "fd00:25::50"),
		Entry("an address outside the subnets", "c-outside", []string{"10.26.0.0/24"},
			nil, []podOpt{requesting([]string{"10.99.0.5"}, "", "")},
			ipalloc.ReasonInvalidRequest, "10.99.0.5 is not inside any of the network's subnets"),
	)

	It("reports a malformed NetworkSelectionElement and writes nothing", func() {
		const ns = "c-malformed"
		createUDN(ns, "tenant", primaryLayer2("10.27.0.0/24"))
		createPod(ns, "bad", annotated(ovnk.AnnotationDefaultNetwork, `{"name": "default", "ips": "10.27.0.5"}`))
		Expect(warning(ns, "bad", addresses.ReasonInvalidSelectionElement)).To(ContainSubstring(ovnk.AnnotationDefaultNetwork))
		expectNoAnnotation(ns, "bad")
	})

	It("frees a pod's addresses on deletion, so the address can be requested again", func() {
		const ns = "c-free"
		createUDN(ns, "tenant", primaryLayer2("10.28.0.0/24"))
		createPod(ns, "old", requesting([]string{"10.28.0.40"}, "", ""))
		podNetwork(ns, "old", ns+"/tenant")
		deletePod(ns, "old")
		createPod(ns, "new", requesting([]string{"10.28.0.40"}, "", ""))
		Expect(podNetwork(ns, "new", ns+"/tenant").IPAddresses).To(Equal([]string{"10.28.0.40/24"}))
	})
})

var _ = Describe("IPAMClaims", func() {
	It("records the allocation in the claim and hands it to the next pod that references it", func() {
		const ns = "claims"
		createUDN(ns, "tenant", primaryLayer2("10.30.0.0/24", "fd00:30::/64"))
		createClaim(ns, "vm-a", ns+"_tenant")
		createPod(ns, "launcher-1", requesting(nil, "", "vm-a"))
		pn := podNetwork(ns, "launcher-1", ns+"/tenant")
		claim, cond := claimWith(ns, "vm-a", metav1.ConditionTrue, ovnk.ReasonSuccessfulAllocation)
		Expect(claim.Status.IPs).To(Equal(pn.IPAddresses))
		Expect(claim.Status.OwnerPod).NotTo(BeNil())
		Expect(claim.Status.OwnerPod.Name).To(Equal("launcher-1"))
		Expect(cond.ObservedGeneration).To(Equal(claim.Generation))

		deletePod(ns, "launcher-1")
		// Another pod must not get the claim's addresses meanwhile.
		createPod(ns, "bystander")
		Expect(podNetwork(ns, "bystander", ns+"/tenant").IPAddresses).NotTo(ContainElements(pn.IPAddresses))

		createPod(ns, "launcher-2", requesting(nil, "", "vm-a"))
		pn2 := podNetwork(ns, "launcher-2", ns+"/tenant")
		Expect(pn2.IPAddresses).To(Equal(pn.IPAddresses))
		Expect(pn2.MACAddress).To(Equal(pn.MACAddress))
		// The status is written once, by the first allocation: ownerPod stays
		// launcher-1 (OVN-Kubernetes' pkg/persistentips/allocator.go
		// Reconcile updates a claim only while its status has no IPs).
		Consistently(func(g Gomega) {
			var c ipamclaimsv1alpha1.IPAMClaim
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "vm-a"}, &c)).To(Succeed())
			g.Expect(c.Status.OwnerPod).To(HaveField("Name", "launcher-1"))
			g.Expect(c.Status.IPs).To(Equal(pn.IPAddresses))
		}).WithTimeout(2 * time.Second).Should(Succeed())
	})

	DescribeTable("a refused claim allocation sets IPsAllocated False with the reason",
		func(ns string, firstReq, secondReq podOpt, reason, text string) {
			createUDN(ns, "tenant", primaryLayer2("10.31.0.0/24"))
			createPod(ns, "holder", firstReq)
			podNetwork(ns, "holder", ns+"/tenant")
			createClaim(ns, "c", ns+"_tenant")
			createPod(ns, "claimant", secondReq)
			warning(ns, "claimant", reason)
			expectNoAnnotation(ns, "claimant")
			claim, cond := claimWith(ns, "c", metav1.ConditionFalse, reason)
			Expect(cond.Message).To(ContainSubstring(text))
			Expect(cond.ObservedGeneration).To(Equal(claim.Generation))
			Expect(claim.Status.IPs).To(BeEmpty())
		},
		Entry("IP conflict", "claim-ip", requesting([]string{"10.31.0.9"}, "", ""), requesting([]string{"10.31.0.9"}, "", "c"),
			ipalloc.ReasonIPAddressConflict, "10.31.0.9"),
		Entry("MAC conflict", "claim-mac", requesting(nil, "02:00:00:00:31:01", ""), requesting(nil, "02:00:00:00:31:01", "c"),
			ipalloc.ReasonMACAddressConflict, "02:00:00:00:31:01"),
	)

	It("serves the pods of one VM only: another VM's pod, or a pod of no VM, gets no addresses from it", func() {
		const ns = "claim-one-vm"
		createUDN(ns, "tenant", primaryLayer2("10.34.0.0/24"))
		createClaim(ns, "vm-a", ns+"_tenant")
		// Admitted together before either had addresses (admission refuses
		// the others once the claim has an owner pod).
		createPod(ns, "launcher-a-1", requesting(nil, "", "vm-a"), labelled(kubevirt.LabelVMName, "vm-a"))
		pn := podNetwork(ns, "launcher-a-1", ns+"/tenant")
		createPod(ns, "launcher-b", requesting(nil, "", "vm-a"), labelled(kubevirt.LabelVMName, "vm-b"))
		createPod(ns, "plain", requesting(nil, "", "vm-a"))
		Expect(warning(ns, "launcher-b", addresses.ReasonIPAMClaimInUse)).To(ContainSubstring(
			"IPAMClaim claim-one-vm/vm-a is held by pod launcher-a-1 of VM vm-a; only the pods of one VM may share a claim, and this pod runs VM vm-b"))
		Expect(warning(ns, "plain", addresses.ReasonIPAMClaimInUse)).To(ContainSubstring("this pod runs no VM"))
		expectNoAnnotation(ns, "launcher-b")
		expectNoAnnotation(ns, "plain")
		// The claim and its status stay the holder's.
		claim, _ := claimWith(ns, "vm-a", metav1.ConditionTrue, ovnk.ReasonSuccessfulAllocation)
		Expect(claim.Status.OwnerPod).To(HaveField("Name", "launcher-a-1"))
		Expect(claim.Status.IPs).To(Equal(pn.IPAddresses))
		// The VM's own migration target shares it.
		createPod(ns, "launcher-a-2", requesting(nil, "", "vm-a"), labelled(kubevirt.LabelVMName, "vm-a"))
		Expect(podNetwork(ns, "launcher-a-2", ns+"/tenant").IPAddresses).To(Equal(pn.IPAddresses))
	})

	It("serves only the VM a claim was made for", func() {
		const ns = "claim-owned"
		createUDN(ns, "tenant", primaryLayer2("10.35.0.0/24"))
		Expect(k8s.Create(ctx, &ipamclaimsv1alpha1.IPAMClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vm-c",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: "vm-c", UID: "00000000-0000-0000-0000-0000000000c1"}}},
			Spec: ipamclaimsv1alpha1.IPAMClaimSpec{Network: ns + "_tenant", Interface: "ovn-udn1"}})).To(Succeed())
		createPod(ns, "launcher-d", requesting(nil, "", "vm-c"), labelled(kubevirt.LabelVMName, "vm-d"))
		Expect(warning(ns, "launcher-d", addresses.ReasonIPAMClaimInUse)).To(ContainSubstring("IPAMClaim claim-owned/vm-c belongs to VM vm-c; this pod runs VM vm-d"))
		expectNoAnnotation(ns, "launcher-d")
		createPod(ns, "launcher-c", requesting(nil, "", "vm-c"), labelled(kubevirt.LabelVMName, "vm-c"))
		podNetwork(ns, "launcher-c", ns+"/tenant")
	})

	It("warns when the referenced claim does not exist", func() {
		const ns = "claim-missing"
		createUDN(ns, "tenant", primaryLayer2("10.32.0.0/24"))
		createPod(ns, "p", requesting(nil, "", "nope"))
		Expect(warning(ns, "p", addresses.ReasonIPAMClaimNotFound)).To(ContainSubstring("claim-missing/nope"))
		expectNoAnnotation(ns, "p")
	})

	It("gives a pod its addresses when the claim it named is created", func() {
		const ns = "claim-late"
		createUDN(ns, "tenant", primaryLayer2("10.36.0.0/24"))
		createPod(ns, "p", requesting(nil, "", "later"))
		Expect(warning(ns, "p", addresses.ReasonIPAMClaimNotFound)).To(ContainSubstring("claim-late/later"))
		createClaim(ns, "later", ns+"_tenant")
		// The claim's creation revisits the pod: well before the refused
		// pod's retry, 30 s after the warning.
		Eventually(func(g Gomega) {
			var p corev1.Pod
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "p"}, &p)).To(Succeed())
			entry, err := podannotation.DecodePodNetwork(p.Annotations, ns+"/tenant")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(entry).NotTo(BeNil())
			g.Expect(entry.IPAddresses).To(ConsistOf(HavePrefix("10.36.0.")))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		c, _ := claimWith(ns, "later", metav1.ConditionTrue, ovnk.ReasonSuccessfulAllocation)
		Expect(c.Status.OwnerPod.Name).To(Equal("p"))
	})

	It("honours the deprecated k8s.ovn.org/primary-udn-ipamclaim on Persistent networks", func() {
		const ns = "claim-deprecated"
		l2 := primaryLayer2("10.33.0.0/24")
		l2.IPAM = &udnv1.IPAMConfig{Lifecycle: udnv1.IPAMLifecyclePersistent}
		createUDN(ns, "tenant", l2)
		createClaim(ns, "old-style", ns+"_tenant")
		createPod(ns, "p", annotated(ovnk.AnnotationPrimaryUDNIPAMClaim, "old-style"))
		pn := podNetwork(ns, "p", ns+"/tenant")
		claim, _ := claimWith(ns, "old-style", metav1.ConditionTrue, ovnk.ReasonSuccessfulAllocation)
		Expect(claim.Status.IPs).To(Equal(pn.IPAddresses))
		Expect(warning(ns, "p", addresses.ReasonDeprecatedAnnotation)).To(ContainSubstring("use ipam-claim-reference"))
	})
})

var _ = Describe("the ovn-kubernetes/default NAD stub", func() {
	It("exists while the feature is on and comes back when deleted", func() {
		key := client.ObjectKey{Namespace: ovnk.DefaultNetworkNamespace, Name: ovnk.DefaultNetworkName}
		var nad nadv1.NetworkAttachmentDefinition
		Eventually(func() error { return k8s.Get(ctx, key, &nad) }).Should(Succeed())
		Expect(nad.Spec.Config).To(ContainSubstring(`"type": "ovn-k8s-cni-overlay"`))
		uid := nad.UID
		Expect(k8s.Delete(ctx, &nad)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, key, &nad)).To(Succeed())
			g.Expect(nad.UID).NotTo(Equal(uid))
		}).Should(Succeed())
	})
})

func addrsOf(pn podannotation.PodNetwork) []string {
	out := make([]string, len(pn.IPAddresses))
	for i, ip := range pn.IPAddresses {
		out[i] = strings.Split(ip, "/")[0]
	}
	return out
}

var _ = DescribeTable("live migration: the target pod shares the source's allocation, released only with the VM's last pod",
	func(ns string, subnets []string, markRunning func(*corev1.Pod)) {
		createUDN(ns, "tenant", primaryLayer2(subnets...))
		vm := []podOpt{labelled(kubevirt.LabelVM, "vm1"), annotated(kubevirt.AnnotationAllowLiveMigration, "")}
		createPod(ns, "virt-launcher-vm1-src", append(vm, onNode("node-a"))...)
		src := podNetwork(ns, "virt-launcher-vm1-src", ns+"/tenant")
		createPod(ns, "virt-launcher-vm1-dst", append(vm, onNode("node-b"))...)
		dst := podNetwork(ns, "virt-launcher-vm1-dst", ns+"/tenant")
		Expect(dst.IPAddresses).To(Equal(src.IPAddresses))
		Expect(dst.MACAddress).To(Equal(src.MACAddress))
		// Both pods publish the node owning the VM's addresses, for the dataplane.
		Eventually(func() []string {
			return []string{getPod(ns, "virt-launcher-vm1-src").Annotations[kubevirt.AnnotationAddressOwnerNode],
				getPod(ns, "virt-launcher-vm1-dst").Annotations[kubevirt.AnnotationAddressOwnerNode]}
		}).Should(Equal([]string{"node-a", "node-a"}))
		migrated := func() []kubevirt.MigratedVM { return kubevirt.MigratedVMs(listPods(ns)) }
		Expect(migrated()).To(BeEmpty(), "until kubevirt marks the target, the VM runs on its owner node")

		// kubevirt marks the target once the VM runs there.
		p := getPod(ns, "virt-launcher-vm1-dst")
		markRunning(p)
		Expect(k8s.Update(ctx, p)).To(Succeed())
		Eventually(migrated).Should(ConsistOf(And(
			HaveField("VM", "vm1"), HaveField("Namespace", ns), HaveField("OwnerNode", "node-a"), HaveField("CurrentNode", "node-b"),
			HaveField("Pod.Name", "virt-launcher-vm1-dst"))))

		// The source pod goes (and with it the owner node's claim on the
		// addresses): they stay reserved for the VM.
		deletePod(ns, "virt-launcher-vm1-src")
		createPod(ns, "squatter", requesting(addrsOf(src), "", ""))
		Expect(warning(ns, "squatter", ipalloc.ReasonIPAddressConflict)).To(ContainSubstring("in use by vm/" + ns + "/vm1"))
		expectNoAnnotation(ns, "squatter")

		deletePod(ns, "virt-launcher-vm1-dst")
		Eventually(migrated).Should(BeEmpty())
		createPod(ns, "heir", requesting(addrsOf(src), "", ""))
		Expect(podNetwork(ns, "heir", ns+"/tenant").IPAddresses).To(Equal(src.IPAddresses))
	},
	Entry("IPv4, target marked with the kubevirt.io/nodeName label", "kubevirt-v4", []string{"10.40.0.0/24"},
		func(p *corev1.Pod) { p.Labels[kubevirt.KeyNodeName] = "node-b" }),
	Entry("IPv6, post-copy target marked with kubevirt.io/migration-target-start-timestamp", "kubevirt-v6", []string{"fd00:41::/64"},
		func(p *corev1.Pod) { p.Annotations[kubevirt.AnnotationMigrationTargetStart] = "1700000000" }),
	Entry("dual-stack", "kubevirt-ds", []string{"10.42.0.0/24", "fd00:42::/64"},
		func(p *corev1.Pod) { p.Labels[kubevirt.KeyNodeName] = "node-b" }),
)

var _ = Describe("a namespace that a CUDN selects later", func() {
	It("gets its waiting pods addressed when the label arrives", func() {
		const ns = "late-label"
		Expect(k8s.Create(ctx, &udnv1.ClusterUserDefinedNetwork{
			ObjectMeta: metav1.ObjectMeta{Name: "late"},
			Spec: udnv1.ClusterUserDefinedNetworkSpec{
				NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"network": "late"}},
				Network:           udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2, Layer2: primaryLayer2("10.70.0.0/24")},
			},
		})).To(Succeed())
		namespace(ns, nil)
		createPod(ns, "waiting")
		expectNoAnnotation(ns, "waiting")
		var n corev1.Namespace
		Expect(k8s.Get(ctx, client.ObjectKey{Name: ns}, &n)).To(Succeed())
		n.Labels = map[string]string{"network": "late", ovnk.LabelPrimaryUserDefinedNetwork: ""}
		Expect(k8s.Update(ctx, &n)).To(Succeed())
		Expect(podNetwork(ns, "waiting", ns+"/late").IPAddresses).To(Equal([]string{"10.70.0.3/24"}))
	})
})

var _ = Describe("the contract with OVN-Kubernetes", func() {
	It("addresses a pod whose default-network annotation uses the short form", func() {
		const ns = "short-form"
		createUDN(ns, "tenant", primaryLayer2("10.80.0.0/24"))
		createPod(ns, "short", annotated(ovnk.AnnotationDefaultNetwork, ovnk.DefaultNetworkNamespace+"/"+ovnk.DefaultNetworkName))
		pn := podNetwork(ns, "short", ns+"/tenant")
		Expect(pn.IPAddresses).To(HaveLen(1))
		Expect(pn.MACAddress).To(Equal(ovnk.MACFromIP(netip.MustParsePrefix(pn.IPAddresses[0]).Addr()).String()))
	})

	It("never hands an IPv6-only network's gateway MAC (upstream's SHA-256 derivation) to a pod", func() {
		const ns = "v6-gateway-mac"
		createUDN(ns, "tenant", primaryLayer2("fd00:81::/64"))
		first := podNetwork(ns, func() string { createPod(ns, "first"); return "first" }(), ns+"/tenant")
		gw := netip.MustParseAddr(first.GatewayIPs[0])
		gwMAC := ovnk.MACFromIP(gw)
		// 0a:58 + the first four bytes of sha256 of the address text.
		sum := sha256.Sum256([]byte(gw.String()))
		Expect(gwMAC.String()).To(Equal(fmt.Sprintf("0a:58:%02x:%02x:%02x:%02x", sum[0], sum[1], sum[2], sum[3])))
		Expect(first.MACAddress).NotTo(Equal(gwMAC.String()))
		createPod(ns, "wants-gw-mac", requesting(nil, gwMAC.String(), ""))
		Expect(warning(ns, "wants-gw-mac", ipalloc.ReasonMACAddressConflict)).To(ContainSubstring(gwMAC.String()))
		expectNoAnnotation(ns, "wants-gw-mac")
	})
})
