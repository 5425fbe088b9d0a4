package addresses_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

var _ = Describe("a restart", func() {
	It("rebuilds the pool from pod annotations and IPAMClaims before allocating: no duplicates", func() {
		const ns = "restart"
		key := ns + "/tenant"
		createUDN(ns, "tenant", primaryLayer2("10.50.0.0/24", "fd00:50::/64"))
		createClaim(ns, "keep", ns+"_tenant")
		createPod(ns, "claimant", requesting(nil, "", "keep"))
		kept := podNetwork(ns, "claimant", key)
		claimWith(ns, "keep", metav1.ConditionTrue, ovnk.ReasonSuccessfulAllocation)
		before := seq("before-", 8)
		for _, n := range before {
			createPod(ns, n)
		}
		seen := map[string]string{}
		owned := func(name string, pn podannotation.PodNetwork) {
			for _, ip := range append(pn.IPAddresses, pn.MACAddress) {
				Expect(seen).NotTo(HaveKey(ip), "%s of %s is also held by %s", ip, name, seen[ip])
				seen[ip] = name
			}
		}
		for _, n := range before {
			owned(n, podNetwork(ns, n, key))
		}
		// The claim keeps its addresses with no pod holding them.
		deletePod(ns, "claimant")
		owned("claim keep", kept)

		stopManager()
		startManager(featureOn())

		after := seq("after-", 8)
		for _, n := range after {
			createPod(ns, n)
		}
		for _, n := range after {
			owned(n, podNetwork(ns, n, key))
		}
		createPod(ns, "claimant-2", requesting(nil, "", "keep"))
		again := podNetwork(ns, "claimant-2", key)
		Expect(again.IPAddresses).To(Equal(kept.IPAddresses), "the claim's addresses survive the restart")
		Expect(again.MACAddress).To(Equal(kept.MACAddress))
	})
})

var _ = Describe("with preconfigured-udn-addresses-enable off", func() {
	It("ignores the NetworkSelectionElement and allocates dynamically", func() {
		stopManager()
		startManager(ovnk.DefaultClusterConfig())
		DeferCleanup(func() {
			stopManager()
			startManager(featureOn())
		})
		const ns = "feature-off"
		createUDN(ns, "tenant", primaryLayer2("10.51.0.0/24"))
		createPod(ns, "p", requesting([]string{"10.51.0.77"}, "02:00:00:00:51:77", ""))
		pn := podNetwork(ns, "p", ns+"/tenant")
		Expect(pn.IPAddresses).To(Equal([]string{"10.51.0.3/24"}))
		Expect(pn.MACAddress).To(Equal(fmt.Sprintf("0a:58:0a:33:00:%02x", 3)))
	})
})
