package addresses_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
	"github.com/udnkit/udnkit/reconcilers/addresses/ipalloc"
)

// Address theft: pod-networks annotations written while no
// manager runs (before the admission policies existed, or by a writer they
// trust by mistake) claim another tenant's live IP and MAC, a multicast MAC,
// or an address outside the pool. The rebuild restores the older pod's
// addresses; what udnkit could not have written is ignored with an Event
// that names no other tenant's pod, and nothing is handed out twice.
var _ = Describe("a restart after forged pod-networks annotations", func() {
	It("keeps the older pod's addresses and ignores the forged ones, with Events", func() {
		const cudn, victimNS, thiefNS = "rebuild-shared", "rebuild-victim", "rebuild-thief"
		sel := map[string]string{"network": cudn}
		for _, ns := range []string{victimNS, thiefNS} {
			namespace(ns, map[string]string{ovnk.LabelPrimaryUserDefinedNetwork: "", "network": cudn})
		}
		Expect(k8s.Create(ctx, &udnv1.ClusterUserDefinedNetwork{
			ObjectMeta: metav1.ObjectMeta{Name: cudn},
			Spec: udnv1.ClusterUserDefinedNetworkSpec{
				NamespaceSelector: metav1.LabelSelector{MatchLabels: sel},
				Network:           udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2, Layer2: primaryLayer2("10.52.0.0/24")},
			},
		})).To(Succeed())
		victim := createPod(victimNS, "victim")
		held := podNetwork(victimNS, "victim", victimNS+"/"+cudn)
		// creationTimestamp has one-second resolution: make the forgers younger.
		Eventually(func() bool { return time.Now().Truncate(time.Second).After(victim.CreationTimestamp.Time) }).Should(BeTrue())

		stopManager()
		forge := func(name string, ip, mac string) {
			pn := held
			pn.IPAddresses, pn.IPAddress, pn.MACAddress = []string{ip}, ip, mac
			v, err := podannotation.WithPodNetwork(nil, thiefNS+"/"+cudn, pn)
			Expect(err).NotTo(HaveOccurred())
			createPod(thiefNS, name, annotated(ovnk.AnnotationPodNetworks, v))
		}
		forge("thief", held.IPAddresses[0], held.MACAddress)
		forge("multicast", "10.52.0.200/24", "01:00:5e:00:00:c8")
		forge("outside", "10.99.0.7/24", "0a:58:0a:63:00:07")
		startManager(featureOn())

		Expect(warning(thiefNS, "thief", ipalloc.ReasonIPAddressConflict)).To(And(
			ContainSubstring("is already in use by a workload in another namespace"), Not(ContainSubstring(victimNS))))
		Expect(warning(thiefNS, "multicast", ipalloc.ReasonInvalidRequest)).To(ContainSubstring("must be a unicast MAC address"))
		Expect(warning(thiefNS, "outside", ipalloc.ReasonInvalidRequest)).To(ContainSubstring("is not inside any of the network's subnets"))

		// New pods never get the victim's addresses, nor one another's.
		seen := map[string]string{}
		dups := 0
		own := func(name string, pn podannotation.PodNetwork) {
			for _, a := range append(pn.IPAddresses, pn.MACAddress) {
				if prev, ok := seen[a]; ok {
					dups++
					GinkgoWriter.Printf("%s of %s is also %s's\n", a, name, prev)
				}
				seen[a] = name
			}
		}
		own("victim", held)
		for _, n := range seq("after-", 6) {
			createPod(victimNS, n)
			own(n, podNetwork(victimNS, n, victimNS+"/"+cudn))
		}
		Expect(podNetwork(victimNS, "victim", victimNS+"/"+cudn)).To(Equal(held), "the victim's annotation never changes")
		Expect(dups).To(BeZero(), "addresses handed out twice after the restart")
	})
})
