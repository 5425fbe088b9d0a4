package reconcilers

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
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

// A pod that names one NAD twice has entries "ns/net" and "ns/net/1"; once
// only the indexed one is left it still uses the NAD, and only that NAD.
func TestPodUsesNADThroughAnIndexedEntry(t *testing.T) {
	g := NewWithT(t)
	ann := map[string]string{ovnk.AnnotationPodNetworks: `{"default":{"role":"primary"},"blue/red/1":{"role":"secondary"}}`}
	g.Expect(podUsesNAD(ann, "blue/red")).To(BeTrue())
	g.Expect(podUsesNAD(ann, "blue/re")).To(BeFalse())
	g.Expect(podUsesNAD(ann, "blue/red/1")).To(BeFalse(), "a NAD key never carries an index")
	both := map[string]string{ovnk.AnnotationPodNetworks: `{"blue/red":{"role":"secondary"},"blue/red/1":{"role":"secondary"}}`}
	g.Expect(podUsesNAD(both, "blue/red")).To(BeTrue())
}

// networksOfPod wakes the network whose NAD a pod's indexed entry names
// (once, however many entries name it), so the network's deletion, waiting
// for that pod, resumes when the pod goes.
func TestNetworksOfPodReadsIndexedEntries(t *testing.T) {
	g := NewWithT(t)
	udn := &udnv1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "blue", Name: "red", UID: "uid-red"}}
	nad := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: "blue", Name: "red",
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(udn, udnv1.GroupVersion.WithKind(kindUDN))}}}
	c := fakeNetworkClient(t, nil, udn, nad)
	r := &networkReconciler{client: c, reader: c}
	want := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "blue", Name: "red"}}
	for _, pn := range []string{
		`{"default":{"role":"primary"},"blue/red/1":{"role":"secondary"}}`,
		`{"blue/red":{"role":"secondary"},"blue/red/1":{"role":"secondary"},"blue/red/2":{"role":"secondary"}}`,
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "blue", Name: "p",
			Annotations: map[string]string{ovnk.AnnotationPodNetworks: pn}}}
		g.Expect(r.networksOfPod(context.Background(), pod, kindUDN)).To(Equal([]ctrl.Request{want}), pn)
		g.Expect(r.networksOfPod(context.Background(), pod, kindCUDN)).To(BeEmpty(), pn)
	}
}
