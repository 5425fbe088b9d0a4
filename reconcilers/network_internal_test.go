package reconcilers

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/udnkit/udnkit/ovnk"
)

func TestMessagesStayBounded(t *testing.T) {
	g := NewWithT(t)
	var ns []string
	for i := range 5000 {
		ns = append(ns, fmt.Sprintf("namespace-with-a-long-name-%04d", i))
	}
	msg := listed(ns, ", ", maxListedInMessage)
	g.Expect(msg).To(HavePrefix("namespace-with-a-long-name-0000, "))
	g.Expect(msg).To(HaveSuffix(", and 4950 more"))
	g.Expect(strings.Count(msg, "namespace-with")).To(Equal(maxListedInMessage))
	g.Expect(listed(ns[:3], "; ", 10)).To(Equal("namespace-with-a-long-name-0000; namespace-with-a-long-name-0001; namespace-with-a-long-name-0002"))

	var pods []string
	for i := range 7 {
		pods = append(pods, fmt.Sprintf("ns/pod-%d", i))
	}
	g.Expect(inUseMessage("ns/net", pods)).To(Equal("NetworkAttachmentDefinition ns/net is in use by pods [ns/pod-0, ns/pod-1, ns/pod-2, ns/pod-3, ns/pod-4] and 2 more"))
}

func TestPodNetworkKeys(t *testing.T) {
	g := NewWithT(t)
	ann := map[string]string{ovnk.AnnotationPodNetworks: `{"default":{"role":"infrastructure-locked"},"blue/blue":{"role":"primary"}}`}
	g.Expect(podNetworkKeys(ann)).To(ConsistOf("default", "blue/blue"))
	g.Expect(podUsesNAD(ann, "blue/blue")).To(BeTrue())
	g.Expect(podUsesNAD(ann, "blue/blu")).To(BeFalse())
	g.Expect(podNetworkKeys(map[string]string{ovnk.AnnotationPodNetworks: "not json"})).To(BeEmpty())
	g.Expect(podNetworkKeys(nil)).To(BeEmpty())
}
