package networkpolicy

import (
	"context"
	"slices"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udnkit/udnkit/dataplane/controllers/internal/ctrltest"
	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/ovnk"
)

func nad(config string) *nadv1.NetworkAttachmentDefinition {
	return &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "n"},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: config}}
}

// Which NADs carry policies: Primary Layer2 and Layer3 networks always,
// Secondary ones only with MultiNetworkPolicy; the families are the
// subnets'.
func TestNetworkOf(t *testing.T) {
	const (
		primaryL3 = `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns_green","topology":"layer3","role":"primary","subnets":"10.200.0.0/16/24"}`
		secondL2  = `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns_back","topology":"layer2","role":"secondary","subnets":"fd00:50::/64"}`
		noIPAM    = `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns_phys","topology":"localnet","role":"secondary"}`
		primaryNo = `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns_bad","topology":"layer2","role":"primary"}`
	)
	off, on := &Reconciler{}, &Reconciler{MultiNetworkPolicy: true}
	if n, primary, ok, err := off.networkOf(nad(primaryL3)); err != nil || !ok || !primary || n.Name != "ns_green" || !n.IPv4 || n.IPv6 {
		t.Errorf("Primary Layer3: %+v primary=%v ok=%v err=%v", n, primary, ok, err)
	}
	if _, _, ok, _ := off.networkOf(nad(secondL2)); ok {
		t.Errorf("a Secondary network carries policies without --enable-multi-networkpolicy")
	}
	if n, primary, ok, err := on.networkOf(nad(secondL2)); err != nil || !ok || primary || n.IPv4 || !n.IPv6 {
		t.Errorf("Secondary Layer2 with MultiNetworkPolicy: %+v primary=%v ok=%v err=%v", n, primary, ok, err)
	}
	if n, _, ok, err := on.networkOf(nad(noIPAM)); err != nil || !ok || n.IPv4 || n.IPv6 {
		t.Errorf("a Localnet network without IPAM: %+v ok=%v err=%v", n, ok, err)
	}
	if _, _, ok, err := on.networkOf(nad(primaryNo)); ok || err == nil {
		t.Errorf("a Primary network without subnets: ok=%v err=%v", ok, err)
	}
	if _, _, ok, err := on.networkOf(nad("{")); ok || err == nil {
		t.Errorf("a malformed config: ok=%v err=%v", ok, err)
	}
}

// A pod's addresses and port: a finished pod and one without an entry
// have none; a pod of another zone's node has addresses and no port.
func TestPodOf(t *testing.T) {
	entry := `{"ns/n":{"ip_addresses":["10.50.0.4/16","fd00:50::4/64"],"mac_address":"0a:58:0a:32:00:04","role":"secondary"}}`
	pod := func(node string, phase corev1.PodPhase, ann string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: map[string]string{"app": "db"}},
			Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
		if ann != "" {
			p.Annotations = map[string]string{ovnk.AnnotationPodNetworks: ann}
		}
		return p
	}
	local := map[string]bool{"node-a": true}
	ctx := context.Background()
	p, ok := podOf(ctx, pod("node-a", corev1.PodRunning, entry), "ns/n", local)
	if !ok || p.Port != ovnk.PodPortName("ns/n", "ns", "p") || len(p.IPs) != 2 || p.IPs[0].String() != "10.50.0.4" || p.Labels["app"] != "db" {
		t.Errorf("a local pod: %+v ok=%v", p, ok)
	}
	if p, ok := podOf(ctx, pod("node-b", corev1.PodRunning, entry), "ns/n", local); !ok || p.Port != "" || len(p.IPs) != 2 {
		t.Errorf("another zone's pod: %+v ok=%v", p, ok)
	}
	for name, q := range map[string]*corev1.Pod{
		"finished":     pod("node-a", corev1.PodSucceeded, entry),
		"no entry":     pod("node-a", corev1.PodRunning, ""),
		"other NAD":    pod("node-a", corev1.PodRunning, `{"ns/other":{"ip_addresses":["10.1.0.4/16"],"mac_address":"0a:58:0a:01:00:04"}}`),
		"bad entry":    pod("node-a", corev1.PodRunning, `{"ns/n":{"ip_addresses":["nope"]}}`),
		"bad document": pod("node-a", corev1.PodRunning, `nope`),
	} {
		if p, ok := podOf(ctx, q, "ns/n", local); ok {
			t.Errorf("%s: %+v", name, p)
		}
	}
	if keys := sortedKeys(map[string]bool{"b": true, "a": true}); !slices.Equal(keys, []string{"a", "b"}) {
		t.Errorf("sortedKeys %v", keys)
	}
}

// The policy sweep reads a network's NADs through zone.AnyNetworkField:
// networkName must name each NAD as the index keys it, with and without
// MultiNetworkPolicy.
func TestNetworkNameAgreesWithTheIndex(t *testing.T) {
	ctrltest.AgreesWithIndex(t, "networkName", (&Reconciler{}).networkName, zone.AnyNetwork)
	ctrltest.AgreesWithIndex(t, "networkName with MultiNetworkPolicy", (&Reconciler{MultiNetworkPolicy: true}).networkName, zone.AnyNetwork)
}
