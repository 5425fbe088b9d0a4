package addresses_test

import (
	"net/netip"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/netconf"
	"github.com/udnkit/udnkit/reconcilers/addresses"
	"github.com/udnkit/udnkit/reconcilers/addresses/attach"
	"github.com/udnkit/udnkit/reconcilers/addresses/ipalloc"
)

// networkWithNAD creates the UDN ns/name and the NAD udnkit's NAD
// reconciler renders for it (netconf.NewNAD, owned by the UDN), in a
// namespace labelled for a Primary network when the network is one.
func networkWithNAD(ns, name string, spec udnv1.NetworkSpec) {
	nsw := testobj.MakeNamespace(ns)
	if spec.IsPrimary() {
		nsw = nsw.Primary()
	}
	if err := k8s.Create(ctx, nsw.Obj()); client.IgnoreAlreadyExists(err) != nil {
		Expect(err).NotTo(HaveOccurred())
	}
	udn := testobj.MakeUDN(ns, name).Spec(spec).Obj()
	Expect(k8s.Create(ctx, udn)).To(Succeed())
	nad, err := netconf.NewNAD(netconf.NADSource{Kind: udnv1.KindUserDefinedNetwork, Meta: udn.ObjectMeta, Spec: spec}, ns, featureOn(), nil, ovnk.NetworkIDs{})
	Expect(err).NotTo(HaveOccurred())
	Expect(k8s.Create(ctx, nad)).To(Succeed())
}

// cudnWithNAD creates the CUDN name selecting namespace ns by its name and
// the NAD rendered for it there.
func cudnWithNAD(ns, name string, spec udnv1.NetworkSpec) {
	cudn := testobj.MakeCUDN(name).Obj()
	cudn.Spec.NamespaceSelector.MatchLabels = map[string]string{"kubernetes.io/metadata.name": ns}
	cudn.Spec.Network = spec
	Expect(k8s.Create(ctx, cudn)).To(Succeed())
	nad, err := netconf.NewNAD(netconf.NADSource{Kind: udnv1.KindClusterUserDefinedNetwork, Meta: cudn.ObjectMeta, Spec: spec}, ns, featureOn(), nil, ovnk.NetworkIDs{})
	Expect(err).NotTo(HaveOccurred())
	Expect(k8s.Create(ctx, nad)).To(Succeed())
}

// setHostSubnets writes the node's k8s.ovn.org/node-subnets entry for
// network, as reconcilers/nodes does, keeping the other networks'.
func setHostSubnets(node, network string, cidrs ...string) {
	var n corev1.Node
	Expect(k8s.Get(ctx, client.ObjectKey{Name: node}, &n)).To(Succeed())
	all, err := ovnk.DecodeNodeSubnets(&n)
	Expect(err).NotTo(HaveOccurred())
	all[network] = nil
	for _, c := range cidrs {
		all[network] = append(all[network], netip.MustParsePrefix(c))
	}
	patch := client.MergeFrom(n.DeepCopy())
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[ovnk.AnnotationNodeSubnets] = ovnk.EncodeNodeSubnets(all)
	Expect(k8s.Patch(ctx, &n, patch)).To(Succeed())
}

func layer3(role udnv1.NetworkRole, subnets ...udnv1.Layer3Subnet) udnv1.NetworkSpec {
	return udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer3, Layer3: &udnv1.Layer3Config{Role: role, Subnets: subnets}}
}

func secondaryLayer2(subnets ...string) udnv1.NetworkSpec {
	return udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2, Layer2: &udnv1.Layer2Config{Role: udnv1.NetworkRoleSecondary, Subnets: as[udnv1.CIDR](subnets)}}
}

// entryJSON is what `kubectl get pod -o jsonpath` shows of the pod's
// k8s.ovn.org/pod-networks, once it has an entry for key.
func entryJSON(ns, name, key string) string {
	podNetwork(ns, name, key)
	return getPod(ns, name).Annotations[ovnk.AnnotationPodNetworks]
}

func noEntry(ns, name, key string) {
	Consistently(func(g Gomega) {
		var p corev1.Pod
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p)).To(Succeed())
		g.Expect(p.Annotations[ovnk.AnnotationPodNetworks]).NotTo(ContainSubstring(`"` + key + `"`))
	}, "1s", "200ms").Should(Succeed())
}

var _ = Describe("pods of a Primary Layer3 network", Ordered, func() {
	const ns, network = "l3-green", "l3-green_green"
	BeforeAll(func() {
		networkWithNAD(ns, "green", layer3(udnv1.NetworkRolePrimary,
			udnv1.Layer3Subnet{CIDR: "10.20.0.0/16", HostSubnet: 24}, udnv1.Layer3Subnet{CIDR: "fd00:20::/48", HostSubnet: 64}))
		setHostSubnets("node-a", network, "10.20.1.0/24", "fd00:20:1::/64")
	})

	// The entry upstream's zone controller writes for a Primary Layer3 pod
	// (allocatePodAnnotation over the node switch's logical switch manager,
	// routes by AddRoutesGatewayIP in pkg/allocator/pod/pod_annotation.go):
	// the host subnet's first free address after the network address, the
	// gateway (.1) and the management port (.2); the MAC derived from it
	// (util.IPAddrToHWAddr: 0a:58 and the IPv4 address); per family the
	// cluster subnet, the service CIDR and the UDN join subnet via the
	// gateway, which is also the default route. OVN-Kubernetes' own "default"
	// entry (role infrastructure-locked, which udnkit does not write) stays.
	It("gets the entry upstream writes from its node's host subnet, next to OVN-Kubernetes' default entry", func() {
		ovnDefault := `{"default":{"ip_addresses":["10.244.1.5/24"],"mac_address":"0a:58:0a:f4:01:05","role":"infrastructure-locked"}}`
		createPod(ns, "web", onNode("node-a"), annotated(ovnk.AnnotationPodNetworks, ovnDefault))
		Expect(entryJSON(ns, "web", ns+"/green")).To(Equal(`{"default":{"ip_addresses":["10.244.1.5/24"],"mac_address":"0a:58:0a:f4:01:05","role":"infrastructure-locked"},` +
			`"l3-green/green":{"ip_addresses":["10.20.1.3/24","fd00:20:1::3/64"],"mac_address":"0a:58:0a:14:01:03","gateway_ips":["10.20.1.1","fd00:20:1::1"],` +
			`"routes":[{"dest":"10.20.0.0/16","nextHop":"10.20.1.1"},{"dest":"10.96.0.0/16","nextHop":"10.20.1.1"},{"dest":"100.65.0.0/16","nextHop":"10.20.1.1"},` +
			`{"dest":"fd00:20::/48","nextHop":"fd00:20:1::1"},{"dest":"fd00:10:96::/112","nextHop":"fd00:20:1::1"},{"dest":"fd99::/64","nextHop":"fd00:20:1::1"}],` +
			`"role":"primary"}}`))
	})

	It("makes a pod on a node without host subnet wait, with an event, and gives it its entry once the node has one", func() {
		createPod(ns, "waiting", onNode("node-b"))
		Expect(warning(ns, "waiting", attach.ReasonHostSubnetMissing)).To(ContainSubstring(
			"failed to allocate addresses on network l3-green/green: node node-b has no host subnet of network l3-green_green in annotation k8s.ovn.org/node-subnets yet"))
		noEntry(ns, "waiting", ns+"/green")
		setHostSubnets("node-b", network, "10.20.2.0/24", "fd00:20:2::/64")
		Expect(podNetwork(ns, "waiting", ns+"/green").IPAddresses).To(Equal([]string{"10.20.2.3/24", "fd00:20:2::3/64"}))

		// The default-network element's MAC is honoured on Layer3, its ips
		// are not (overrideActiveNSEWithDefaultNSE keeps node-local IPAM).
		createPod(ns, "own-mac", onNode("node-b"), requesting([]string{"10.20.2.200/24"}, "02:00:00:00:20:01", ""))
		mac := podNetwork(ns, "own-mac", ns+"/green")
		Expect(mac.MACAddress).To(Equal("02:00:00:00:20:01"))
		Expect(mac.IPAddresses).To(Equal([]string{"10.20.2.4/24", "fd00:20:2::4/64"}))
	})

	// The addresses of a pod that finished go back to its node's pool, and
	// a restarted reconciler restores every written entry before handing
	// out addresses: the next pod gets the finished pod's address, not the
	// running pod's.
	It("frees a finished pod's address and never hands out a held one after a restart", func() {
		createPod(ns, "batch", onNode("node-a"))
		Expect(podNetwork(ns, "batch", ns+"/green").IPAddresses[0]).To(Equal("10.20.1.4/24"))
		finish(ns, "batch")
		stopManager()
		startManager(featureOn())
		createPod(ns, "after-restart", onNode("node-a"))
		Expect(podNetwork(ns, "after-restart", ns+"/green").IPAddresses[0]).To(Equal("10.20.1.4/24"))
	})
})

// finish marks the pod Succeeded, as the kubelet does.
func finish(ns, name string) {
	p := getPod(ns, name)
	p.Status.Phase = corev1.PodSucceeded
	Expect(k8s.Status().Update(ctx, p)).To(Succeed())
}

var _ = Describe("pods naming Secondary networks in k8s.v1.cni.cncf.io/networks", Ordered, func() {
	const ns = "secondaries"
	BeforeAll(func() {
		networkWithNAD(ns, "red", secondaryLayer2("10.30.0.0/24"))
		cudnWithNAD(ns, "flat", udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLocalnet, Localnet: &udnv1.LocalnetConfig{
			Role: udnv1.NetworkRoleSecondary, PhysicalNetworkName: "physnet", IPAM: &udnv1.IPAMConfig{Mode: udnv1.IPAMDisabled}}})
		networkWithNAD(ns, "yellow", layer3(udnv1.NetworkRoleSecondary, udnv1.Layer3Subnet{CIDR: "10.40.0.0/16", HostSubnet: 24}))
		setHostSubnets("node-a", ns+"_yellow", "10.40.5.0/24")
		// A NAD udnkit does not own (no label, no owner): left alone.
		Expect(k8s.Create(ctx, &nadv1.NetworkAttachmentDefinition{ObjectMeta: testobj.MakeNAD(ns, "macvlan").Obj().ObjectMeta,
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"1.0.0","name":"macvlan","type":"macvlan"}`}})).To(Succeed())
	})

	// Secondary Layer2: the cluster manager's pool over the subnet without
	// gateway nor management port (newIPAllocatorForNetwork), so .1 first,
	// and a tunnel_id (DoesNetworkRequireTunnelIDs); no routes nor gateway.
	// Localnet without IPAM: the MAC only ("ip_addresses":null). Secondary
	// Layer3: the node's host subnet and the cluster subnet route.
	It("gives each NAD udnkit owns its entry, keyed by the NAD, with role secondary", func() {
		createPod(ns, "multi", onNode("node-a"), annotated(ovnk.AnnotationNetworks,
			`[{"name":"red","interface":"net1"},{"name":"flat","namespace":"secondaries","mac":"02:00:00:00:aa:01"},{"name":"yellow"},{"name":"macvlan"}]`))
		Eventually(func() string { return entryJSON(ns, "multi", ns+"/yellow") }).Should(Equal(
			`{"secondaries/flat":{"ip_addresses":null,"mac_address":"02:00:00:00:aa:01","role":"secondary"},` +
				`"secondaries/red":{"ip_addresses":["10.30.0.1/24"],"mac_address":"0a:58:0a:1e:00:01","ip_address":"10.30.0.1/24","tunnel_id":10,"role":"secondary"},` +
				`"secondaries/yellow":{"ip_addresses":["10.40.5.3/24"],"mac_address":"0a:58:0a:28:05:03","routes":[{"dest":"10.40.0.0/16","nextHop":"10.40.5.1"}],` +
				`"ip_address":"10.40.5.3/24","role":"secondary"}}`))

		createPod(ns, "short", onNode("node-a"), annotated(ovnk.AnnotationNetworks, "red@net1, secondaries/flat"))
		Expect(podNetwork(ns, "short", ns+"/red").IPAddresses).To(Equal([]string{"10.30.0.2/24"}))
		Expect(podNetwork(ns, "short", ns+"/red").TunnelID).To(Equal(11))
		Expect(podNetwork(ns, "short", ns+"/flat").MACAddress).NotTo(BeEmpty())
	})

	// Two interfaces on one network: upstream keys the second attachment
	// "ns/name/1" (GetIndexedNADKey in pkg/util/multi_network.go) and its
	// cluster manager gives each key its own addresses and tunnel ID
	// (pkg/clustermanager/pod/allocator.go, podIdAllocationName(nadKey,
	// uid)); a Layer3 network named twice draws twice from the node's host
	// subnet.
	It("gives a NAD named twice two entries, the second keyed ns/name/1, each with its own addresses", func() {
		createPod(ns, "twice", onNode("node-a"), annotated(ovnk.AnnotationNetworks, "red,yellow,red,yellow"))
		Eventually(func() string { return entryJSON(ns, "twice", ns+"/yellow/1") }).Should(Equal(
			`{"secondaries/red":{"ip_addresses":["10.30.0.3/24"],"mac_address":"0a:58:0a:1e:00:03","ip_address":"10.30.0.3/24","tunnel_id":12,"role":"secondary"},` +
				`"secondaries/red/1":{"ip_addresses":["10.30.0.4/24"],"mac_address":"0a:58:0a:1e:00:04","ip_address":"10.30.0.4/24","tunnel_id":13,"role":"secondary"},` +
				`"secondaries/yellow":{"ip_addresses":["10.40.5.4/24"],"mac_address":"0a:58:0a:28:05:04","routes":[{"dest":"10.40.0.0/16","nextHop":"10.40.5.1"}],` +
				`"ip_address":"10.40.5.4/24","role":"secondary"},` +
				`"secondaries/yellow/1":{"ip_addresses":["10.40.5.5/24"],"mac_address":"0a:58:0a:28:05:05","routes":[{"dest":"10.40.0.0/16","nextHop":"10.40.5.1"}],` +
				`"ip_address":"10.40.5.5/24","role":"secondary"}}`))
	})

	It("refuses a NAD of another namespace, static IPs on a network with subnets and a malformed list", func() {
		createPod(ns, "foreign", onNode("node-a"), annotated(ovnk.AnnotationNetworks, "l3-green/green"))
		Expect(warning(ns, "foreign", attach.ReasonCrossNamespaceAttachment)).To(ContainSubstring("names NAD l3-green/green of another namespace"))

		createPod(ns, "static", onNode("node-a"), annotated(ovnk.AnnotationNetworks, `[{"name":"red","ips":["10.30.0.77/24"]}]`))
		Expect(warning(ns, "static", ipalloc.ReasonInvalidRequest)).To(ContainSubstring("ips [10.30.0.77/24]: static addresses are taken on Primary Layer2 networks and on networks without subnets only"))
		noEntry(ns, "static", ns+"/red")

		createPod(ns, "garbled", onNode("node-a"), annotated(ovnk.AnnotationNetworks, `[{"name":`))
		Expect(warning(ns, "garbled", addresses.ReasonInvalidSelectionElement)).To(ContainSubstring("annotation k8s.v1.cni.cncf.io/networks"))
		expectNoAnnotation(ns, "garbled")
	})

	It("waits for a NAD that does not exist yet, and leaves a labelled NAD that fails the ownership rule alone", func() {
		createPod(ns, "early", onNode("node-a"), annotated(ovnk.AnnotationNetworks, "blue,forged"))
		// Labelled and rendered like udnkit's, but its controller UDN does
		// not exist (nadtrust: OwnerNotFound).
		meta := testobj.MakeUDN(ns, "forged").Obj().ObjectMeta
		meta.UID = "00000000-0000-0000-0000-000000000001"
		forged, err := netconf.NewNAD(netconf.NADSource{Kind: udnv1.KindUserDefinedNetwork, Meta: meta, Spec: secondaryLayer2("10.30.0.0/24")},
			ns, featureOn(), nil, ovnk.NetworkIDs{})
		Expect(err).NotTo(HaveOccurred())
		forged.Finalizers = nil
		Expect(k8s.Create(ctx, forged)).To(Succeed())
		noEntry(ns, "early", ns+"/blue")
		networkWithNAD(ns, "blue", secondaryLayer2("10.50.0.0/24"))
		Expect(podNetwork(ns, "early", ns+"/blue").IPAddresses).To(Equal([]string{"10.50.0.1/24"}))
		noEntry(ns, "early", ns+"/forged")
	})

	It("restores the written entries after a restart and frees those of deleted pods", func() {
		deletePod(ns, "short") // held 10.30.0.2 and tunnel_id 11
		stopManager()
		startManager(featureOn())
		createPod(ns, "late", onNode("node-a"), annotated(ovnk.AnnotationNetworks, "red"))
		late := podNetwork(ns, "late", ns+"/red")
		// .1 and tunnel_id 10 stay multi's; short's .2 and 11 are free again.
		Expect(late.IPAddresses).To(Equal([]string{"10.30.0.2/24"}))
		Expect(late.TunnelID).To(Equal(11))
		// twice's second entry (.4, 13) was restored too, under its own key.
		createPod(ns, "later", onNode("node-a"), annotated(ovnk.AnnotationNetworks, "red"))
		later := podNetwork(ns, "later", ns+"/red")
		Expect(later.IPAddresses).To(Equal([]string{"10.30.0.5/24"}))
		Expect(later.TunnelID).To(Equal(14))
	})
})

// One reconcile writes both: the Secondary entry first, then the Primary
// Layer2 entry on top of it under the pod's new resourceVersion.
var _ = It("gives a Primary Layer2 pod its Secondary entries too, keeping both", func() {
	const ns = "l2-with-side"
	createUDN(ns, "blue", primaryLayer2("10.60.0.0/24"))
	networkWithNAD(ns, "side", secondaryLayer2("10.61.0.0/24"))
	createPod(ns, "both", onNode("node-a"), annotated(ovnk.AnnotationNetworks, "side"))
	Expect(podNetwork(ns, "both", ns+"/side").IPAddresses).To(Equal([]string{"10.61.0.1/24"}))
	Expect(podNetwork(ns, "both", ns+"/blue").Role).To(Equal("primary"))
	Expect(podNetwork(ns, "both", ns+"/side").Role).To(Equal("secondary"))
})
